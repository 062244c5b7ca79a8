"""The ACLs a job spec needs (`core/kafka/acls.py`), their names kept in step with the names
the sink and the admin facade use, and `kafkaspark job acls`. The real broker's proof, with
the authorizer on: tests/integration/test_job_acls.py."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_kafkaspark.cli import main
from airflow_provider_kafkaspark.core.kafka.acls import (
    DEPRECATED_OFFSET_FETCHING,
    JobAcl,
    acl_table,
    check_principal,
    job_acls,
    pattern_prefix,
)
from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec
from airflow_provider_kafkaspark.errors import InvalidInputError
from airflow_provider_kafkaspark.spark.sink.config import marker_group, transactional_id

SERVERS = "b1:9092,b2:9092"


def spec(**changes: Any) -> JobSpec:
    raw: dict[str, Any] = {
        "job_name": "orders",
        "source": {"bootstrap_servers": SERVERS, "subscribe": ["orders_in", "refunds"]},
        "sink": {"kind": "kafka_exactly_once", "topic": "orders_out"},
        "checkpoint_location": "/tmp/ckpt",
    }
    for key, value in changes.items():
        if key in ("source", "sink"):
            raw[key] = {**raw[key], **value}
        else:
            raw[key] = value
    return JobSpec.from_dict(raw)


def keys(acls: list[JobAcl]) -> set[tuple[str, str, str, str]]:
    return {(a.resource_type, a.pattern_type, a.name, a.operation) for a in acls}


def test_an_exactly_once_job_needs_these_and_no_other() -> None:
    acls = job_acls(spec())
    assert keys(acls) == {
        ("TOPIC", "LITERAL", "orders_in", "READ"),
        ("TOPIC", "LITERAL", "refunds", "READ"),
        ("GROUP", "LITERAL", "kafkaspark.orders", "READ"),
        ("TOPIC", "LITERAL", "orders_out", "WRITE"),
        ("TOPIC", "LITERAL", "orders_out", "READ"),
        ("TRANSACTIONAL_ID", "PREFIXED", "orders-", "WRITE"),
        ("GROUP", "PREFIXED", "orders.", "READ"),
    }
    assert len(acls) == len(keys(acls))
    assert {a.cluster for a in acls} == {SERVERS}
    by_name = {(a.name, a.operation): a for a in acls}
    assert by_name[("orders_in", "READ")].who == "driver, executors, Airflow tasks"
    assert by_name[("orders-", "WRITE")].who == "executors"
    assert "TxnOffsetCommit" in by_name[("orders_out", "READ")].why


def test_the_prefixes_are_those_of_the_sink_s_own_names() -> None:
    """The sink names its transactional ids and marker groups (`spark/sink/config.py`); the
    ACLs' prefixes must cover every one of them."""
    acls = job_acls(spec(sink={"sink_id": "orders-v2"}))
    txn = next(a for a in acls if a.resource_type == "TRANSACTIONAL_ID")
    markers = next(a for a in acls if a.resource_type == "GROUP" and a.pattern_type == "PREFIXED")
    for slot in (0, 7, 123):
        assert transactional_id("orders-v2", slot).startswith(txn.name)
        assert marker_group("orders-v2", "0f1e2d3c-uuid", slot).startswith(markers.name)
    assert txn.name == "orders-v2-" and markers.name == "orders-v2."


def test_lag_group_sink_kinds_and_a_sink_on_another_cluster() -> None:
    named = keys(job_acls(spec(lag_group="lag.orders")))
    assert ("GROUP", "LITERAL", "lag.orders", "READ") in named
    assert not any(k[2] == "kafkaspark.orders" for k in named)
    assert not any(k[2] == "kafkaspark.orders" for k in keys(job_acls(spec(lag_group=""))))

    spark_sink = keys(job_acls(spec(sink={"kind": "kafka"})))
    assert ("TOPIC", "LITERAL", "orders_out", "WRITE") in spark_sink
    assert ("TOPIC", "LITERAL", "orders_out", "READ") not in spark_sink
    assert not any(k[0] == "TRANSACTIONAL_ID" for k in spark_sink)

    files = keys(job_acls(spec(sink={"kind": "parquet", "topic": None, "path": "/out"})))
    assert not any(k[2] == "orders_out" for k in files)

    elsewhere = job_acls(spec(sink={"bootstrap_servers": "sink:9092"}))
    clusters = {a.name: a.cluster for a in elsewhere}
    assert clusters["orders-"] == clusters["orders_out"] == "sink:9092"
    assert clusters["orders_in"] == clusters["kafkaspark.orders"] == SERVERS


def test_a_topic_read_and_written_is_one_acl_with_both_reasons() -> None:
    acls = job_acls(spec(source={"subscribe": ["same"]}, sink={"topic": "same"}))
    reads = [a for a in acls if a.name == "same" and a.operation == "READ"]
    assert len(reads) == 1
    assert reads[0].who == "driver, executors, Airflow tasks"
    assert "Spark's source" in reads[0].why and "TxnOffsetCommit" in reads[0].why


def test_assign_and_subscribe_pattern() -> None:
    assigned = keys(job_acls(spec(source={"subscribe": [], "assign": {"a": [0, 1]}})))
    assert ("TOPIC", "LITERAL", "a", "READ") in assigned
    pattern = job_acls(spec(source={"subscribe": [], "subscribe_pattern": "orders\\..*"}))
    found = next(a for a in pattern if a.resource_type == "TOPIC" and a.operation == "READ")
    assert (found.pattern_type, found.name) == ("PREFIXED", "orders.")
    assert "orders\\..*" in found.why
    with pytest.raises(InvalidInputError, match="subscribe_pattern"):
        job_acls(spec(source={"subscribe": [], "subscribe_pattern": ".*"}))


@pytest.mark.parametrize(
    ("pattern", "prefix"),
    [
        ("orders-.*", "orders-"),
        ("^orders-[a-z]+", "orders-"),
        ("orders\\.eu\\..+", "orders.eu."),
        ("ordersx?", "orders"),
        ("orders_(eu|us)", "orders_"),
        ("ab*c", "a"),
        ("xa{0,2}b", "x"),
        ("events\\d+", "events"),
    ],
)
def test_a_pattern_s_literal_start(pattern: str, prefix: str) -> None:
    assert pattern_prefix(pattern) == prefix


@pytest.mark.parametrize("pattern", ["a.*|b.*", ".*", "[ab]c", "(x|y)z", "\\w+", "x?y", "a{2}b"])
def test_a_pattern_without_a_literal_start_is_refused(pattern: str) -> None:
    with pytest.raises(InvalidInputError, match="grant Read on the topics it matches"):
        pattern_prefix(pattern)


def test_spark_s_deprecated_offset_reader_joins_a_group() -> None:
    conf = {DEPRECATED_OFFSET_FETCHING: "true"}
    default = keys(job_acls(spec(spark_conf=conf)))
    assert ("GROUP", "PREFIXED", "spark-kafka-source-", "READ") in default
    prefixed = keys(job_acls(spec(spark_conf=conf, source={"options": {"groupIdPrefix": "ord"}})))
    assert ("GROUP", "PREFIXED", "ord-", "READ") in prefixed
    fixed = keys(job_acls(spec(spark_conf=conf, source={"options": {"kafka.group.id": "g1"}})))
    assert ("GROUP", "LITERAL", "g1", "READ") in fixed
    # The default (admin-client) offset reader uses no group.
    for quiet in (spec(), spec(spark_conf={DEPRECATED_OFFSET_FETCHING: "false"})):
        assert not any(k[2].startswith("spark-kafka-source") for k in keys(job_acls(quiet)))


def test_kafka_acls_command_lines() -> None:
    acls = {(a.name, a.operation): a for a in job_acls(spec())}
    txn = acls[("orders-", "WRITE")].command("User:orders-job", command_config="admin.conf")
    assert shlex.split(txn) == [
        "kafka-acls.sh",
        "--bootstrap-server",
        "b1:9092",
        "--command-config",
        "admin.conf",
        "--add",
        "--allow-principal",
        "User:orders-job",
        "--operation",
        "Write",
        "--transactional-id",
        "orders-",
        "--resource-pattern-type",
        "prefixed",
    ]
    lag = acls[("kafkaspark.orders", "READ")].command("User:j")
    assert lag.endswith(
        "--operation Read --group kafkaspark.orders --resource-pattern-type literal"
    )
    assert check_principal("User:j") == "User:j"
    with pytest.raises(InvalidInputError, match="not a Kafka principal"):
        check_principal("j")


def test_the_table_names_every_acl() -> None:
    acls = job_acls(spec())
    lines = acl_table(acls).splitlines()
    assert lines[0].split()[:3] == ["resource", "operation", "cluster"]
    assert len(lines) == len(acls) + 1
    assert any(line.startswith("TRANSACTIONAL_ID orders-* (prefixed)") for line in lines)


def test_the_cli_prints_the_table_the_commands_or_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "job.json"
    path.write_text(spec().to_json())
    assert main(["job", "acls", str(path)]) == 0
    assert "TOPIC orders_in" in capsys.readouterr().out
    assert main(["job", "acls", str(path), "--principal", "User:o"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(job_acls(spec()))
    assert all(line.startswith("kafka-acls.sh --bootstrap-server b1:9092 --add") for line in lines)
    assert main(["job", "acls", str(path), "--principal", "User:o", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert {a["name"] for a in listed} >= {"orders-", "orders.", "kafkaspark.orders"}
    assert all("User:o" in a["command"] for a in listed)


def test_the_cli_s_bad_input_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["job", "acls", str(tmp_path / "missing.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("kafkaspark: error: ") and "\n" not in err
    path = tmp_path / "job.json"
    path.write_text(spec().to_json())
    assert main(["job", "acls", str(path), "--principal", "nobody"]) == 2
    assert "not a Kafka principal" in capsys.readouterr().err
