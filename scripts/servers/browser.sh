#!/usr/bin/env bash
# Headless Chromium and ChromeDriver for the console's browser tests (lllm-cli/tests/it/console.rs).
# They come from the system's packages, not from PyPI or npm: on Debian or Ubuntu,
#   apt-get install chromium chromium-driver
# which this script runs itself when it is root and they are missing (as CI runs it). Otherwise it
# says what to install and fails.
#   scripts/servers/browser.sh install   # prints LLLM_CHROMIUM=<path> LLLM_CHROMEDRIVER=<path>, for eval
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=common.sh source-path=SCRIPTDIR
. "$HERE/common.sh"

find_browser() {
  chromium=$(command -v chromium || command -v chromium-browser || true)
  driver=$(command -v chromedriver || true)
  [ -n "$chromium" ] && [ -n "$driver" ]
}

install() {
  find_browser && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    say "installing chromium and chromium-driver with apt-get"
    mkdir -p "$LLLM_CACHE_DIR"
    local log=$LLLM_CACHE_DIR/browser-install.log
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium chromium-driver; } >"$log" 2>&1 || {
      say "apt-get install chromium chromium-driver failed; see $log"; tail -20 "$log" >&2; exit 1
    }
    find_browser && return 0
  fi
  say "the console's browser tests need Chromium and ChromeDriver: install the packages chromium and chromium-driver (Debian, Ubuntu: sudo apt-get install chromium chromium-driver), or set LLLM_CHROMIUM and LLLM_CHROMEDRIVER"
  exit 1
}

case "${1:-install}" in
  install) install >&2; echo "LLLM_CHROMIUM=$chromium LLLM_CHROMEDRIVER=$driver" ;;
  *) echo "usage: $0 install" >&2; exit 2 ;;
esac
