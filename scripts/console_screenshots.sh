#!/usr/bin/env bash
# Takes the console's pictures docs/serve.md shows (docs/img/console-*.png): the browser tests of
# the console run with LLLM_CONSOLE_SCREENSHOTS set, against a recording stub server, in headless
# Chromium (scripts/servers/browser.sh installs it).
set -euo pipefail
cd "$(dirname "$0")/.."
eval "$(scripts/servers/browser.sh install)"
export LLLM_CHROMIUM LLLM_CHROMEDRIVER LLLM_REQUIRE_BROWSER=1
LLLM_CONSOLE_SCREENSHOTS="$PWD/docs/img" cargo test -p lllm-cli --test it -- console::
ls -l docs/img/console-*.png
