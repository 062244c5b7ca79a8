"""KafkaSparkHook: a `kafka` connection read into client and spec config, each error naming
the connection and never a secret; cluster deploy mode through the official SparkSubmitHook
(what we hand it, and the handle we read back for YARN, Kubernetes and standalone cluster
mode; the SparkSubmitHook is replaced by a recorder, the connection parsing is the real one).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

import pytest

from airflow_provider_kafkaspark.errors import InvalidInputError
from airflow_provider_kafkaspark.hooks import kafkaspark
from airflow_provider_kafkaspark.hooks.kafkaspark import KafkaSparkHook
from tests.unit.airflow_helpers import kafka_connection

SECRET = "s3ntinel-pa55word"


class RecordingHook:
    calls: ClassVar[list[dict[str, Any]]] = []
    master = "yarn"
    found: ClassVar[dict[str, str]] = {}

    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs
        self._connection = {"master": self.master, "deploy_mode": kwargs.get("deploy_mode")}
        self._yarn_application_id: str | None = None
        self._kubernetes_driver_pod: str | None = None
        self._driver_id: str | None = None

    def submit(self, application: str) -> None:
        RecordingHook.calls.append({"application": application, **self.kwargs})
        for attribute, value in self.found.items():
            setattr(self, attribute, value)


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> type[RecordingHook]:
    from airflow.providers.apache.spark.hooks import spark_submit

    RecordingHook.calls = []
    monkeypatch.setattr(spark_submit, "SparkSubmitHook", RecordingHook)
    return RecordingHook


@pytest.mark.parametrize(
    ("master", "found", "key"),
    [
        ("yarn", {"_yarn_application_id": "application_1700000000000_0042"}, "yarn_application_id"),
        (
            "k8s://https://10.96.0.1:443",
            {"_kubernetes_driver_pod": "ip-count-1a2b-driver"},
            "kubernetes_driver_pod",
        ),
        ("spark://127.0.0.1:7077", {"_driver_id": "driver-20261122000000-0001"}, "driver_id"),
    ],
)
def test_cluster_mode_hands_the_runner_to_the_hook_and_returns_the_handle(
    recorder: type[RecordingHook], tmp_path: Path, master: str, found: dict[str, str], key: str
) -> None:
    recorder.master, recorder.found = master, found
    spec_file = tmp_path / "ip_count.spec.json"
    spec_file.write_text("{}")
    handle = kafkaspark.KafkaSparkHook(spark_conn_id="spark_prod").submit_cluster_mode(
        str(spec_file),
        job_name="ip_count",
        spark_conf={"spark.executor.memory": "2g"},
    )
    (call,) = recorder.calls
    assert call["application"].endswith("airflow_provider_kafkaspark/spark/runner.py")
    assert call["conn_id"] == "spark_prod" and call["deploy_mode"] == "cluster"
    assert call["files"] == str(spec_file)
    assert call["application_args"] == ["--spec", "ip_count.spec.json"]
    assert "spark-sql-kafka-0-10_2.13" in call["jars"]
    assert call["conf"]["spark.executor.memory"] == "2g"
    assert call["conf"]["spark.yarn.submit.waitAppCompletion"] == "false"
    assert call["conf"]["spark.kubernetes.submission.waitAppCompletion"] == "false"
    assert handle[key] == next(iter(found.values()))
    assert handle["mode"] == "cluster" and handle["master"] == master
    json.dumps(handle)  # XCom-sized and serializable


def test_spark_connection_is_read_by_the_official_hook(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(
        "AIRFLOW_CONN_SPARK_YARN",
        json.dumps({"conn_type": "spark", "host": "yarn", "extra": {"deploy-mode": "cluster"}}),
    )
    assert kafkaspark.KafkaSparkHook(spark_conn_id="spark_yarn").spark_connection() == (
        "yarn",
        "cluster",
    )


def test_a_cluster_call_without_a_spark_connection_says_so() -> None:
    with pytest.raises(InvalidInputError, match="spark_conn_id"):
        kafkaspark.KafkaSparkHook("kafka_default").spark_connection()


# -- the kafka connection -----------------------------------------------------------------


READS = [
    lambda conn_id: KafkaSparkHook(conn_id).kafka_spec_config(),
    lambda conn_id: KafkaSparkHook(conn_id).kafka_client_config(),
]


@pytest.mark.parametrize("read", READS, ids=["spec_config", "client_config"])
def test_an_undefined_connection_is_named(read: Any) -> None:
    with pytest.raises(InvalidInputError, match="'unit_nowhere' is not defined") as err:
        read("unit_nowhere")
    assert type(err.value.__cause__).__name__ == "AirflowNotFoundException"


@pytest.mark.parametrize("read", READS, ids=["spec_config", "client_config"])
@pytest.mark.parametrize(
    ("extra", "named"),
    [
        (["127.0.0.1:1", SECRET], "'extra' must be a JSON object"),
        ("{bootstrap.servers", "'extra' is not JSON"),
        ({"bootstrap.servers": 9092, "sasl.password": SECRET}, "'bootstrap.servers'"),
        ({"bootstrap.servers": ["a:1"]}, "'bootstrap.servers'"),
    ],
)
def test_a_malformed_connection_is_named(
    monkeypatch: pytest.MonkeyPatch, read: Any, extra: object, named: str
) -> None:
    conn = kafka_connection(monkeypatch, "unit_bad", extra)
    with pytest.raises(InvalidInputError) as err:
        read(conn)
    assert "'unit_bad'" in str(err.value) and named in str(err.value)
    assert SECRET not in str(err.value)


def test_a_good_connection_still_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    conn = kafka_connection(
        monkeypatch, "unit_good", {"bootstrap.servers": "127.0.0.1:1", "sasl.password": SECRET}
    )
    hook = KafkaSparkHook(conn)
    assert hook.kafka_spec_config() == ("127.0.0.1:1", {"sasl.password": SECRET})
    assert hook.kafka_client_config()["bootstrap.servers"] == "127.0.0.1:1"
    assert hook.get_conn() == hook.kafka_client_config()
