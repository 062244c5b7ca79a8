"""The bootstrap probe's pure parts: bootstrap parsing and probe verdicts."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from airflow_provider_kafkaspark.core.kafka.bootstrap_probe import (
    BootstrapReport,
    ProbeStatus,
    ServerObservation,
    classify_servers,
)
from airflow_provider_kafkaspark.core.kafka.client import parse_server, split_bootstrap
from airflow_provider_kafkaspark.errors import InvalidInputError


def test_importing_the_modules_does_not_import_confluent_kafka() -> None:
    code = (
        "import sys\n"
        "import airflow_provider_kafkaspark.core.kafka.bootstrap_probe\n"
        "import airflow_provider_kafkaspark.core.kafka.client\n"
        "assert 'confluent_kafka' not in sys.modules, 'imported at module level'\n"
        "assert 'airflow' not in sys.modules and 'pyspark' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# -- bootstrap servers -----------------------------------------------------------------------


def test_split_bootstrap_trims_and_drops_repeats() -> None:
    assert split_bootstrap(" a:1, b:2,,a:1 ,c ") == ["a:1", "b:2", "c"]
    with pytest.raises(InvalidInputError):
        split_bootstrap(" , ")


@pytest.mark.parametrize(
    ("server", "expected"),
    [
        ("broker-1:9093", ("broker-1", 9093)),
        ("broker-1", ("broker-1", 9092)),
        ("SASL_SSL://broker-1:9094", ("broker-1", 9094)),
        ("[::1]:9095", ("::1", 9095)),
        ("[fe80::1]", ("fe80::1", 9092)),
    ],
)
def test_parse_server(server: str, expected: tuple[str, int]) -> None:
    assert parse_server(server) == expected


@pytest.mark.parametrize("server", ["host:0", "host:70000", "host:abc", ":9092", "[::1"])
def test_parse_server_rejects_bad_entries(server: str) -> None:
    with pytest.raises(InvalidInputError, match="bootstrap server"):
        parse_server(server)


# -- probe verdicts --------------------------------------------------------------------------

THREE = {1: "127.0.0.1:9092", 2: "127.0.0.2:9092", 3: "127.0.0.3:9092"}


def answered(
    server: str, broker_id: int | None, brokers: dict[int, str], cluster: str = "A"
) -> ServerObservation:
    return ServerObservation(server, 12, cluster_id=cluster, broker_id=broker_id, brokers=brokers)


def statuses(report: BootstrapReport) -> dict[str, ProbeStatus]:
    return {s.server: s.status for s in report.servers}


def test_all_servers_of_one_cluster_are_ok() -> None:
    report = classify_servers(
        [answered(a, n, THREE) for n, a in THREE.items()],
    )
    assert set(statuses(report).values()) == {ProbeStatus.OK}
    assert report.healthy and report.dead == []
    assert report.cluster_id == "A"
    assert report.brokers == list(THREE.values())


def test_unreachable_and_silent_servers_are_dead_with_reasons() -> None:
    report = classify_servers(
        [
            answered("127.0.0.1:9092", 1, THREE),
            ServerObservation("127.0.0.2:9092", 3, connect_error="connection refused"),
            ServerObservation("127.0.0.9:9092", 5000, metadata_error="Local: Timed out"),
        ]
    )
    assert statuses(report) == {
        "127.0.0.1:9092": ProbeStatus.OK,
        "127.0.0.2:9092": ProbeStatus.UNREACHABLE,
        "127.0.0.9:9092": ProbeStatus.NO_METADATA,
    }
    assert report.dead == ["127.0.0.2:9092", "127.0.0.9:9092"]
    assert "connection refused" in report.status_of("127.0.0.2:9092").reason
    assert "Timed out" in report.status_of("127.0.0.9:9092").reason
    assert report.status_of("127.0.0.9:9092").elapsed_ms == 5000


def test_a_server_of_another_cluster_is_outvoted() -> None:
    report = classify_servers(
        [
            answered("old:9092", 7, {7: "old:9092"}, cluster="B"),
            answered("127.0.0.1:9092", 1, THREE),
            answered("127.0.0.2:9092", 2, THREE),
        ]
    )
    assert report.cluster_id == "A"
    assert statuses(report)["old:9092"] is ProbeStatus.OTHER_CLUSTER
    assert "B" in report.status_of("old:9092").reason
    assert report.brokers == list(THREE.values())


def test_a_cluster_tie_goes_to_the_server_named_first() -> None:
    report = classify_servers(
        [answered("x:1", 1, {1: "x:1"}, cluster="X"), answered("y:1", 1, {1: "y:1"}, "Y")]
    )
    assert report.cluster_id == "X"
    assert statuses(report) == {"x:1": ProbeStatus.OK, "y:1": ProbeStatus.OTHER_CLUSTER}


def test_a_fenced_broker_that_still_lists_itself_is_not_a_member() -> None:
    live = {1: THREE[1], 2: THREE[2]}
    report = classify_servers(
        [
            answered(THREE[1], 1, live),
            answered(THREE[2], 2, live),
            answered(THREE[3], 3, THREE),  # its own, stale view
        ]
    )
    assert statuses(report) == {
        THREE[1]: ProbeStatus.OK,
        THREE[2]: ProbeStatus.OK,
        THREE[3]: ProbeStatus.NOT_A_MEMBER,
    }
    assert report.brokers == [THREE[1], THREE[2]]
    assert "2 of 2" in report.status_of(THREE[3]).reason


def test_with_two_servers_the_other_one_decides_membership() -> None:
    report = classify_servers(
        [answered(THREE[1], 1, {1: THREE[1]}), answered(THREE[2], 2, {1: THREE[1], 2: THREE[2]})]
    )
    assert statuses(report) == {THREE[1]: ProbeStatus.OK, THREE[2]: ProbeStatus.NOT_A_MEMBER}


def test_membership_also_counts_by_address() -> None:
    # A bootstrap name that differs only in case, and no broker id from the answer.
    report = classify_servers(
        [
            answered("BROKER-A:9092", None, {1: "broker-a:9092", 2: "broker-b:9092"}),
            answered("broker-b:9092", 2, {1: "broker-a:9092", 2: "broker-b:9092"}),
        ]
    )
    assert set(statuses(report).values()) == {ProbeStatus.OK}


def test_a_server_answering_alone_judges_itself() -> None:
    report = classify_servers(
        [answered("a:1", 1, {1: "a:1"}), ServerObservation("b:1", 1, connect_error="refused")]
    )
    assert statuses(report) == {"a:1": ProbeStatus.OK, "b:1": ProbeStatus.UNREACHABLE}
    assert report.brokers == ["a:1"]


def test_no_answer_at_all_is_unhealthy() -> None:
    report = classify_servers(
        [
            ServerObservation("a:1", 1, connect_error="refused"),
            ServerObservation("b:1", 1, metadata_error="timed out"),
        ]
    )
    assert not report.healthy
    assert report.cluster_id is None and report.brokers == []
    assert report.dead == ["a:1", "b:1"]


def test_report_to_dict_is_small_json() -> None:
    report = classify_servers(
        [answered(THREE[1], 1, THREE), ServerObservation("b:1", 4, connect_error="refused")]
    )
    data = json.loads(json.dumps(report.to_dict()))
    assert data["healthy"] is True
    assert data["dead"] == ["b:1"]
    assert data["cluster_id"] == "A"
    assert data["servers"][1] == {
        "server": "b:1",
        "status": "UNREACHABLE",
        "elapsed_ms": 4,
        "broker_id": None,
        "reason": "TCP connect failed: refused",
    }
