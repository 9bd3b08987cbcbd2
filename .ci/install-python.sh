#!/usr/bin/env bash
# Installs Python 3 with venv for the LangChain message check (which creates a
# venv of its own and pip-installs langchain-core there). Does nothing when
# `python3 -m venv` already works.
set -euo pipefail

if command -v python3 >/dev/null 2>&1 && python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "Python 3.10+ with the venv module is required and apt-get is not available:" >&2
  echo "install it with your system's package manager (e.g. dnf install -y python3)." >&2
  exit 1
fi

SUDO=()
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO=(sudo)
  else
    echo "installing Python needs root: run 'apt-get install -y python3 python3-venv' as root" >&2
    exit 1
  fi
fi

echo "installing Python 3 and venv for the LangChain message check" >&2
${SUDO[@]+"${SUDO[@]}"} apt-get update
${SUDO[@]+"${SUDO[@]}"} env DEBIAN_FRONTEND=noninteractive apt-get install -y python3 python3-venv
