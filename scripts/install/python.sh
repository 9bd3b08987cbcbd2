#!/usr/bin/env bash
# Installs Python 3 with venv for the MSRV check (.ci/check-msrv.py) and the
# LangChain message check (which creates a venv of its own and pip-installs
# langchain-core there). Does nothing when `python3 -m venv` already works.
set -euo pipefail

if command -v python3 >/dev/null 2>&1 && python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
  exit 0
fi

bash "$(dirname "$0")/apt.sh" "for the MSRV and LangChain message checks" python3 python3-venv
