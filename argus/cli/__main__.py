"""`python -m argus.cli`: the command line, as the crontab lines `argus schedule` writes
run it."""

from . import main

main()
