"""KafkaSparkHook: a `kafka` connection read into client and spec config, each error naming
the connection and never a secret; a `spark` connection's master and deploy mode as the
official SparkSubmitHook reads them."""

from __future__ import annotations

import json
from typing import Any

import pytest

from airflow_provider_kafkaspark.errors import InvalidInputError
from airflow_provider_kafkaspark.hooks import kafkaspark
from airflow_provider_kafkaspark.hooks.kafkaspark import KafkaSparkHook
from tests.unit.airflow_helpers import kafka_connection

SECRET = "s3ntinel-pa55word"


def test_spark_connection_is_read_by_the_official_hook(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(
        "AIRFLOW_CONN_SPARK_YARN",
        json.dumps({"conn_type": "spark", "host": "yarn", "extra": {"deploy-mode": "cluster"}}),
    )
    assert kafkaspark.KafkaSparkHook(spark_conn_id="spark_yarn").spark_connection() == (
        "yarn",
        "cluster",
    )


@pytest.mark.parametrize(
    "definition",
    [
        {"conn_type": "spark", "host": "yarn", "extra": {"deploy-mode": "cluster"}},
        {"conn_type": "spark", "host": "local[2]"},
        {"conn_type": "spark", "host": "spark://master.example", "port": 7077},
        {"conn_type": "spark", "host": "master.example", "port": 7077},
        "spark://master.example:7077?deploy-mode=client",
        "yarn://rm.example?deploy-mode=cluster",
    ],
)
def test_spark_master_and_mode_are_what_the_official_hook_reads(
    monkeypatch: pytest.MonkeyPatch, definition: dict[str, object] | str
) -> None:
    """Parsed by hand from the connection: the official hook reads it only privately (its
    `_connection`, consulted here as the reference)."""
    from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

    text = definition if isinstance(definition, str) else json.dumps(definition)
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_ANY", text)
    official = SparkSubmitHook(conn_id="spark_any")._connection
    assert KafkaSparkHook(spark_conn_id="spark_any").spark_connection() == (
        official["master"],
        official["deploy_mode"],
    )


@pytest.mark.parametrize(
    ("definition", "master"),
    [
        (
            {"conn_type": "spark", "host": "k8s://https://api.example", "port": 6443},
            "k8s://https://api.example:6443",
        ),
        ("k8s://api.example:6443", "k8s://api.example:6443"),
    ],
)
def test_a_kubernetes_master_is_read_without_the_kubernetes_client(
    monkeypatch: pytest.MonkeyPatch, definition: dict[str, object] | str, master: str
) -> None:
    """The official hook cannot be built for one without the kubernetes package installed."""
    text = definition if isinstance(definition, str) else json.dumps(definition)
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_K8S", text)
    assert KafkaSparkHook(spark_conn_id="spark_k8s").spark_connection() == (master, None)


def test_an_undefined_spark_connection_is_named() -> None:
    with pytest.raises(InvalidInputError, match="Spark connection 'spark_nowhere' is not defined"):
        KafkaSparkHook(spark_conn_id="spark_nowhere").spark_connection()


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
