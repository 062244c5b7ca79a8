"""Random driver kills on the example job (requests per IP per 5-second window).

A steady stream of seeded access events flows in until the last kill is done (however long
the kills take on this machine); the driver's whole process group gets a SIGKILL at random
moments while it is committing batches, and the job is resubmitted at once through the
operators' code path each time. At the end a read_committed reader must find every closed
window exactly once, with the count the events the broker acknowledged imply.
"""

from __future__ import annotations

import itertools
import json
import random
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from airflow_provider_kafkaspark.examples.access_events import AccessEvent, generate_events
from reliability import stack
from reliability.model import Profile, ScenarioResult

NAME = "driver_kills"
TITLE = "random SIGKILLs of the example job's driver, resubmitted each time"
STORAGES = stack.STORAGES

SOURCE, SINK = "kills_source", "kills_sink"
PARTITIONS = 3
WATERMARK_MS = 10_000
# Caps on the input, not its amount. A kill waits for the restarted driver's next batch, and
# a job that has caught up with an input that stopped arriving has none: the input flows
# until the scenario says the last kill is done, however long the kills take on this
# machine (15-25 s a kill cycle on 2 cores). A kill cycle may take up to the sum of its
# waits' bounds (a batch 300 s, the random delay 4 s, the kill 120 s); the time cap lies
# beyond the bounds of every cycle plus the last restart's, so a wait gives up (and says
# what it saw) before the input could end on its own.
KILL_CYCLE_BOUND_S = 300.0 + 4.0 + 120.0
PRODUCE_CAP_S_PER_KILL = KILL_CYCLE_BOUND_S + 60.0


class EventProducer(stack.PacedProducer):
    """The seeded access events (`generate_events`) at a steady wall-clock rate, keyed by IP,
    stamped with event time, until stopped or capped.

    Event i is the i-th event of `generate_events(cap, seed=seed)` whatever the cap (the
    generator draws them one by one), so the acked events are regenerated from their indices
    rather than kept in memory: `acked_events()`.
    """

    def __init__(
        self,
        bootstrap: str,
        topic: str,
        rate: float,
        *,
        seed: int,
        count: int,
        max_seconds: float | None = None,
    ) -> None:
        super().__init__(
            bootstrap,
            topic,
            rate,
            count=count,
            max_seconds=max_seconds,
            extra_config={"linger.ms": 10},
            name="event-producer",
        )
        self.seed = seed
        self.last_event_ms = 0
        self._events = generate_events(count, seed=seed)
        self._acked = bytearray()

    def record(self, index: int) -> stack.Record:
        event = next(self._events)
        self._acked.append(0)
        self.last_event_ms = max(self.last_event_ms, event.event_time_ms)
        return stack.Record(event.ip.encode(), event.to_json(), None, event.event_time_ms)

    def on_acked(self, index: int) -> None:
        self._acked[index] = 1

    def acked_events(self) -> Iterator[AccessEvent]:
        """The events the broker acknowledged (call once the producer has ended)."""
        flags = bytes(self._acked)
        for index, event in enumerate(generate_events(len(flags), seed=self.seed)):
            if flags[index]:
                yield event


def run(profile: Profile, workdir: Path, storage: str = "local") -> ScenarioResult:
    from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec
    from airflow_provider_kafkaspark.examples.ip_count import expected_counts, job_spec_dict
    from kafkaspark_devstack.kafka import LocalKafkaCluster

    result = ScenarioResult(NAME, TITLE)
    rng = random.Random(profile.seed)
    handle = None
    with (
        stack.state_storage(storage, workdir) as state,
        LocalKafkaCluster(workdir / "kafka") as cluster,
    ):
        checkpoint = state.url("checkpoint")
        bootstrap = cluster.bootstrap_servers
        stack.create_topics(bootstrap, {SOURCE: PARTITIONS, SINK: PARTITIONS})
        spec = JobSpec.from_dict(
            job_spec_dict(
                bootstrap_servers=bootstrap,
                checkpoint=checkpoint,
                job_name="kills",
                trigger_interval="1 second",
                max_offsets_per_trigger=20_000,
                source_topic=SOURCE,
                sink_topic=SINK,
            )
        )
        producer = EventProducer(
            bootstrap,
            SOURCE,
            profile.kill_event_rate,
            seed=profile.seed,
            count=profile.kill_events_cap,
            max_seconds=PRODUCE_CAP_S_PER_KILL * (profile.driver_kills + 1),
        )
        producer.start()
        try:
            handle = stack.submit(spec, workdir / "driver")
            batch = -1
            killed_at: list[int] = []
            flowing: list[bool] = []
            for kill in range(profile.driver_kills):
                # A kill lands while the driver works: after it committed a new batch, at a
                # random moment within the next few seconds (mid-batch or between batches).
                flowing.append(producer.is_alive())
                if not flowing[-1]:
                    stack.log(NAME, f"input ended before kill {kill + 1}: {producer.status()}")
                batch = stack.wait_committed_beyond(handle, checkpoint, batch, timeout_s=300)
                # Where in the batch cycle the kill lands (random, seeded), not a wait.
                time.sleep(rng.uniform(0.0, 4.0))
                stack.kill(handle)
                batch = stack.committed(checkpoint)
                killed_at.append(batch)
                result.faults_injected += 1
                stack.log(NAME, f"kill {kill + 1}: SIGKILL after batch {killed_at[-1]}")
                handle = stack.submit(spec, workdir / "driver")
                result.restarts += 1
            # The last restart is seen to work under flowing input too; then the input ends.
            stack.wait_committed_beyond(handle, checkpoint, batch, timeout_s=300)
            flowing.append(producer.is_alive())
            producer.finish(timeout_s=180)
            stack.log(NAME, f"input ended after the last kill: {producer.status()}")
            result.check("input_flowing_at_every_kill", all(flowing), flowing.count(False))
            result.check(
                "input_delivered",
                not producer.errors and producer.acked == producer.produced,
                {"produced": producer.produced, "acked": producer.acked},
            )
            # One far-future event moves the watermark past every window of the input.
            flush_ms = producer.last_event_ms + 60_000
            flush = AccessEvent("255.255.255.255", flush_ms, "/flush", 200)
            produce_event(bootstrap, flush)
            stack.wait_caught_up(handle, checkpoint, bootstrap, [SOURCE], timeout_s=900)
            last = stack.stop(handle, NAME)
            handle = None
        finally:
            producer.stop()
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
    # What the input implies: the events the broker acknowledged, not the ones meant.
    expected = expected_counts(producer.acked_events(), closed_before_ms=flush_ms - WATERMARK_MS)
    result.records_checked = sum(expected.values())
    result.duplicates = sum(n - 1 for n in seen.values())
    result.missing = sum(1 for key in expected if key not in got)
    result.check("windows_expected", True, len(expected))
    result.check("windows_written", True, len(got))
    wrong = sum(1 for key, count in expected.items() if key in got and got[key] != count)
    result.check("wrong_counts", wrong == 0, wrong)
    result.check("events_counted", sum(got.values()) == producer.acked, sum(got.values()))
    # Each kill came after the restarted driver had committed a batch of its own.
    advancing = all(b < a for b, a in itertools.pairwise(killed_at))
    result.check("kills_after_batches", advancing, killed_at)
    result.check("batches", last >= profile.driver_kills, last + 1)
    return result


def produce_event(bootstrap: str, event: AccessEvent) -> None:
    """One event, now; raises unless the broker acknowledged it."""
    from airflow_provider_kafkaspark.examples.access_events import produce_events

    acked = produce_events(bootstrap, SOURCE, [event])
    if acked != 1:
        raise RuntimeError(f"the flush event {event} was not acknowledged")
