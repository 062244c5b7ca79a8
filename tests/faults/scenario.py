"""What every fault scenario does: a job of the example (windowed counts through the
exactly-once sink) submitted with the local backend on a driver host of the bed, its state on
S3; the output read `read_committed` at the end (0 duplicates, 0 missing); and the lease's
history from the versions S3 kept of the lease file: who held it, in which order, and whether
a driver ever wrote it again after another had taken it (two holders at once)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_kafkaspark.examples.access_events import AccessEvent, generate_events
from airflow_provider_kafkaspark.examples.ip_count import (
    expected_counts,
    job_spec_dict,
    sink_windows,
)
from tests.cluster.bed_stack import BUCKET, KAFKASPARK, BedStack, wait
from tests.faults.figures import record

HOSTS = ["s3", "kafka", "d1", "d2", "worker"]
PARTITIONS = 3

_VERSIONING = """
import os, sys, boto3
s3 = boto3.client("s3")
s3.put_bucket_versioning(Bucket=sys.argv[1], VersioningConfiguration={"Status": "Enabled"})
print(s3.get_bucket_versioning(Bucket=sys.argv[1])["Status"])
"""

# Every version of the objects under a prefix, oldest first (S3 lists a key's versions newest
# first), with the lease's owner for lease files.
_VERSIONS = """
import json, sys, boto3
s3 = boto3.client("s3")
bucket, prefix = sys.argv[1], sys.argv[2]
out = []
for page in s3.get_paginator("list_object_versions").paginate(Bucket=bucket, Prefix=prefix):
    for v in page.get("Versions", []):
        out.append({"key": v["Key"], "version": v["VersionId"], "latest": v["IsLatest"],
                    "modified": v["LastModified"].timestamp(), "deleted": False})
    for d in page.get("DeleteMarkers", []):
        out.append({"key": d["Key"], "version": d["VersionId"], "latest": d["IsLatest"],
                    "modified": d["LastModified"].timestamp(), "deleted": True})
for v in out:
    if v["key"].endswith("/lease.json") and not v["deleted"]:
        body = s3.get_object(Bucket=bucket, Key=v["key"], VersionId=v["version"])["Body"].read()
        v["owner"] = json.loads(body)["owner_id"]
print(json.dumps(out))
"""

# Partitions of a topic whose last stable offset is behind the high watermark: a transaction
# still open there (one a lost driver's producer began is aborted by the broker only at its
# timeout, and read_committed stops before it until then).
_OPEN_TRANSACTIONS = """
import sys
from confluent_kafka import Consumer, TopicPartition
def ends(isolation):
    c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": "kafkaspark-tests-lso",
                  "isolation.level": isolation})
    try:
        return [c.get_watermark_offsets(TopicPartition(sys.argv[2], p), 30)[1]
                for p in range(int(sys.argv[3]))]
    finally:
        c.close()
print(sum(s < h for s, h in zip(ends("read_committed"), ends("read_uncommitted"))))
"""


def enable_versions(stack: BedStack, host: str = "worker") -> None:
    status = stack.python(host, _VERSIONING, BUCKET, env=stack.aws).strip()
    assert status == "Enabled", status


def object_versions(stack: BedStack, prefix: str, host: str = "worker") -> list[dict[str, Any]]:
    """Every version S3 kept under `s3://BUCKET/prefix`, in the order each key was written."""
    seen = json.loads(stack.python(host, _VERSIONS, BUCKET, prefix, env=stack.aws))
    by_key: dict[str, list[dict[str, Any]]] = {}
    for v in seen:
        by_key.setdefault(v["key"], []).append(v)
    ordered: list[dict[str, Any]] = []
    for versions in by_key.values():
        ordered += list(reversed(versions))  # S3 lists newest first
    return ordered


@dataclass(frozen=True)
class LeaseHistory:
    owners: list[str]  # holders in the order they wrote the lease, consecutive writes merged
    writes: int
    returned: list[str]  # owners that wrote the lease again after another had written it

    @property
    def holders_at_most(self) -> int:
        """1 when each holder's writes all came before the next holder's first; 2 when a
        holder wrote the lease again after another had taken it."""
        return 2 if self.returned else 1


def lease_history(versions: list[dict[str, Any]]) -> LeaseHistory:
    """The lease's holders from the lease file's versions (oldest first)."""
    writes = [v for v in versions if v["key"].endswith("/lease.json") and not v["deleted"]]
    owners: list[str] = []
    returned: list[str] = []
    for v in writes:
        if owners and owners[-1] == v["owner"]:
            continue
        if v["owner"] in owners:
            returned.append(v["owner"])
        owners.append(v["owner"])
    return LeaseHistory(owners, len(writes), returned)


def rewritten_checkpoint_files(versions: list[dict[str, Any]]) -> list[str]:
    """Offset and commit log files written more than once: a batch planned or committed by two
    drivers."""
    counts: dict[str, int] = {}
    for v in versions:
        parts = v["key"].split("/")
        if len(parts) >= 2 and parts[-2] in ("offsets", "commits") and not v["deleted"]:
            counts[v["key"]] = counts.get(v["key"], 0) + 1
    return sorted(key for key, n in counts.items() if n > 1)


@dataclass
class StreamJob:
    """One job of the example on the bed: its topics, checkpoint and events are its own."""

    stack: BedStack
    name: str
    # Input for about 20 batches; a scenario that waits for more batches after its fault
    # adds input first (`more`), so that it never finds the source read to its end.
    events_count: int = 2_000
    max_offsets_per_trigger: int = 100
    lease_ttl_s: int = 15
    events: list[AccessEvent] = field(default_factory=list)
    refs: list[str] = field(default_factory=list)

    @property
    def checkpoint(self) -> str:
        return f"s3://{BUCKET}/{self.name}/checkpoint"

    @property
    def source(self) -> str:
        return f"{self.name}_source"

    @property
    def sink(self) -> str:
        return f"{self.name}_sink"

    def create(self, seed: int) -> None:
        self.stack.create_topics("kafka", PARTITIONS, self.source, self.sink)
        self.events = list(generate_events(self.events_count, seed=seed))
        self.stack.produce("worker", self.source, self.events)

    def more(self, count: int = 1_000) -> None:
        """Produce `count` events later than every event so far (no window they fall in is
        closed yet, so none is dropped as late)."""
        start = max(e.event_time_ms for e in self.events) + 1_000
        seed = len(self.events)
        events = list(generate_events(count, seed=seed, start_ms=start))
        self.events += events
        self.stack.produce("worker", self.source, events)

    def submit(
        self,
        host: str,
        *,
        env: dict[str, str] | None = None,
        max_restarts: int = 3,
        extra: list[str] | None = None,
    ) -> dict[str, Any]:
        """`kafkaspark job submit` on `host` (its driver runs there); the CLI's JSON answer."""
        spec = job_spec_dict(
            bootstrap_servers=self.stack.bootstrap,
            checkpoint=self.checkpoint,
            job_name=self.name,
            source_topic=self.source,
            sink_topic=self.sink,
            max_offsets_per_trigger=self.max_offsets_per_trigger,
            trigger_interval="1 second",
        )
        spec["spark_conf"] = {"spark.sql.shuffle.partitions": "2"}
        spec["lease_ttl_s"] = self.lease_ttl_s
        folder = self.stack.bed.folder(host)
        spec_file = folder / f"{self.name}.json"
        spec_file.write_text(json.dumps(spec))
        argv = [KAFKASPARK, "job", "submit", str(spec_file), "--master", "local[2]"]
        argv += ["--workdir", str(folder / "work"), "--max-restarts", str(max_restarts)]
        argv += [*(extra or []), "--json"]
        answer = dict(json.loads(self.stack.on(host, argv, env=self.env(env), timeout=300)))
        if "job_ref" in answer:
            self.refs.append(json.dumps(answer["job_ref"]))
        return answer

    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        return {**self.stack.aws, "KAFKASPARK_FAST_JVM": "1", **(extra or {})}

    def lease(self, host: str = "worker", env: dict[str, str] | None = None) -> dict[str, Any]:
        """The lease as `kafkaspark checkpoint inspect` on `host` sees it (holder, fresh)."""
        argv = [KAFKASPARK, "checkpoint", "inspect", self.checkpoint, "--json"]
        return dict(json.loads(self.stack.on(host, argv, env=self.env(env)))["lease"] or {})

    def committed(self, host: str = "worker") -> int:
        return sum(self.stack.checkpoint_offsets(host, self.checkpoint, self.source).values())

    def wait_committed(self, more_than: int, timeout_s: float, what: str = "") -> int:
        def probe() -> int:
            n = self.committed()
            return n if n > more_than else 0

        return int(wait(what or f"more than {more_than} offsets committed", probe, timeout_s, 1))

    def finish(self, stop_host: str = "worker") -> dict[str, Any]:
        """Close the last windows, wait until the source is read to its end, stop the driver
        from `stop_host`; the stop's JSON answer."""
        flush_ms = max(e.event_time_ms for e in self.events) + 60_000
        flush = AccessEvent("255.255.255.255", flush_ms, "/", 200)
        self.stack.produce("worker", self.source, [flush])
        wait("the source read to its end", lambda: self.committed() == len(self.events) + 1, 300, 1)
        stop = [KAFKASPARK, "job", "stop", self.refs[-1], "--json"]
        return dict(json.loads(self.stack.on(stop_host, stop, timeout=300, env=self.env())))

    def output_check(self) -> dict[str, float]:
        """Records checked, duplicates and missing windows of the sink, read `read_committed`."""
        flush_ms = max(e.event_time_ms for e in self.events) + 60_000
        settled_s = timed(self._transactions_settled, "no open transaction on the sink", 150, 2)
        counts, duplicates = sink_windows(self.stack.read("kafka", self.sink, PARTITIONS))
        expected = expected_counts(self.events, closed_before_ms=flush_ms - 10_000)
        missing = sum(1 for key, n in expected.items() if counts.get(key) != n)
        extra = sum(1 for key in counts if key not in expected)
        return {
            "records": len(self.events),
            "sink_rows": sum(1 for _ in counts),
            "windows": len(expected),
            "duplicates": duplicates + extra,
            "missing": missing,
            "open_transaction_s": round(settled_s, 1),
        }

    def _transactions_settled(self) -> bool:
        args = (self.stack.bootstrap, self.sink, str(PARTITIONS))
        return int(self.stack.python("worker", _OPEN_TRANSACTIONS, *args).strip()) == 0

    def conclude(self, scenario: str, **figures: Any) -> LeaseHistory:
        """Every scenario's end: a clean stop from the worker, the output read and counted,
        the lease's history; the figures recorded (before the checks, so that a failing run
        keeps them), then checked: 0 duplicates, 0 missing, one holder at a time, no offset or
        commit file written twice."""
        stopped = self.finish()
        assert "clean" in stopped["stopped"], stopped
        output = self.output_check()
        history, rewritten = self.history()
        record(
            scenario,
            lease_ttl_s=self.lease_ttl_s,
            **output,
            holders_at_most=history.holders_at_most,
            holders=len(history.owners),
            checkpoint_files_rewritten=len(rewritten),
            **figures,
        )
        assert output["duplicates"] == 0 and output["missing"] == 0, output
        assert history.holders_at_most == 1, history
        assert rewritten == [], rewritten
        return history

    def history(self) -> tuple[LeaseHistory, list[str]]:
        versions = object_versions(self.stack, f"{self.name}/checkpoint/")
        return lease_history(versions), rewritten_checkpoint_files(versions)


def timed(probe: Callable[[], Any], what: str, timeout_s: float, pause_s: float = 1) -> float:
    """Seconds until `probe()` is truthy."""
    started = time.monotonic()
    wait(what, probe, timeout_s, pause_s)
    return time.monotonic() - started
