#!/usr/bin/env bash
# Installs Debian packages the tests need: `apt.sh "<what they are for>" pkg...`.
# Uses sudo when not root; says what to install by hand when it cannot.
set -euo pipefail

purpose="$1"
shift

if ! command -v apt-get >/dev/null 2>&1; then
  echo "$* ($purpose) are required and apt-get is not available:" >&2
  echo "install them with your system's package manager." >&2
  exit 1
fi

SUDO=()
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO=(sudo)
  else
    echo "installing $* ($purpose) needs root: run 'apt-get install -y $*' as root" >&2
    exit 1
  fi
fi

echo "installing $* ($purpose)" >&2
${SUDO[@]+"${SUDO[@]}"} apt-get update
${SUDO[@]+"${SUDO[@]}"} env DEBIAN_FRONTEND=noninteractive apt-get install -y "$@"
