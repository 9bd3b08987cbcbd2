#!/usr/bin/env bash
# Every test of the workspace, on a fresh machine: installs what the tests
# need when it is missing, says what and why, then runs them all.
#
#   PostgreSQL  state-store's and state-graph's tests start servers of their own
#   Chromium    state-server's inspector is tested in a real headless browser
#   Python 3    a venv (target/venv-sdk) with the pinned langgraph-sdk, the
#               official client that state-server's Agent Server tests
#               and the agent_server example's drive, and langgraph for
#               its RemoteGraph; a venv (target/venv) with the pinned
#               langchain-core, which checks our LangChain message JSON
#               both ways; one each
#               (target/venv-openai, target/venv-anthropic) with the pinned
#               langchain-openai and langchain-anthropic, which check the
#               adapters' vectors are what they write
#   Node.js     node and npm, and state-server/tests/js/node_modules (npm ci
#               of the pinned @langchain/langgraph-sdk, LangGraph's official
#               JavaScript client, which state-server's tests also drive)
#
# Installing needs apt-get and root (or sudo); where that is missing, the
# install step fails saying what to install by hand. Arguments are passed
# to `cargo test` (a package, a test name filter).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install/postgres.sh
bash scripts/install/python.sh
bash scripts/install/chromium.sh
# LangGraph's Python client, before the tests: state-server's Agent Server
# tests run it against the server (tests/it/agent_sdk.rs finds it here), and
# so do the agent_server example's (examples/tests/it/agent_server.rs).
VENV=target/venv-sdk bash scripts/install/venv.sh state-server/tests/sdk/requirements.txt >/dev/null
# LangGraph's JavaScript client, likewise (tests/it/agent_sdk_js.rs).
bash scripts/install/node.sh

if [ "$#" -gt 0 ]; then
  exec cargo test "$@"
fi

cargo test --workspace
# The workspace unifies features (the tests turn state-core's defaults on):
# state-core alone, without them, builds and passes its own tests.
cargo test -p state-core --no-default-features --lib --quiet

# Both directions against real langchain-core: the checked-in fixtures are
# what it writes (the Rust tests read them), and it loads what state-core
# writes back as the original messages.
python="$(bash scripts/install/venv.sh tests/fixtures/langchain/requirements.txt)"
cargo run --quiet -p state-tests --example write_langchain_messages -- \
  tests/fixtures/langchain/messages.json target/langchain/written.json
"$python" tests/fixtures/langchain/generate.py check --written target/langchain/written.json

# The message utilities' vectors (state-agent) are what langchain-core
# computes.
"$python" tests/fixtures/langchain/message_utils/generate.py check

# The OpenAI adapter's vectors (state-agent's tests compare against them)
# are what real langchain-openai writes from the same provider JSON. A venv
# of its own: langchain-openai 1.7.4 needs langchain-core >= 1.7.5, and the
# message check above pins 1.7.2.
python_openai="$(VENV=target/venv-openai bash scripts/install/venv.sh \
  state-agent/tests/fixtures/langchain_openai/requirements.txt)"
"$python_openai" state-agent/tests/fixtures/langchain_openai/generate.py check
# The Anthropic adapter's vectors (state-agent's tests compare against them)
# are what real langchain-anthropic writes from the same provider JSON. A
# venv of its own: langchain-anthropic 1.7.10 needs a newer langchain-core
# than the message check above pins.
python_anthropic="$(VENV=target/venv-anthropic bash scripts/install/venv.sh \
  state-agent/tests/fixtures/langchain_anthropic/requirements.txt)"
"$python_anthropic" state-agent/tests/fixtures/langchain_anthropic/generate.py check
echo "every test passed" >&2
