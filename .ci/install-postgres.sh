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

if ! command -v apt-get >/dev/null 2>&1; then
  echo "PostgreSQL (initdb, pg_ctl, psql) is required and apt-get is not available:" >&2
  echo "install it with your system's package manager (e.g. dnf install -y postgresql-server)." >&2
  exit 1
fi

SUDO=()
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO=(sudo)
  else
    echo "installing PostgreSQL needs root: run 'apt-get install -y postgresql' as root" >&2
    exit 1
  fi
fi

echo "installing PostgreSQL for the state-store tests" >&2
${SUDO[@]+"${SUDO[@]}"} apt-get update
# Debian's package also creates and starts a 'main' cluster; the tests do not use it.
${SUDO[@]+"${SUDO[@]}"} env DEBIAN_FRONTEND=noninteractive apt-get install -y postgresql
