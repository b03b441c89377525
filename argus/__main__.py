"""`python -m argus`: the command line, as the `argus` script runs it."""

from .cli import main

main()
