"""Reconciling checkpoint offsets against Kafka's partitions and watermarks (pure logic)."""

from __future__ import annotations

import json
import time

import pytest

from airflow_provider_kafkaspark.core.kafka.offsets import TopicPartition, Watermarks
from airflow_provider_kafkaspark.core.kafka.reconcile import (
    Finding,
    FindingKind,
    KafkaView,
    PartitionLag,
    ReconcilePlan,
    ReconcilePolicy,
    Severity,
    build_reconcile_plan,
)
from airflow_provider_kafkaspark.errors import InvalidInputError

NOW = 1_700_000_000_000
TP = TopicPartition


def view(
    partitions: dict[str, dict[int, Watermarks]],
    *,
    subscribed: set[str] | None = None,
    timestamps: dict[TopicPartition, int | None] | None = None,
) -> KafkaView:
    return KafkaView(
        partitions=partitions,
        subscribed=frozenset(subscribed or ()),
        first_unread_timestamps_ms=timestamps or {},
        observed_at_ms=NOW,
    )


def kinds(plan: ReconcilePlan) -> list[tuple[FindingKind, str, int | None]]:
    return [(f.kind, f.topic, f.partition) for f in plan.findings]


def only(plan: ReconcilePlan, kind: FindingKind) -> Finding:
    matching = [f for f in plan.findings if f.kind is kind]
    assert len(matching) == 1, plan.findings
    return matching[0]


def test_in_range_offsets_give_lag_and_no_findings() -> None:
    plan = build_reconcile_plan(
        {"orders": {0: 40, 1: 100}},
        view(
            {"orders": {0: Watermarks(0, 100), 1: Watermarks(0, 100)}},
            timestamps={TP("orders", 0): NOW - 90_000},
        ),
    )
    assert plan.findings == ()
    assert plan.max_severity is None
    assert not plan.blocking(Severity.INFO)
    assert plan.lag[TP("orders", 0)] == PartitionLag("orders", 0, 40, 0, 100, 60, 90.0)
    # Caught up: zero lag is zero seconds even without a timestamp.
    assert plan.lag[TP("orders", 1)].lag_records == 0
    assert plan.lag[TP("orders", 1)].lag_seconds == 0.0
    assert plan.total_lag_records == 60
    assert plan.max_lag_seconds == 90.0
    assert plan.partitions_checked == 2
    assert plan.lagging_partitions == 1
    assert plan.records_lost_total == 0
    assert plan.summary().startswith("reconcile OK: 2 partitions, lag 60 records")


def test_offset_exactly_at_low_and_high_is_in_range() -> None:
    plan = build_reconcile_plan(
        {"t": {0: 10, 1: 50}},
        view({"t": {0: Watermarks(10, 50), 1: Watermarks(10, 50)}}),
    )
    assert plan.findings == ()
    assert plan.lag[TP("t", 0)].lag_records == 40
    assert plan.lag[TP("t", 1)].lag_records == 0
    assert plan.records_lost_total == 0


def test_offset_below_earliest_counts_lost_records() -> None:
    plan = build_reconcile_plan({"t": {0: 5}}, view({"t": {0: Watermarks(12, 30)}}))
    finding = only(plan, FindingKind.OFFSET_BELOW_EARLIEST)
    assert finding.severity is Severity.CRITICAL
    assert finding.partition == 0
    assert finding.figures == {"checkpoint_offset": 5, "low": 12, "high": 30, "records_lost": 7}
    assert "7 records lost" in finding.message
    assert "failOnDataLoss" in finding.action
    assert plan.records_lost_total == 7
    # What is left to read starts at the earliest offset Kafka still has.
    assert plan.lag[TP("t", 0)].lag_records == 18
    assert plan.blocking()


def test_data_loss_is_a_warning_when_the_job_tolerates_it() -> None:
    plan = build_reconcile_plan(
        {"t": {0: 5}},
        view({"t": {0: Watermarks(12, 30)}}),
        ReconcilePolicy(fail_on_data_loss=False),
    )
    assert only(plan, FindingKind.OFFSET_BELOW_EARLIEST).severity is Severity.WARNING
    assert not plan.blocking()
    assert plan.blocking(Severity.WARNING)


def test_offset_above_latest_is_critical_with_no_lag() -> None:
    plan = build_reconcile_plan({"t": {0: 900}}, view({"t": {0: Watermarks(0, 40)}}))
    finding = only(plan, FindingKind.OFFSET_ABOVE_LATEST)
    assert finding.severity is Severity.CRITICAL
    assert finding.figures["offsets_ahead"] == 860
    assert "do not restore" in finding.action.lower()
    assert plan.lag[TP("t", 0)].lag_records == 0
    assert plan.total_lag_records == 0


def test_new_partition_of_a_checkpoint_topic() -> None:
    plan = build_reconcile_plan(
        {"t": {0: 10}},
        view({"t": {0: Watermarks(0, 10), 1: Watermarks(3, 8)}}),
    )
    finding = only(plan, FindingKind.NEW_PARTITION)
    assert (finding.topic, finding.partition, finding.severity) == ("t", 1, Severity.WARNING)
    assert finding.figures["records_waiting"] == 5
    assert "subscribe" in finding.action and "assign" in finding.action
    assert plan.lag[TP("t", 1)] == PartitionLag("t", 1, None, 3, 8, 5, None)
    assert plan.total_lag_records == 5


def test_new_partition_severity_follows_policy() -> None:
    plan = build_reconcile_plan(
        {"t": {0: 10}},
        view({"t": {0: Watermarks(0, 10), 1: Watermarks(0, 0)}}),
        ReconcilePolicy(new_partition_severity=Severity.INFO),
    )
    finding = only(plan, FindingKind.NEW_PARTITION)
    assert finding.severity is Severity.INFO
    # An empty new partition is still reported: with `assign` it would never be read.
    assert finding.figures["records_waiting"] == 0
    assert plan.max_severity is Severity.INFO


def test_subscribed_topic_unknown_to_checkpoint_is_all_new_partitions() -> None:
    plan = build_reconcile_plan(
        {"a": {0: 1}},
        view(
            {"a": {0: Watermarks(0, 1)}, "b": {0: Watermarks(0, 4), 1: Watermarks(0, 6)}},
            subscribed={"a", "b"},
        ),
    )
    assert kinds(plan) == [
        (FindingKind.NEW_PARTITION, "b", 0),
        (FindingKind.NEW_PARTITION, "b", 1),
    ]
    assert plan.total_lag_records == 10


def test_topic_missing_from_checkpoint_is_critical_subscribed_only_is_warning() -> None:
    plan = build_reconcile_plan(
        {"gone": {0: 5, 1: 6}, "kept": {0: 1}},
        view({"kept": {0: Watermarks(0, 1)}}, subscribed={"kept", "never"}),
    )
    gone, never = plan.findings
    assert (gone.kind, gone.topic, gone.partition) == (FindingKind.TOPIC_MISSING, "gone", None)
    assert gone.severity is Severity.CRITICAL
    assert gone.figures == {"checkpoint_partitions": 2}
    assert (never.kind, never.topic) == (FindingKind.TOPIC_MISSING, "never")
    assert never.severity is Severity.WARNING
    assert "subscribed" in never.message


def test_partition_missing_means_recreated_topic() -> None:
    plan = build_reconcile_plan(
        {"t": {0: 5, 1: 5, 2: 5}},
        view({"t": {0: Watermarks(0, 5)}}),
    )
    assert kinds(plan) == [
        (FindingKind.PARTITION_MISSING, "t", 1),
        (FindingKind.PARTITION_MISSING, "t", 2),
    ]
    assert all(f.severity is Severity.CRITICAL for f in plan.findings)
    assert plan.findings[0].figures == {"checkpoint_offset": 5, "kafka_partitions": 1}
    assert TP("t", 1) not in plan.lag


def test_lag_warning_above_record_threshold_only() -> None:
    policy = ReconcilePolicy(lag_records_warning=100, lag_seconds_warning=None)
    plan = build_reconcile_plan(
        {"t": {0: 0, 1: 0}},
        view({"t": {0: Watermarks(0, 100), 1: Watermarks(0, 101)}}),
        policy,
    )
    finding = only(plan, FindingKind.LAG)
    assert (finding.partition, finding.severity) == (1, Severity.WARNING)
    assert finding.figures["lag_records"] == 101
    assert finding.figures["lag_seconds"] is None


def test_lag_warning_above_seconds_threshold() -> None:
    policy = ReconcilePolicy(lag_records_warning=None, lag_seconds_warning=60.0)
    plan = build_reconcile_plan(
        {"t": {0: 0, 1: 0, 2: 0}},
        view(
            {"t": {p: Watermarks(0, 5) for p in range(3)}},
            timestamps={TP("t", 0): NOW - 60_000, TP("t", 1): NOW - 60_001, TP("t", 2): None},
        ),
        policy,
    )
    assert kinds(plan) == [(FindingKind.LAG, "t", 1)]
    assert plan.max_lag_seconds == 60.001
    assert plan.lag[TP("t", 2)].lag_seconds is None


def test_future_timestamp_is_not_negative_lag() -> None:
    plan = build_reconcile_plan(
        {"t": {0: 0}},
        view({"t": {0: Watermarks(0, 5)}}, timestamps={TP("t", 0): NOW + 5_000}),
    )
    assert plan.lag[TP("t", 0)].lag_seconds == 0.0


def test_no_lag_finding_for_out_of_range_partitions() -> None:
    policy = ReconcilePolicy(lag_records_warning=1)
    plan = build_reconcile_plan(
        {"t": {0: 0}},
        view({"t": {0: Watermarks(10, 1_000)}}),
        policy,
    )
    assert kinds(plan) == [(FindingKind.OFFSET_BELOW_EARLIEST, "t", 0)]


def test_empty_checkpoint_is_a_fresh_start() -> None:
    plan = build_reconcile_plan(
        {},
        view({"t": {0: Watermarks(0, 100)}}, subscribed={"t", "missing"}),
    )
    # Where a fresh job starts is up to startingOffsets, so no partition counts as "new".
    assert plan.fresh_start
    assert kinds(plan) == [(FindingKind.TOPIC_MISSING, "missing", None)]
    assert plan.lag == {}
    assert plan.partitions_checked == 0
    assert plan.max_lag_seconds is None
    assert "fresh start" in plan.summary()


def test_topic_with_zero_records() -> None:
    plan = build_reconcile_plan({"t": {0: 0}}, view({"t": {0: Watermarks(0, 0)}}))
    assert plan.findings == ()
    assert plan.lag[TP("t", 0)].lag_records == 0
    assert plan.lagging_partitions == 0


def test_findings_sorted_by_severity_topic_partition() -> None:
    checkpoint = {
        "b": {0: 0, 1: 100},
        "a": {0: 50, 3: 1},
    }
    kafka = view(
        {
            "a": {0: Watermarks(0, 10), 1: Watermarks(0, 5)},
            "b": {0: Watermarks(5, 10), 1: Watermarks(0, 10), 2: Watermarks(0, 1)},
        },
        subscribed={"a", "b", "c"},
    )
    plan = build_reconcile_plan(checkpoint, kafka)
    assert kinds(plan) == [
        (FindingKind.OFFSET_ABOVE_LATEST, "a", 0),
        (FindingKind.PARTITION_MISSING, "a", 3),
        (FindingKind.OFFSET_BELOW_EARLIEST, "b", 0),
        (FindingKind.OFFSET_ABOVE_LATEST, "b", 1),
        (FindingKind.NEW_PARTITION, "a", 1),
        (FindingKind.NEW_PARTITION, "b", 2),
        (FindingKind.TOPIC_MISSING, "c", None),
    ]
    # Same inputs in another insertion order give the same plan.
    reordered = build_reconcile_plan(
        {"a": {3: 1, 0: 50}, "b": {1: 100, 0: 0}},
        view(
            {
                "b": {2: Watermarks(0, 1), 1: Watermarks(0, 10), 0: Watermarks(5, 10)},
                "a": {1: Watermarks(0, 5), 0: Watermarks(0, 10)},
            },
            subscribed={"c", "b", "a"},
        ),
    )
    assert reordered == plan
    assert reordered.to_dict() == plan.to_dict()


def test_many_partition_findings_fold_into_one_per_topic() -> None:
    checkpoint = {"t": {p: 0 for p in range(12)} | {20: 0}}
    kafka = view({"t": {p: Watermarks(100, 150) for p in range(21)}})
    plan = build_reconcile_plan(checkpoint, kafka, ReconcilePolicy(max_findings_per_topic=10))
    below = only(plan, FindingKind.OFFSET_BELOW_EARLIEST)
    assert below.partition is None
    assert below.figures == {"partitions": 13, "partition_ranges": "0-11,20", "records_lost": 1300}
    assert below.message.startswith("13 partitions (0-11,20) of topic 't'")
    assert plan.records_lost_total == 1300
    # Eight new partitions stay under the limit: one finding each.
    assert [f.partition for f in plan.findings if f.kind is FindingKind.NEW_PARTITION] == list(
        range(12, 20)
    )


def test_folded_lag_findings_sum_records_and_keep_max_seconds() -> None:
    checkpoint = {"t": {p: 0 for p in range(4)}}
    kafka = view(
        {"t": {p: Watermarks(0, 10 + p) for p in range(4)}},
        timestamps={TP("t", 0): NOW - 2_000, TP("t", 3): NOW - 7_500},
    )
    policy = ReconcilePolicy(lag_records_warning=1, max_findings_per_topic=3)
    lag = only(build_reconcile_plan(checkpoint, kafka, policy), FindingKind.LAG)
    assert lag.figures == {
        "partitions": 4,
        "partition_ranges": "0-3",
        "lag_records": 46,
        "max_lag_seconds": 7.5,
    }


def test_lag_table_keeps_worst_partitions_and_counts_the_rest() -> None:
    checkpoint = {"t": {p: 0 for p in range(10)}}
    kafka = view({"t": {p: Watermarks(0, p) for p in range(10)}})
    plan = build_reconcile_plan(checkpoint, kafka, ReconcilePolicy(max_lag_entries=3))
    assert [(e.partition, e.lag_records) for e in plan.top_lag] == [(9, 9), (8, 8), (7, 7)]
    assert plan.lagging_partitions == 9  # partition 0 has no lag
    assert plan.lag_truncated == 6
    lag = plan.to_dict()["lag"]
    assert [e["partition"] for e in lag["top"]] == [9, 8, 7]
    assert lag["truncated"] == 6
    assert lag["total_records"] == 45
    assert len(plan.lag) == 10


def test_json_round_trip() -> None:
    plan = build_reconcile_plan(
        {"a": {0: 1, 1: 99, 2: 5}, "gone": {0: 1}},
        view(
            {"a": {0: Watermarks(3, 10), 1: Watermarks(0, 10), 2: Watermarks(0, 10)}},
            subscribed={"a", "x"},
            timestamps={TP("a", 2): NOW - 1_234},
        ),
        ReconcilePolicy(lag_records_warning=2),
    )
    assert {f.kind for f in plan.findings} == {
        FindingKind.OFFSET_BELOW_EARLIEST,
        FindingKind.OFFSET_ABOVE_LATEST,
        FindingKind.LAG,
        FindingKind.TOPIC_MISSING,
    }
    text = json.dumps(plan.to_dict())
    back = ReconcilePlan.from_dict(json.loads(text))
    assert back == plan
    assert back.to_dict() == plan.to_dict()
    assert back.lag[TP("a", 2)].lag_seconds == 1.234
    assert json.loads(text)["max_severity"] == "CRITICAL"
    assert json.loads(text)["findings"][0]["severity"] == "CRITICAL"


def test_from_dict_rejects_malformed_input() -> None:
    good = build_reconcile_plan({"t": {0: 0}}, view({"t": {0: Watermarks(0, 1)}})).to_dict()
    with pytest.raises(InvalidInputError, match="reconcile plan: malformed"):
        ReconcilePlan.from_dict({k: v for k, v in good.items() if k != "lag"})
    bad_finding: dict[str, object] = {
        "kind": "NOPE",
        "severity": "INFO",
        "topic": "t",
        "partition": None,
        "figures": {},
        "message": "",
        "action": "",
    }
    with pytest.raises(InvalidInputError, match="finding: malformed"):
        Finding.from_dict(bad_finding)
    with pytest.raises(InvalidInputError, match="figure 'x' is list"):
        Finding.from_dict(bad_finding | {"kind": "LAG", "figures": {"x": [1]}})


def test_policy_rejects_nonsense_limits() -> None:
    with pytest.raises(InvalidInputError, match="max_findings_per_topic"):
        ReconcilePolicy(max_findings_per_topic=0)
    with pytest.raises(InvalidInputError, match="max_lag_entries"):
        ReconcilePolicy(max_lag_entries=-1)


def test_summary_names_counts_and_first_finding() -> None:
    plan = build_reconcile_plan(
        {"t": {0: 0, 1: 0}},
        view({"t": {0: Watermarks(4, 10)}}, subscribed={"u"}),
    )
    line = plan.summary()
    assert "\n" not in line
    assert line.startswith("reconcile CRITICAL: 1 partition, lag 6 records")
    assert "4 records lost" in line
    assert "3 findings (2 critical, 1 warning)" in line
    assert "first: OFFSET_BELOW_EARLIEST t-0" in line


def test_thousand_partitions_is_fast_and_small() -> None:
    n = 1_000
    checkpoint = {"big": {p: 500 for p in range(n)}}
    # Odd partitions lag by p records; every fourth is 100 records past retention.
    marks = {
        p: Watermarks(600, 700) if p % 4 == 0 else Watermarks(0, 500 + (p if p % 2 else 0))
        for p in range(n)
    }
    kafka = view({"big": marks | {n + i: Watermarks(0, 10) for i in range(50)}})
    start = time.perf_counter()
    plan = build_reconcile_plan(checkpoint, kafka)
    elapsed = time.perf_counter() - start
    assert elapsed < 1.0
    assert plan.partitions_checked == n + 50
    assert plan.records_lost_total == 100 * (n // 4)
    below = only(plan, FindingKind.OFFSET_BELOW_EARLIEST)
    assert below.figures["partitions"] == n // 4
    new = only(plan, FindingKind.NEW_PARTITION)
    assert new.figures == {
        "partitions": 50,
        "partition_ranges": "1000-1049",
        "records_waiting": 500,
    }
    assert plan.total_lag_records == sum(range(1, n, 2)) + 100 * (n // 4) + 500
    assert len(plan.top_lag) == 100
    assert plan.top_lag[0].partition == 999
    assert len(json.dumps(plan.to_dict())) < 30_000
