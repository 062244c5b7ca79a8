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
