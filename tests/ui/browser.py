"""The browser side of the UI tier: Debian's Chromium driven by Playwright, a login through
Airflow's own sign-in page, and screenshots.

The browser is the system's `/usr/bin/chromium` (`make setup-ui`), never one Playwright
downloads: this machine reaches package registries only. Its flags keep a headless Chromium
quiet on a closed network: without the background-networking ones it keeps trying to reach
Google's update, sync and field-trial servers.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from playwright.sync_api import Browser, BrowserContext, Page, Playwright

from tests.ui.facts import screenshot_targets

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM_ENV = "KAFKASPARK_CHROMIUM"
CHROMIUM = os.environ.get(CHROMIUM_ENV) or "/usr/bin/chromium"
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
# Airflow's cookie holding the JWT its login issues (the api-server's COOKIE_NAME_JWT_TOKEN).
TOKEN_COOKIE = "_token"
VIEWPORT = {"width": 1280, "height": 800}
# Every screenshot goes to artifacts/screenshots/; with this set to 1 also to docs/screenshots/
# (the ones the docs show), so a plain test run never changes a tracked file.
UPDATE_SCREENSHOTS_ENV = "KAFKASPARK_UPDATE_SCREENSHOTS"
ARTIFACTS = ROOT / "artifacts" / "screenshots"
DOCS = ROOT / "docs" / "screenshots"


def launch_chromium(playwright: Playwright) -> Browser:
    """The system Chromium, headless. Playwright gives each launch a new, empty user-data-dir
    of its own (a temporary folder it removes at close): no profile carries over."""
    if not Path(CHROMIUM).is_file():
        raise FileNotFoundError(f"{CHROMIUM} is missing: run `make setup-ui` (Debian's chromium)")
    return playwright.chromium.launch(
        executable_path=CHROMIUM, headless=True, args=list(CHROMIUM_FLAGS), timeout=60_000
    )


def new_context(browser: Browser) -> BrowserContext:
    """A context with no cookies: an anonymous visitor until it logs in."""
    context = browser.new_context(viewport=VIEWPORT)  # type: ignore[arg-type]
    context.set_default_timeout(30_000)
    return context


def token(context: BrowserContext) -> str | None:
    for cookie in context.cookies():
        if cookie.get("name") == TOKEN_COOKIE:
            return cookie.get("value")
    return None


def sign_in(page: Page, base_url: str, username: str, password: str) -> int:
    """Fill Airflow's sign-in form and submit it; the status of the form's POST /auth/token
    (201 signed in, 401 refused)."""
    page.goto(f"{base_url}/auth/login?next=/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    with page.expect_response(f"{base_url}/auth/token") as answer:
        page.get_by_role("button", name="Sign in").click()
    return answer.value.status


def login(page: Page, base_url: str, username: str, password: str, timeout_s: float = 30) -> str:
    """Sign in as a person does; returns the JWT Airflow set in its cookie once the UI has
    taken the browser back to the home page."""
    status = sign_in(page, base_url, username, password)
    if status != 201:
        raise AssertionError(f"Airflow refused {username!r}'s sign-in: HTTP {status}")
    page.wait_for_url(f"{base_url}/", timeout=timeout_s * 1000)
    deadline = time.monotonic() + timeout_s
    while (found := token(page.context)) is None:
        if time.monotonic() > deadline:
            raise AssertionError(f"no {TOKEN_COOKIE} cookie {timeout_s:g}s after signing in")
        time.sleep(0.2)
    return found


def settle(page: Page) -> None:
    """Wait until Airflow's React UI has drawn: its nav translated and its loading skeletons
    replaced by data (a screenshot before that shows grey bars and `nav.home` keys)."""
    page.wait_for_load_state("networkidle")
    page.get_by_test_id("nav-dags-link").wait_for()
    page.wait_for_function("document.querySelectorAll('.chakra-skeleton').length === 0")


def screenshot(page: Page, name: str, *, docs: bool = False) -> list[Path]:
    """`<name>.png` of the whole page in artifacts/; a `docs` one also in docs/ when updating
    (KAFKASPARK_UPDATE_SCREENSHOTS=1). Returns the files written."""
    update = docs and os.environ.get(UPDATE_SCREENSHOTS_ENV, "") == "1"
    first, *copies = screenshot_targets(name, ARTIFACTS, DOCS, update=update)
    first.parent.mkdir(parents=True, exist_ok=True)
    # Animations ended: a menu caught while it fades in shows through the page below it.
    page.screenshot(path=str(first), full_page=True, animations="disabled")
    for copy in copies:
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(first, copy)
    return [first, *copies]
