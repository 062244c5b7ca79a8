"""The UI tier's real parts: one Airflow api-server with Airflow's own login for the session
(`LocalAirflowUI`: SQLite, an `admin` and a `viewer`), and one headless system Chromium.

Every Airflow process of the tier (the api-server, `airflow dags test`, the drivers its
submit starts) imports this checkout's code: PYTHONPATH names it first, ahead of whatever
copy the environment has installed.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, BrowserContext, Playwright, sync_playwright

from kafkaspark_devstack.airflow_ui import LocalAirflowUI
from tests.ui.browser import launch_chromium, new_context

ROOT = Path(__file__).resolve().parents[2]
DAGS = Path(__file__).resolve().parent / "dags"


def checkout_pythonpath() -> str:
    own = [str(ROOT), str(ROOT / "devstack")]
    given = os.environ.get("PYTHONPATH", "")
    return os.pathsep.join([*own, *([given] if given else [])])


@pytest.fixture(scope="session")
def airflow_ui(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalAirflowUI]:
    ui = LocalAirflowUI(
        tmp_path_factory.mktemp("airflow-ui"),
        dags_folder=DAGS,
        env={"PYTHONPATH": checkout_pythonpath()},
    )
    ui.start()
    try:
        yield ui
    finally:
        ui.stop()


@pytest.fixture(scope="session")
def playwright() -> Iterator[Playwright]:
    with sync_playwright() as driver:
        yield driver


@pytest.fixture(scope="session")
def browser(playwright: Playwright) -> Iterator[Browser]:
    chromium = launch_chromium(playwright)
    try:
        yield chromium
    finally:
        chromium.close()


@pytest.fixture
def context(browser: Browser) -> Iterator[BrowserContext]:
    """A fresh browser context per test: no cookie of another test's login."""
    fresh = new_context(browser)
    try:
        yield fresh
    finally:
        fresh.close()
