#!/usr/bin/env bash
# The UI tier's browser (`make setup-ui`), idempotently, on top of setup:
#   Debian: chromium (the browser the tests drive; fonts-dejavu-core for its text)
#   PyPI:   playwright (the driver, pinned in pyproject's dev extra), already in .venv from
#           setup; installed here too for an older .venv
# Never `playwright install`: it downloads a browser build of its own, which this machine
# cannot fetch (package registries only). The tests launch /usr/bin/chromium instead.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV="${VENV:-.venv}"
CHROMIUM="${KAFKASPARK_CHROMIUM:-/usr/bin/chromium}"

if [ ! -x "$CHROMIUM" ]; then
  command -v apt-get >/dev/null 2>&1 || {
    echo "setup-ui: install Chromium (Debian's chromium) or set KAFKASPARK_CHROMIUM" >&2
    exit 1
  }
  echo "setup-ui: apt-get install chromium"
  # An image whose package lists were never fetched finds no chromium: update first.
  DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
    chromium fonts-dejavu-core >/dev/null
fi

want="$(sed -n 's/^ *"\(playwright==[^"]*\)",.*/\1/p' pyproject.toml)"
[ -n "$want" ] || { echo "setup-ui: no playwright pin in pyproject.toml" >&2; exit 1; }
if [ "$("$VENV/bin/python" -m pip show playwright 2>/dev/null | sed -n 's/^Version: //p')" != "${want#playwright==}" ]; then
  echo "setup-ui: pip install $want"
  "$VENV/bin/python" -m pip install -q "$want"
fi

# The check the tests rely on: Playwright starts this Chromium headless, with the flags and a
# new empty profile the tests use, and it renders a page.
"$VENV/bin/python" - "$CHROMIUM" <<'PY'
import sys
from playwright.sync_api import sync_playwright

sys.path.insert(0, ".")
from tests.ui.browser import CHROMIUM_FLAGS  # noqa: E402

with sync_playwright() as driver:
    browser = driver.chromium.launch(
        executable_path=sys.argv[1], headless=True, args=list(CHROMIUM_FLAGS), timeout=60_000
    )
    page = browser.new_page()
    page.set_content("<h1>kafkaspark</h1>")
    assert page.inner_text("h1") == "kafkaspark"
    print(f"setup-ui: chromium {browser.version} starts headless under playwright")
    browser.close()
PY
