"""Bad input found by the reliability suite (`bad_input`, `secrets`): each is a typed error
naming the field, parameter or connection, and no message repeats a secret."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, cast

import pytest
from airflow.sdk import Context
from airflow.sdk.exceptions import AirflowFailException

from airflow_provider_kafkaspark.backends.local_driver import driver_environment
from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec, JobSpecError
from airflow_provider_kafkaspark.errors import InvalidArgumentError
from airflow_provider_kafkaspark.examples.ip_count import job_spec_dict
from airflow_provider_kafkaspark.operators.backfill import KafkaBackfillOperator
from airflow_provider_kafkaspark.operators.reconcile import KafkaPartitionReconcileOperator
from airflow_provider_kafkaspark.operators.stop import StopStreamingJobOperator
from airflow_provider_kafkaspark.operators.submit import SubmitStreamingJobOperator
from airflow_provider_kafkaspark.sensors.bootstrap import KafkaBootstrapHealthSensor
from airflow_provider_kafkaspark.sensors.health import StreamingHealthSensor
from tests.unit.airflow_helpers import kafka_connection

SECRET = "s3ntinel-pa55word"
JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    f'username="u" password="{SECRET}";'
)


def unchecked(value: object) -> Any:
    """A value of the wrong type, as a DAG file nobody type-checks passes it."""
    return value


def spec(**changes: Any) -> dict[str, Any]:
    raw = job_spec_dict(bootstrap_servers="127.0.0.1:9092", checkpoint="/tmp/cp")
    raw.update(changes)
    return raw


def source(**changes: Any) -> dict[str, Any]:
    raw = spec()
    raw["source"].update(changes)
    return raw


# -- job spec ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        (source(options=f"kafka.sasl.jaas.config={JAAS}"), "source.options"),
        (source(options=[JAAS]), "source.options"),
        (spec(sink={"kind": "kafka", "topic": "t", "options": JAAS}), "sink.options"),
        (spec(kafka_config=f"sasl.password={SECRET}"), "kafka_config"),
        (spec(kafka_config=[SECRET]), "kafka_config"),
    ],
)
def test_a_wrong_typed_secret_field_is_named_not_shown(raw: dict[str, Any], field: str) -> None:
    with pytest.raises(JobSpecError) as err:
        JobSpec.from_dict(raw)
    assert f"'{field}'" in str(err.value)
    assert SECRET not in str(err.value)
    assert "got str" in str(err.value) or "got list" in str(err.value)


def test_subscribe_and_assign_that_are_not_lists_are_named() -> None:
    with pytest.raises(JobSpecError, match=r"'source\.subscribe'.*got int"):
        JobSpec.from_dict(source(subscribe=5))
    with pytest.raises(JobSpecError, match=r"'source\.assign\.t'.*got int"):
        JobSpec.from_dict(source(subscribe=[], assign={"t": 5}))
    with pytest.raises(JobSpecError, match=r"'source\.assign\.t'"):
        JobSpec.from_dict(source(subscribe=[], assign={"t": [True]}))


@pytest.mark.parametrize("field", ["lease_ttl_s", "drain_timeout_s"])
@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, True])
def test_number_fields_must_be_finite(field: str, value: float) -> None:
    with pytest.raises(JobSpecError, match=f"'{field}'"):
        JobSpec.from_dict(spec(**{field: value}))


def test_nan_read_from_json_text_is_refused() -> None:
    text = json.dumps(spec(lease_ttl_s=math.nan))
    assert "NaN" in text
    with pytest.raises(JobSpecError, match="'lease_ttl_s'"):
        JobSpec.from_json(text)


# -- connections ----------------------------------------------------------------------------


# -- operators and sensors ----------------------------------------------------------------


def context(**values: Any) -> Context:
    return cast("Context", values)


def test_unknown_if_running_is_typed_and_still_a_value_error() -> None:
    with pytest.raises(InvalidArgumentError, match="if_running='sometimes'") as err:
        SubmitStreamingJobOperator(task_id="s", job_spec={}, if_running="sometimes")
    assert isinstance(err.value, ValueError)


@pytest.mark.parametrize("operator", ["submit", "backfill"])
def test_a_job_spec_text_that_is_not_json_is_named(
    monkeypatch: pytest.MonkeyPatch, operator: str
) -> None:
    conn = kafka_connection(monkeypatch, "unit_submit", {"bootstrap.servers": "127.0.0.1:1"})
    text = '{"job_name": "x",'
    if operator == "submit":
        op: Any = SubmitStreamingJobOperator(
            task_id="s", job_spec=text, kafka_conn_id=conn, probe_bootstrap=False
        )
        ctx = context()
    else:
        import pendulum

        op = KafkaBackfillOperator(
            task_id="b", job_spec=text, kafka_conn_id=conn, output_root="/tmp/out"
        )
        start = pendulum.datetime(2026, 1, 1, tz="UTC")
        ctx = context(data_interval_start=start, data_interval_end=start.add(hours=1))
    with pytest.raises(AirflowFailException, match="job_spec: not JSON") as caught:
        op.execute(ctx)
    assert isinstance(caught.value.__cause__, JobSpecError)  # permanent: no retry


def test_restore_without_a_savepoint_root_fails_with_a_typed_cause(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from airflow.sdk.exceptions import AirflowFailException

    conn = kafka_connection(monkeypatch, "unit_restore", {"bootstrap.servers": "127.0.0.1:1"})
    op = SubmitStreamingJobOperator(
        task_id="s", job_spec=spec(), kafka_conn_id=conn, restore_from="latest"
    )
    with pytest.raises(AirflowFailException, match="savepoint_root") as err:
        op.execute(context())
    assert isinstance(err.value.__cause__, InvalidArgumentError)


def stop(tmp_path: Path, **kwargs: Any) -> StopStreamingJobOperator:
    values: dict[str, Any] = {
        "task_id": "stop",
        "checkpoint": str(tmp_path / "cp"),
        "job_name": "job",
        "savepoint_root": str(tmp_path / "sp"),
        **kwargs,
    }
    return StopStreamingJobOperator(**values)


@pytest.mark.parametrize(
    ("handle", "named"),
    [
        ("pid 4242 on worker-3", "handle"),
        ("{'pid': ", "handle"),
        ({"pid": "driver-1"}, "handle.pid"),
        ({"pid": -5}, "handle.pid"),
        ('{"pid": "x"}', "handle.pid"),
        ("{'pid': 12}", "pass the task's output"),
        (42, "handle"),
    ],
)
def test_a_bad_stop_handle_is_named(tmp_path: Path, handle: Any, named: str) -> None:
    with pytest.raises(AirflowFailException, match=named.replace(".", r"\.")) as caught:
        stop(tmp_path, handle=handle).execute(context())
    assert isinstance(caught.value.__cause__, InvalidArgumentError)
    assert not (tmp_path / "cp").exists() and not (tmp_path / "sp").exists()


def test_a_good_stop_handle_gives_the_driver(tmp_path: Path) -> None:
    def pid(handle: Any) -> int | None:
        ref = stop(tmp_path, handle=handle)._job_ref()
        return None if ref is None else getattr(ref, "pid", None)

    assert pid('{"pid": 12, "x": 1}') == 12
    assert pid({"pid": "13"}) == 13
    assert pid(None) is None
    assert pid("") is None


def test_a_stop_refuses_a_reference_of_another_job(tmp_path: Path) -> None:
    ref = {
        "backend": "yarn",
        "job_name": "other_job",
        "checkpoint": str(tmp_path / "cp"),
        "application_id": "application_1_0003",
        "resource_manager": "http://rm:8088",
    }
    with pytest.raises(AirflowFailException, match="names job 'other_job'") as caught:
        stop(tmp_path, handle={"job_ref": ref}).execute(context())
    assert isinstance(caught.value.__cause__, InvalidArgumentError)


def test_a_stop_that_names_no_job_fails_when_the_dag_is_parsed(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError, match="give handle"):
        stop(tmp_path, job_name="")
    with pytest.raises(InvalidArgumentError, match="give checkpoint, or handle"):
        StreamingHealthSensor(task_id="health")


def test_a_handle_without_a_job_ref_cannot_name_the_job(tmp_path: Path) -> None:
    task = stop(tmp_path, job_name="", checkpoint="", handle={"pid": 12})
    with pytest.raises(AirflowFailException, match="no job_ref in it"):
        task.execute(context())
    assert list(tmp_path.iterdir()) == []


def test_the_handle_names_the_job_checkpoint_and_since_batch(tmp_path: Path) -> None:
    ref = {
        "backend": "yarn",
        "job_name": "from_ref",
        "checkpoint": str(tmp_path / "cp"),
        "application_id": "application_1_0004",
        "resource_manager": "http://rm:8088",
    }
    handle = {"job_ref": ref, "checkpoint": str(tmp_path / "cp"), "since_batch": 7}
    task = StopStreamingJobOperator(task_id="stop", savepoint_root="/sp", handle=handle)
    assert [o.name for o in task.outlets] == ["kafkaspark-savepoints"]
    assert task._job_ref() is not None and task.job_name == "from_ref"
    assert task.checkpoint == str(tmp_path / "cp")
    sensor = StreamingHealthSensor(task_id="health", handle=json.dumps(handle))
    sensor.apply_handle()
    assert sensor.checkpoint == str(tmp_path / "cp") and sensor.resolved_since() == (7, None)


@pytest.mark.parametrize("job_name", ["../other_job", "a/b", ".hidden"])
def test_a_stop_job_name_with_a_separator_writes_nothing(tmp_path: Path, job_name: str) -> None:
    with pytest.raises(AirflowFailException, match="job_name") as caught:
        stop(tmp_path, job_name=job_name).execute(context())
    assert isinstance(caught.value.__cause__, InvalidArgumentError)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("build", "named"),
    [
        (
            lambda: KafkaPartitionReconcileOperator(
                task_id="r", checkpoint="/cp", kafka_timeout_s=unchecked("10s")
            ),
            "kafka_timeout_s",
        ),
        (
            lambda: KafkaPartitionReconcileOperator(
                task_id="r", checkpoint="/cp", kafka_timeout_s=math.nan
            ),
            "kafka_timeout_s",
        ),
        (
            lambda: StreamingHealthSensor(
                task_id="h", checkpoint="/cp", min_new_batches=unchecked("3")
            ),
            "min_new_batches",
        ),
        (
            lambda: StreamingHealthSensor(task_id="h", checkpoint="/cp", window_s=unchecked("abc")),
            "window_s",
        ),
        (lambda: StreamingHealthSensor(task_id="h", checkpoint="/cp", window_s=0), "window_s"),
        (
            lambda: StreamingHealthSensor(task_id="h", checkpoint="/cp", kafka_timeout_s=-1),
            "kafka_timeout_s",
        ),
        (lambda: KafkaBootstrapHealthSensor(task_id="b", timeout_s=unchecked("fast")), "timeout_s"),
        (lambda: KafkaBootstrapHealthSensor(task_id="b", timeout_s=math.inf), "timeout_s"),
    ],
)
def test_untemplated_numbers_are_checked_at_construction(build: Any, named: str) -> None:
    with pytest.raises(InvalidArgumentError, match=named) as err:
        build()
    assert isinstance(err.value, ValueError)


def test_numbers_still_accepted() -> None:
    sensor = StreamingHealthSensor(task_id="h", checkpoint="/cp", min_new_batches=0, window_s=5)
    assert sensor.settings.window_s == 5.0 and sensor.settings.min_new_batches == 0
    op = KafkaPartitionReconcileOperator(task_id="r", checkpoint="/cp", kafka_timeout_s=3)
    assert op.kafka_timeout_s == 3.0


# -- the driver's environment ---------------------------------------------------------------


def test_the_driver_gets_no_airflow_connections_or_variables() -> None:
    env = driver_environment(
        {
            "AIRFLOW_CONN_KAFKA_SASL": json.dumps({"extra": {"sasl.password": SECRET}}),
            "AIRFLOW_VAR_TOKEN": SECRET,
            "airflow_conn_lower": SECRET,
            "AIRFLOW_HOME": "/airflow",
            "PATH": "/bin",
        }
    )
    assert env == {"AIRFLOW_HOME": "/airflow", "PATH": "/bin"}
