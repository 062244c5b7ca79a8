"""The view's HTML: text is escaped, links quoted, the chart scaled."""

from __future__ import annotations

from dataclasses import replace

from airflow_provider_kafkaspark.core.overview.facts import JobFacts, KnownJob
from airflow_provider_kafkaspark.core.overview.row import JobRow, job_row
from airflow_provider_kafkaspark.plugins.jobs_view.render import (
    chart_dots,
    format_age,
    job_page,
    job_page_link,
    jobs_page,
    sparkline_points,
)
from tests.unit.airflow_helpers import T0

HOSTILE = '<script>alert("x")</script>'


def hostile_row() -> JobRow:
    job = KnownJob(HOSTILE, "/cp?<b>", "dag", "submit", "run", "2026-01-01")
    facts = JobFacts(job=job, observed_at_ms=T0, problems=(("kafka", HOSTILE),))
    return job_row(replace(facts, latest_committed=1, committed_offsets={"t": {0: 1}}))


def test_a_job_name_with_markup_is_text_on_both_pages() -> None:
    row = hostile_row()
    for page in (
        jobs_page([row], base="/kafkaspark", airflow_base=""),
        job_page(row, (), base="/kafkaspark", airflow_base=""),
    ):
        assert "<script>" not in page
        assert "&lt;script&gt;" in page


def test_lag_that_cannot_be_computed_shows_unknown_not_zero() -> None:
    page = jobs_page([hostile_row()], base="/kafkaspark", airflow_base="")
    lag_cell = page.split('data-field="lag"')[1].split("</td>")[0]
    assert "unknown" in lag_cell and "data-topic" not in lag_cell


def test_the_job_page_link_quotes_the_name_and_the_checkpoint() -> None:
    link = job_page_link("/kafkaspark", "a/b c", "s3://b/cp?x=1")
    assert link == "/kafkaspark/jobs/a%2Fb%20c?checkpoint=s3%3A%2F%2Fb%2Fcp%3Fx%3D1"


def test_sparkline_scales_to_the_box_and_skips_unknown_points() -> None:
    assert sparkline_points([], 100, 10) == ""
    assert sparkline_points([0, None, 10], 100, 10) == "0.0,8.0 100.0,2.0"


def test_a_single_batch_is_drawn_as_a_dot() -> None:
    assert chart_dots([120], 100, 10) == [("0.0", "2.0")]


def test_ages_read_as_people_say_them() -> None:
    assert [format_age(s) for s in (None, 5, 600, 10_800)] == ["unknown", "5 s", "10 min", "3.0 h"]
