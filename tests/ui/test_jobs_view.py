"""The "Streaming jobs" view in a real browser: Debian's Chromium, driven by Playwright,
against a real `airflow api-server` (`LocalAirflowUI`: Airflow's own login, an `admin` and a
`viewer`) and a real job on the local Kafka, submitted through Airflow by `airflow dags test`
against the api-server's metadata database.

What a person sees is checked against what the CLI says about the same job: the page's last
batch against `kafkaspark checkpoint inspect --json`, its lag against `kafkaspark reconcile
--json`, both run as a user runs them. Screenshots go to artifacts/screenshots/, and those of
the view also to docs/screenshots/ with KAFKASPARK_UPDATE_SCREENSHOTS=1.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import jwt
import pytest
from playwright.sync_api import BrowserContext, FrameLocator, Locator, Page

from airflow_provider_kafkaspark.lifecycle.stop import stop_job
from kafkaspark_devstack.airflow_ui import VIEWER, LocalAirflowUI
from kafkaspark_devstack.kafka import LocalKafkaCluster
from tests.integration.cli_util import KAFKASPARK
from tests.integration.kafka_util import create_topic, produce_numbered
from tests.ui.browser import login, screenshot, settle, sign_in, token
from tests.ui.facts import cell_number, latest_committed_batch, quiet_start, topic_lag

pytestmark = pytest.mark.ui

JOB, TOPIC = "ui_passthrough", "ui_source"
PARTITIONS = 2
# Records the first batch reads, and records produced after its commit: the lag to see.
BEFORE, WAITING = 100, 250
# Long, so that a read window rarely has to wait for a trigger to pass (Spark starts
# processing-time batches at multiples of the interval since the epoch).
TRIGGER_INTERVAL_S = 300
# How long the lag must hold still: the CLI read twice and the page and API read between
# (1.7 s measured; a slow store costs the page up to 3 s per source).
READ_WINDOW_S = 20
# The cells of a job's row (data-field) the view promises.
CONTRACT_FIELDS = {
    "state",
    "lease",
    "backend",
    "last-batch",
    "last-batch-age",
    "lag",
    "savepoints",
    "stop",
}


def test_a_viewer_signs_in_through_airflows_login_page(
    airflow_ui: LocalAirflowUI, context: BrowserContext
) -> None:
    page = context.new_page()
    issued = login(page, airflow_ui.base_url, VIEWER.username, VIEWER.password)
    settle(page)
    # The cookie is Airflow's JWT for this user and role, not an all-admins login.
    claims = jwt.decode(issued, options={"verify_signature": False})
    assert (claims["sub"], claims["role"]) == ("viewer", "VIEWER")
    assert page.url == f"{airflow_ui.base_url}/"
    page.get_by_role("heading", name="Welcome").wait_for()
    screenshot(page, "airflow-home-viewer")


def test_a_wrong_password_gets_no_token(
    airflow_ui: LocalAirflowUI, context: BrowserContext
) -> None:
    page = context.new_page()
    assert sign_in(page, airflow_ui.base_url, VIEWER.username, "not-the-password") == 401
    page.wait_for_load_state("networkidle")
    # The page says why (a locator's wait_for fails the test when it never does).
    page.get_by_text("Invalid credentials").wait_for()
    assert "/auth/login" in page.url
    assert token(context) is None
    screenshot(page, "airflow-login-refused")


def test_an_anonymous_visitor_is_sent_to_the_login_page(
    airflow_ui: LocalAirflowUI, context: BrowserContext
) -> None:
    page = context.new_page()
    page.goto(f"{airflow_ui.base_url}/")
    page.wait_for_url(re.compile(r".*/auth/login\?next=.*"))
    page.get_by_role("button", name="Sign in").wait_for()
    assert token(context) is None


def test_the_jobs_view_refuses_a_visitor_without_a_valid_token(
    airflow_ui: LocalAirflowUI, context: BrowserContext
) -> None:
    """No token: 401, for the page and its JSON alike. A token Airflow did not sign (an admin's
    claims under another key): 403."""
    base = airflow_ui.base_url
    page = context.new_page()
    for path in ("/kafkaspark/api/jobs", "/kafkaspark/jobs", f"/kafkaspark/jobs/{JOB}"):
        response = page.goto(f"{base}{path}")
        assert response is not None and response.status == 401, (path, response and response.status)
    forged = jwt.encode(
        {"sub": "admin", "role": "ADMIN", "exp": int(time.time()) + 600},
        "not-the-deployments-secret-" * 3,  # 81 bytes: HS512 wants 64 or more
        algorithm="HS512",
    )
    refused = context.request.get(
        f"{base}/kafkaspark/api/jobs", headers={"Authorization": f"Bearer {forged}"}
    )
    assert refused.status == 403, refused.status
    context.add_cookies([{"name": "_token", "value": forged, "url": base}])
    response = page.goto(f"{base}/kafkaspark/jobs")
    assert response is not None and response.status == 403, response and response.status


@dataclass(frozen=True)
class RunningJob:
    checkpoint: str
    bootstrap: str
    env: dict[str, str]


@pytest.fixture(scope="module")
def running_job(
    airflow_ui: LocalAirflowUI,
    kafka_cluster: LocalKafkaCluster,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[RunningJob]:
    """The passthrough job, submitted by `airflow dags test` through the deployment's
    `kafka_default` connection (in its metadata database, as the api-server sees it too)."""
    bootstrap = kafka_cluster.bootstrap_servers
    create_topic(bootstrap, TOPIC, PARTITIONS)
    produce_numbered(bootstrap, TOPIC, BEFORE)
    connection = {"conn_type": "kafka", "extra": {"bootstrap.servers": bootstrap}}
    airflow_ui.airflow("connections", "add", "kafka_default", "--conn-json", json.dumps(connection))
    home = tmp_path_factory.mktemp("ui-job")
    settings = {
        "KAFKASPARK_UI_HOME": str(home),
        "KAFKASPARK_UI_JOB_NAME": JOB,
        "KAFKASPARK_UI_TOPIC": TOPIC,
        "KAFKASPARK_UI_TRIGGER_INTERVAL": f"{TRIGGER_INTERVAL_S} seconds",
    }
    env = {**airflow_ui.cli_env(), **settings}
    checkpoint = f"{home}/{JOB}/checkpoint"
    try:
        airflow_ui.airflow("dags", "test", "kafkaspark_ui_job", extra_env=settings, timeout=600)
        yield RunningJob(checkpoint, bootstrap, env)
    finally:
        stop_job(
            checkpoint,
            requested_by="ui test teardown",
            reason="cleanup",
            drain_timeout_s=60,
            allow_force_kill=True,
        )


def cli_json(env: dict[str, str], *args: str, ok: tuple[int, ...] = (0,)) -> dict[str, Any]:
    done = subprocess.run(
        [KAFKASPARK, *args, "--json"], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode in ok, f"kafkaspark {args[0]} exited {done.returncode}: {done.stderr}"
    found: dict[str, Any] = json.loads(done.stdout)
    return found


def inspect_batch(job: RunningJob) -> int | None:
    return latest_committed_batch(cli_json(job.env, "checkpoint", "inspect", job.checkpoint))


def reconcile_lag(job: RunningJob) -> int:
    # Exit 3: findings (none expected below the lag thresholds), the JSON is there all the same.
    plan = cli_json(
        job.env,
        "reconcile",
        job.checkpoint,
        "--bootstrap-servers",
        job.bootstrap,
        ok=(0, 3),
    )
    return topic_lag(plan, TOPIC)


def wait_first_commit(job: RunningJob, timeout_s: float = 240) -> int:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        done = subprocess.run(
            [KAFKASPARK, "checkpoint", "inspect", job.checkpoint, "--json"],
            env=job.env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        if done.returncode == 0:
            batch = latest_committed_batch(json.loads(done.stdout))
            if batch is not None:
                return batch
        time.sleep(1.0)
    raise AssertionError(f"no committed batch in {job.checkpoint} after {timeout_s:g}s")


def job_row_fields(row: Locator) -> dict[str, str]:
    return {
        str(cell.get_attribute("data-field")): cell.inner_text()
        for cell in row.locator("[data-field]").all()
    }


def open_job_page(page: Page, view: FrameLocator, link: Locator) -> Locator:
    """Follow the job's link as its `target` says (the view is an iframe in Airflow's page);
    the job page's heading, wherever it opened."""
    heading = "h1[data-field=job-name]"
    target = link.get_attribute("target")
    if target == "_blank":
        with page.context.expect_page() as opened:
            link.click()
        return opened.value.locator(heading)
    link.click()
    if target in ("_top", "_parent"):
        page.wait_for_url(re.compile(r".*/kafkaspark/jobs/.+"))
        return page.locator(heading)
    return view.locator(heading)


def test_the_view_shows_a_running_jobs_last_batch_and_lag_as_the_cli_does(
    airflow_ui: LocalAirflowUI, running_job: RunningJob, context: BrowserContext
) -> None:
    first = wait_first_commit(running_job)
    page = context.new_page()
    login(page, airflow_ui.base_url, VIEWER.username, VIEWER.password)
    # Where a person finds the view: Browse, over the DAG list that submitted the job.
    page.goto(f"{airflow_ui.base_url}/dags")
    settle(page)
    page.get_by_role("button", name="Browse").click()
    page.get_by_role("menuitem", name="Streaming jobs").wait_for()
    screenshot(page, "streaming-jobs-in-browse-menu", docs=True)
    page.keyboard.press("Escape")

    # Records produced now wait as lag until the job's next trigger, READ_WINDOW_S or more away.
    waited_s = max(0.0, quiet_start(time.time(), TRIGGER_INTERVAL_S, READ_WINDOW_S) - time.time())
    time.sleep(waited_s)
    produced_at = time.monotonic()
    produce_numbered(running_job.bootstrap, TOPIC, WAITING, start=BEFORE)
    cli_before = (inspect_batch(running_job), reconcile_lag(running_job))

    # Through Airflow's nav, as a person goes there: Browse, then the external view's iframe.
    page.get_by_role("button", name="Browse").click()
    page.get_by_role("menuitem", name="Streaming jobs").click()
    page.wait_for_url(re.compile(r".*/plugin/streaming-jobs"))
    view = page.frame_locator("iframe")
    row = view.locator(f'#jobs tr[data-job="{JOB}"]')
    row.wait_for()
    shown = job_row_fields(row)
    shown_lag = row.locator(f'[data-field=lag] [data-topic="{TOPIC}"]').inner_text()
    api = context.request.get(f"{airflow_ui.base_url}/kafkaspark/api/jobs")
    assert api.status == 200, api.status
    listed = [j for j in api.json()["jobs"] if j["job_name"] == JOB]

    cli_after = (inspect_batch(running_job), reconcile_lag(running_job))
    window_s = time.monotonic() - produced_at
    # The job read nothing meanwhile, or the figures below compare different moments.
    assert cli_after == cli_before, (cli_before, cli_after, f"{window_s:.1f}s")
    batch, lag = cli_before
    assert batch is not None and batch >= first
    assert lag == WAITING, (lag, "records produced after the batch, none read since")

    assert CONTRACT_FIELDS <= shown.keys(), shown
    assert "running" in shown["state"].lower(), shown
    assert cell_number(shown["last-batch"]) == batch, shown
    assert cell_number(shown_lag) == lag, (shown_lag, shown)
    assert len(listed) == 1, api.json()
    assert listed[0]["checkpoint"] == running_job.checkpoint, listed[0]
    assert listed[0]["last_committed_batch"] == batch, listed[0]
    assert listed[0]["lag"] == {TOPIC: lag}, listed[0]
    screenshot(page, "streaming-jobs", docs=True)

    link = row.locator("a[data-link=job-page]")
    heading = open_job_page(page, view, link)
    heading.wait_for()
    assert heading.inner_text().strip() == JOB
    screenshot(page, "streaming-job-page", docs=True)
    print(f"waited {waited_s:.1f}s for a quiet window; read in {window_s:.1f}s of {READ_WINDOW_S}s")
