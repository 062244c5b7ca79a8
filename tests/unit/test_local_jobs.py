"""A locally started driver runs in its own folder: the Python path it inherits must mean the
same from there."""

from __future__ import annotations

from airflow_provider_kafkaspark.backends.local_driver import _absolute_entries


def test_relative_python_path_entries_resolve_against_the_submitter_folder() -> None:
    joined = _absolute_entries("lib:/opt/code::../shared", "/srv/dags")
    assert joined == "/srv/dags/lib:/opt/code:/srv/dags:/srv/dags/../shared"
    assert _absolute_entries(None, "/srv/dags") is None
    assert _absolute_entries("", "/srv/dags") == ""
