#!/usr/bin/env bash
# Makes (or brings up to date) the venv with LangGraph's Agent Server
# (`langgraph dev`) that the agent_server bench runs beside ours, at
# target/venv-langgraph-server (PyPI only; nothing committed). Prints the
# venv's `langgraph` command.
set -euo pipefail
cd "$(dirname "$0")/../../.."
VENV="${VENV:-target/venv-langgraph-server}" \
  bash scripts/install/venv.sh state-server/benches/agent_server/requirements.txt >/dev/null
echo "${VENV:-target/venv-langgraph-server}/bin/langgraph"
