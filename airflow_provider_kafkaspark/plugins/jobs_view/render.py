"""The view's HTML, from rows (Jinja2 with autoescaping: a job name, a reason or a topic is
always text, never markup). Small pure helpers format ages, sizes and the batch chart."""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode

from airflow_provider_kafkaspark.core.overview.row import JobRow

if TYPE_CHECKING:
    import jinja2

TEMPLATES = Path(__file__).parent / "templates"
CHART_WIDTH, CHART_HEIGHT = 160, 36


@functools.cache
def _environment() -> jinja2.Environment:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters.update(age=format_age, size=format_bytes, number=format_number)
    env.globals.update(sparkline=sparkline_points, dots=chart_dots)
    return env


def jobs_page(rows: Sequence[JobRow], *, base: str, airflow_base: str) -> str:
    return (
        _environment()
        .get_template("jobs.html")
        .render(rows=rows, base=base, airflow_base=airflow_base, page_link=job_page_link)
    )


def job_page(row: JobRow, tasks: Sequence[Any], *, base: str, airflow_base: str) -> str:
    return (
        _environment()
        .get_template("job.html")
        .render(row=row, tasks=tasks, base=base, airflow_base=airflow_base, quote=quote)
    )


def message_page(title: str, message: str, *, base: str) -> str:
    return (
        _environment().get_template("message.html").render(title=title, message=message, base=base)
    )


def job_page_link(base: str, job_name: str, checkpoint: str) -> str:
    """The job page's URL (the name in the path, the checkpoint in the query: both quoted)."""
    return f"{base}/jobs/{quote(job_name, safe='')}?{urlencode({'checkpoint': checkpoint})}"


def format_age(seconds: float | None) -> str:
    if seconds is None:
        return "unknown"
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    if seconds < 172800:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} d"


def format_bytes(count: int | None) -> str:
    if count is None:
        return "unknown"
    size = float(count)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GB"


def format_number(value: float | None) -> str:
    if value is None:
        return "unknown"
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.1f}"


def chart_dots(
    values: Sequence[float | None], width: int = CHART_WIDTH, height: int = CHART_HEIGHT
) -> list[tuple[str, str]]:
    """The points of `sparkline_points` as (x, y) pairs, drawn as dots: a single batch has a
    value but no line."""
    return [(f"{x:.1f}", f"{y:.1f}") for x, y in _chart_points(values, width, height)]


def sparkline_points(
    values: Sequence[float | None], width: int = CHART_WIDTH, height: int = CHART_HEIGHT
) -> str:
    """SVG polyline points for `values`, scaled to the box (None and NaN are left out)."""
    return " ".join(f"{x:.1f},{y:.1f}" for x, y in _chart_points(values, width, height))


def _chart_points(
    values: Sequence[float | None], width: int, height: int
) -> list[tuple[float, float]]:
    known = [
        (i, float(v)) for i, v in enumerate(values) if v is not None and not math.isnan(float(v))
    ]
    if not known:
        return []
    top = max(v for _, v in known) or 1.0
    step = width / max(1, len(values) - 1)
    return [(i * step, height - 2 - (v / top) * (height - 4)) for i, v in known]
