#!/usr/bin/env bash
# Installs headless Chromium (Debian's `chromium`) for state-server's browser
# tests, when missing, and checks that it renders a page headless: a machine
# where the browser cannot start fails here, by name, not in a test.
set -euo pipefail

find_chromium() {
  command -v chromium 2>/dev/null || command -v chromium-browser 2>/dev/null || true
}

if [ -z "$(find_chromium)" ]; then
  bash "$(dirname "$0")/apt.sh" "for state-server's browser tests" chromium
fi
browser="$(find_chromium)"
if [ -z "$browser" ]; then
  echo "chromium was installed but is not on PATH" >&2
  exit 1
fi
page='data:text/html,<title>ok</title><p id=probe>rendered</p>'
dom="$(timeout 120 "$browser" --headless --no-sandbox --disable-gpu --dump-dom "$page" 2>/dev/null || true)"
if ! printf '%s' "$dom" | grep -q 'id="probe">rendered<'; then
  echo "headless $browser did not render a test page" >&2
  exit 1
fi
echo "headless browser: $("$browser" --version 2>/dev/null || echo "$browser")" >&2
