#!/usr/bin/env bash
# Start (or stop) a throwaway PostgreSQL cluster for hiersql's engine tests and benchmarks.
#   scripts/start_postgres.sh DIR         initdb in DIR/data if needed, start it on the Unix socket DIR/.s.PGSQL.5432
#                                         (no TCP), print the libpq DSN to use (export HIERSQL_PG_DSN=...)
#   scripts/start_postgres.sh --stop DIR  stop it
# As root the server runs as the "postgres" user (PostgreSQL refuses root). Needs Debian's postgresql package.
# The pytest fixture of tests/test_engines_postgres.py does the same by itself; this script is for running a
# server once for several test runs or for benchmarks/bench_engines.py.
set -euo pipefail

stop=0
if [[ "${1:-}" == "--stop" ]]; then stop=1; shift; fi
dir=${1:?usage: start_postgres.sh [--stop] DIR}
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
if [[ -z "$bin" ]]; then
    bin=$(dirname "$(command -v pg_ctl || true)")
fi
if [[ ! -x "$bin/pg_ctl" ]]; then
    echo "PostgreSQL server binaries not found: apt-get install -y postgresql" >&2
    exit 1
fi
as=()
if [[ $(id -u) -eq 0 ]]; then as=(runuser -u postgres --); fi

if [[ $stop -eq 1 ]]; then
    "${as[@]}" "$bin/pg_ctl" -D "$dir/data" -m fast stop >/dev/null
    exit 0
fi
mkdir -p "$dir"
if [[ $(id -u) -eq 0 ]]; then chown postgres "$dir"; fi
if [[ ! -f "$dir/data/PG_VERSION" ]]; then
    "${as[@]}" "$bin/initdb" -D "$dir/data" -A trust -U hiersql -E UTF8 --no-sync >"$dir/initdb.log"
fi
"${as[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
    -o "-k $dir -p 5432 -c listen_addresses='' -c fsync=off -c full_page_writes=off -c jit=off" start >/dev/null
echo "host=$dir port=5432 user=hiersql dbname=postgres"
