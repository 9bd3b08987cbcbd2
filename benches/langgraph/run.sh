#!/usr/bin/env bash
# Makes benches/langgraph/.venv (once), installs LangGraph into it, and runs
# bench.py with the given arguments, e.g.:
#   benches/langgraph/run.sh --run-cargo      # cargo bench, then LangGraph, side by side
#   benches/langgraph/run.sh --criterion "$CARGO_TARGET_DIR/criterion"
# With --savers first, runs saver_bench.py instead (LangGraph's SqliteSaver
# and PostgresSaver, BENCHMARKS.md section 7) against a throwaway PostgreSQL
# server it starts on a free 127.0.0.1 port and stops at the end:
#   benches/langgraph/run.sh --savers                     # sizes 100, 1000, 10000
#   benches/langgraph/run.sh --savers --sizes 10000 --steps 5
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if [ ! -x "$here/.venv/bin/python" ] ||
   ! "$here/.venv/bin/python" -c 'import langgraph.checkpoint.sqlite, langgraph.checkpoint.postgres, psycopg' 2>/dev/null; then
  [ -x "$here/.venv/bin/python" ] || python3 -m venv "$here/.venv"
  "$here/.venv/bin/pip" install --quiet --upgrade pip
  "$here/.venv/bin/pip" install --quiet -r "$here/requirements.txt"
fi
if [ "${1:-}" != "--savers" ]; then
  exec "$here/.venv/bin/python" "$here/bench.py" "$@"
fi
shift

# --- A throwaway PostgreSQL cluster, as state-store/tests/it/support/postgres.rs
# starts one: initdb into a temporary directory, trust authentication for
# the superuser `postgres`, listening on 127.0.0.1 only, fsync on. Run as
# the `postgres` system user when we are root (PostgreSQL refuses root).
find_pg_bin() {
  if [ -n "${STATE_STORE_PG_BIN:-}" ]; then echo "$STATE_STORE_PG_BIN"; return; fi
  local initdb
  if initdb="$(command -v initdb 2>/dev/null)"; then
    dirname "$(readlink -f "$initdb")"; return
  fi
  local dir
  for dir in $(ls -d /usr/lib/postgresql/*/bin /usr/pgsql-*/bin 2>/dev/null | sort -V -r) /usr/local/pgsql/bin; do
    if [ -x "$dir/initdb" ] && [ -x "$dir/pg_ctl" ]; then echo "$dir"; return; fi
  done
  echo "PostgreSQL not found: apt-get install -y postgresql (or set STATE_STORE_PG_BIN)" >&2
  exit 1
}
pg_bin="$(find_pg_bin)"
pg_root="$(mktemp -d /tmp/saver-bench-pg-XXXXXX)"
as_pg=()
if [ "$(id -u)" = 0 ]; then
  chown postgres: "$pg_root"
  as_pg=(runuser -u postgres --)
fi
cleanup() {
  if [ -f "$pg_root/data/postmaster.pid" ]; then
    "${as_pg[@]}" "$pg_bin/pg_ctl" -D "$pg_root/data" -m immediate -w stop >/dev/null 2>&1 || true
  fi
  rm -rf "$pg_root"
}
trap cleanup EXIT
"${as_pg[@]}" mkdir -m 700 "$pg_root/sock"
"${as_pg[@]}" "$pg_bin/initdb" -D "$pg_root/data" -U postgres -A trust -E UTF8 --no-locale --no-sync >"$pg_root/initdb.log"
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
"${as_pg[@]}" tee -a "$pg_root/data/postgresql.conf" >/dev/null <<EOF
# Added by benches/langgraph/run.sh: the settings of the Rust bench's server.
port = $port
listen_addresses = '127.0.0.1'
unix_socket_directories = '$pg_root/sock'
max_connections = 200
shared_buffers = 32MB
fsync = on
EOF
"${as_pg[@]}" "$pg_bin/pg_ctl" -D "$pg_root/data" -l "$pg_root/server.log" -w -t 60 start >/dev/null
echo "PostgreSQL $("$pg_bin/pg_ctl" --version | sed "s/^pg_ctl (PostgreSQL) //") on 127.0.0.1:$port"
# No exec: the trap stops the server when Python is done.
"$here/.venv/bin/python" "$here/saver_bench.py" --pg-url "postgres://postgres@127.0.0.1:$port/postgres" "$@"
