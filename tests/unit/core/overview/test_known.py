"""Which jobs Airflow knows, from its task results (pure)."""

from __future__ import annotations

from typing import Any

from airflow_provider_kafkaspark.core.overview.known import TaskResult, known_jobs


def result(at: str, operator: str, value: Any, task: str = "submit") -> TaskResult:
    return TaskResult("dag", f"run-{at}", task, operator, at, value)


def handle(job: str, checkpoint: str, **extra: Any) -> dict[str, Any]:
    return {
        "job_name": job,
        "checkpoint": checkpoint,
        "job_ref": {"backend": "yarn", "application_id": "application_1_0001"},
        "connections": {"kafka_conn_id": "kafka_prod", "aws_conn_id": "aws_state"},
        **extra,
    }


def test_the_newest_submit_of_each_job_says_where_to_look() -> None:
    jobs = known_jobs(
        [
            result("2026-01-01", "SubmitStreamingJobOperator", handle("a", "s3://b/a", x=1)),
            result("2026-01-03", "RestoreStreamingJobOperator", handle("a", "s3://b/a")),
            result("2026-01-02", "SubmitStreamingJobOperator", handle("b", "s3://b/b")),
        ]
    )
    assert [(j.job_name, j.run_id) for j in jobs] == [
        ("a", "run-2026-01-03"),
        ("b", "run-2026-01-02"),
    ]
    assert jobs[0].kafka_conn_id == "kafka_prod" and jobs[0].aws_conn_id == "aws_state"
    assert jobs[0].job_ref == {"backend": "yarn", "application_id": "application_1_0001"}
    assert [t.run_id for t in jobs[0].tasks] == ["run-2026-01-03", "run-2026-01-01"]


def test_a_deploy_result_names_its_job_and_stops_name_the_savepoint_root() -> None:
    deploy = {
        "action": "noop",
        "status": "STABLE",
        "job_name": "a",
        "handle": None,
        "checkpoint": "s3://b/a",
        "connections": {"kafka_conn_id": "k"},
    }
    stop = {"job_name": "a", "savepoint_id": "sp1", "savepoint_root": "s3://b/sp"}
    jobs = known_jobs(
        [
            result("2026-01-02", "DeployStreamingJobOperator", deploy, "deploy"),
            result("2026-01-03", "StopStreamingJobOperator", stop, "stop"),
        ]
    )
    (job,) = jobs
    assert (job.checkpoint, job.kafka_conn_id, job.savepoint_root) == ("s3://b/a", "k", "s3://b/sp")
    assert [t.summary for t in job.tasks] == ["savepoint sp1", "deploy: noop (STABLE)"]


def test_results_of_other_shapes_are_skipped() -> None:
    jobs = known_jobs(
        [
            result("1", "SubmitStreamingJobOperator", "not a dict"),
            result("2", "SubmitStreamingJobOperator", {"job_name": "a"}),  # no checkpoint
            result("3", "SubmitStreamingJobOperator", {"checkpoint": "/c"}),  # no name
            result("4", "StopStreamingJobOperator", {"job_name": "b", "savepoint_id": None}),
        ]
    )
    assert jobs == []
