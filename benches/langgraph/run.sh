#!/usr/bin/env bash
# Makes benches/langgraph/.venv (once), installs LangGraph into it, and runs
# bench.py with the given arguments, e.g.:
#   benches/langgraph/run.sh --run-cargo      # cargo bench, then LangGraph, side by side
#   benches/langgraph/run.sh --criterion "$CARGO_TARGET_DIR/criterion"
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if [ ! -x "$here/.venv/bin/python" ]; then
  python3 -m venv "$here/.venv"
  "$here/.venv/bin/pip" install --quiet --upgrade pip
  "$here/.venv/bin/pip" install --quiet -r "$here/requirements.txt"
fi
exec "$here/.venv/bin/python" "$here/bench.py" "$@"
