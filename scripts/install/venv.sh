#!/usr/bin/env bash
# Creates (or brings up to date) the Python venv the tests use, at
# target/venv (or $VENV), with the pinned packages of every requirements
# file given: langchain-core for the LangChain message check, and what later
# checks list. A check whose pins conflict with another's gets a venv of its
# own (VENV=target/venv-openai for langchain-openai's vectors).
# `venv.sh req.txt...`; prints the venv's python.
set -euo pipefail
cd "$(dirname "$0")/../.."
venv="${VENV:-target/venv}"
if [ ! -x "$venv/bin/python" ]; then
  echo "creating the tests' Python venv at $venv" >&2
  python3 -m venv "$venv"
fi
for requirements in "$@"; do
  # pip is quiet when everything is already installed at the pinned version.
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$requirements" >&2
done
echo "$venv/bin/python"
