#!/usr/bin/env bash
# Installs PostgreSQL for the state-store tests, which start a throwaway server
# of their own (initdb + pg_ctl in a temporary directory). Does nothing when
# initdb is already on PATH or under /usr/lib/postgresql/*/bin.
set -euo pipefail

if command -v initdb >/dev/null 2>&1; then
  exit 0
fi
for initdb in /usr/lib/postgresql/*/bin/initdb; do
  if [ -x "$initdb" ]; then
    exit 0
  fi
done

# Debian's package also creates and starts a 'main' cluster; the tests do not use it.
bash "$(dirname "$0")/apt.sh" "for the state-store tests" postgresql
