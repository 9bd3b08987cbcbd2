#!/usr/bin/env bash
# Installs Node.js and npm (Debian's nodejs and npm) when missing, then
# LangGraph's official JavaScript client, pinned with its dependencies in
# state-server/tests/js/package-lock.json, into
# state-server/tests/js/node_modules with `npm ci`: state-server's test
# agent_sdk_js runs it against the server. Does nothing more when that
# lock is already what node_modules holds.
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=state-server/tests/js

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  bash scripts/install/apt.sh "for state-server's JavaScript client tests" nodejs npm
fi
# The pinned @langchain/core (the client's peer) declares node >= 20.
major="$(node -p 'process.versions.node.split(".")[0]')"
if [ "$major" -lt 20 ]; then
  echo "state-server's JavaScript client tests need Node.js 20 or newer, found $(node --version):" >&2
  echo "install a newer nodejs (Debian trixie's, or NodeSource's) and run this again" >&2
  exit 1
fi

# npm ci removes node_modules and installs exactly the lock; the copy of
# the lock it installed says when that is needed again.
stamp="$dir/node_modules/.installed-package-lock.json"
if [ -f "$stamp" ] && cmp -s "$stamp" "$dir/package-lock.json"; then
  exit 0
fi
echo "installing $dir/node_modules (npm ci: @langchain/langgraph-sdk, for state-server's tests)" >&2
npm ci --prefix "$dir" --no-audit --no-fund --loglevel=error >&2
cp "$dir/package-lock.json" "$stamp"
