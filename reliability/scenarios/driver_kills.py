"""Random driver kills on the example job (requests per IP per 5-second window).

A steady stream of seeded access events flows in; the driver's whole process group gets a
SIGKILL at random moments while it is committing batches, and the job is resubmitted at once
through the operators' code path each time. At the end a read_committed reader must find
every closed window exactly once, with the count the input implies.
"""

from __future__ import annotations

import itertools
import json
import random
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from reliability import stack
from reliability.model import Profile, ScenarioResult

NAME = "driver_kills"
TITLE = "random SIGKILLs of the example job's driver, resubmitted each time"

SOURCE, SINK = "kills_source", "kills_sink"
PARTITIONS = 3
WATERMARK_MS = 10_000
# Seconds of producing the input per kill (at least a minute). A kill waits for the
# restarted driver's next batch, and a job that has caught up with an input that stopped
# arriving has none: the input must keep flowing until the last kill. A kill cycle (restart,
# first batch, a random delay) takes 15-25 s on a 2-core machine.
PRODUCE_SECONDS_PER_KILL = 24.0


class EventProducer(threading.Thread):
    """The access events at a steady wall-clock rate, keyed by IP, stamped with event time."""

    def __init__(self, bootstrap: str, events: list[Any], rate: float) -> None:
        super().__init__(daemon=True, name="event-producer")
        self.bootstrap, self.events, self.rate = bootstrap, events, rate
        self.acked = 0
        self.errors: list[str] = []

    def run(self) -> None:
        from confluent_kafka import Producer

        def on_delivery(err: Any, _msg: Any) -> None:
            if err is None:
                self.acked += 1
            else:
                self.errors.append(str(err))

        producer = Producer(
            {"bootstrap.servers": self.bootstrap, "linger.ms": 10, "enable.idempotence": True}
        )
        began = time.monotonic()
        for i, event in enumerate(self.events):
            ahead = began + i / self.rate - time.monotonic()
            if ahead > 0:
                time.sleep(ahead)
            while True:
                try:
                    producer.produce(
                        SOURCE,
                        key=event.ip.encode(),
                        value=event.to_json(),
                        timestamp=event.event_time_ms,
                        on_delivery=on_delivery,
                    )
                    break
                except BufferError:
                    producer.poll(0.1)
            producer.poll(0)
        if producer.flush(120):
            self.errors.append("records left undelivered")


def run(profile: Profile, workdir: Path) -> ScenarioResult:
    from airflow_provider_kafkaspark.core.jobspec import JobSpec
    from airflow_provider_kafkaspark.examples.access_events import AccessEvent, generate_events
    from airflow_provider_kafkaspark.examples.ip_count import expected_counts, job_spec_dict
    from airflow_provider_kafkaspark.local.kafka import LocalKafkaCluster

    result = ScenarioResult(NAME, TITLE)
    rng = random.Random(profile.seed)
    events = list(generate_events(profile.kill_events, seed=profile.seed))
    flush_ms = max(e.event_time_ms for e in events) + 60_000
    checkpoint = workdir / "checkpoint"
    handle = None
    with LocalKafkaCluster(workdir / "kafka") as cluster:
        bootstrap = cluster.bootstrap_servers
        stack.create_topics(bootstrap, {SOURCE: PARTITIONS, SINK: PARTITIONS})
        spec = JobSpec.from_dict(
            job_spec_dict(
                bootstrap_servers=bootstrap,
                checkpoint=str(checkpoint),
                job_name="kills",
                trigger_interval="1 second",
                max_offsets_per_trigger=20_000,
                source_topic=SOURCE,
                sink_topic=SINK,
            )
        )
        produce_seconds = max(60.0, PRODUCE_SECONDS_PER_KILL * profile.driver_kills)
        producer = EventProducer(bootstrap, events, rate=len(events) / produce_seconds)
        producer.start()
        try:
            handle = stack.submit(spec, workdir / "driver")
            batch = -1
            killed_at: list[int] = []
            for kill in range(profile.driver_kills):
                # A kill lands while the driver works: after it committed a new batch, at a
                # random moment within the next few seconds (mid-batch or between batches).
                if not producer.is_alive():
                    result.check("input_flowing_at_every_kill", False, kill)
                batch = stack.wait_committed_beyond(handle, checkpoint, batch, timeout_s=300)
                time.sleep(rng.uniform(0.0, 4.0))
                stack.kill(handle)
                batch = stack.committed(checkpoint)
                killed_at.append(batch)
                result.faults_injected += 1
                stack.log(NAME, f"kill {kill + 1}: SIGKILL after batch {killed_at[-1]}")
                handle = stack.submit(spec, workdir / "driver")
                result.restarts += 1
            producer.join(timeout=600)
            result.check("input_delivered", producer.acked == len(events), producer.acked)
            # One far-future event moves the watermark past every window of the input.
            flush = AccessEvent("255.255.255.255", flush_ms, "/flush", 200)
            flusher = EventProducer(bootstrap, [flush], rate=1.0)
            flusher.run()
            stack.wait_caught_up(handle, checkpoint, bootstrap, [SOURCE], timeout_s=900)
            last = stack.stop(handle, NAME)
            handle = None
        finally:
            if handle is not None:
                stack.kill(handle)
        rows = stack.read_committed(bootstrap, SINK)

    seen: Counter[tuple[int, str]] = Counter()
    got: dict[tuple[int, str], int] = {}
    for raw in rows:
        row = json.loads(raw)
        key = (int(row["window_start_ms"]), str(row["ip"]))
        seen[key] += 1
        got[key] = int(row["count"])
    expected = expected_counts(events, closed_before_ms=flush_ms - WATERMARK_MS)
    result.records_checked = sum(expected.values())
    result.duplicates = sum(n - 1 for n in seen.values())
    result.missing = sum(1 for key in expected if key not in got)
    result.check("windows_expected", True, len(expected))
    result.check("windows_written", True, len(got))
    wrong = sum(1 for key, count in expected.items() if key in got and got[key] != count)
    result.check("wrong_counts", wrong == 0, wrong)
    result.check("events_counted", sum(got.values()) == len(events), sum(got.values()))
    # Each kill came after the restarted driver had committed a batch of its own.
    advancing = all(b < a for b, a in itertools.pairwise(killed_at))
    result.check("kills_after_batches", advancing, killed_at)
    result.check("batches", last >= profile.driver_kills, last + 1)
    return result
