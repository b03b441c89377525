#!/bin/sh
# Wait for PostgreSQL, install the catalog, then run cron with one cycle a minute
# (or whatever command was given).
set -eu
: "${ARGUS_DSN:?set ARGUS_DSN to the PostgreSQL connection string}"
until argus init >/dev/null 2>&1; do echo "waiting for PostgreSQL..."; sleep 2; done
if [ "${1:-cron}" = "cron" ]; then
    printf 'ARGUS_DSN=%s\n%s argus run >> /proc/1/fd/1 2>&1\n' "$ARGUS_DSN" \
        "${ARGUS_SCHEDULE:-* * * * *}" | crontab -
    exec cron -f
fi
exec "$@"
