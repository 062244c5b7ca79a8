"""Web access events for the classic example: JSON with an IP and an event time.

The generator is seeded so a run is reproducible: the same seed, count and start time
give the same events in the same order, hence the same expected counts per IP and window.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import dataclass

SOURCE_TOPIC = "ip_count_source"
SINK_TOPIC = "ip_count_sink"
PATHS = ("/", "/login", "/cart", "/search", "/item", "/checkout")


@dataclass(frozen=True)
class AccessEvent:
    ip: str
    event_time_ms: int
    path: str
    status: int

    def to_json(self) -> bytes:
        return json.dumps(
            {"ip": self.ip, "ts": self.event_time_ms, "path": self.path, "status": self.status},
            separators=(",", ":"),
        ).encode()


def generate_events(
    count: int,
    *,
    seed: int = 7,
    start_ms: int = 1_700_000_000_000,
    events_per_second: int = 200,
    distinct_ips: int = 50,
) -> Iterator[AccessEvent]:
    """`count` events, event time advancing by `1000 / events_per_second` ms on average."""
    rng = random.Random(seed)
    ips = [f"10.0.{i // 256}.{i % 256}" for i in range(distinct_ips)]
    # A few heavy hitters, as in real access logs.
    weights = [1.0 / (rank + 1) for rank in range(distinct_ips)]
    step = 1000.0 / events_per_second
    for i in range(count):
        yield AccessEvent(
            ip=rng.choices(ips, weights)[0],
            event_time_ms=start_ms + int(i * step) + rng.randint(0, 50),
            path=rng.choice(PATHS),
            status=rng.choice((200, 200, 200, 200, 304, 404, 500)),
        )


def produce_events(
    bootstrap_servers: str, topic: str, events: Iterator[AccessEvent] | list[AccessEvent]
) -> int:
    """Produce events keyed by IP, timestamped with their event time; returns how many the
    broker acknowledged."""
    from confluent_kafka import Producer

    acked = 0
    failed: list[str] = []

    def on_delivery(err: object, _msg: object) -> None:
        nonlocal acked
        if err is None:
            acked += 1
        else:
            failed.append(str(err))

    producer = Producer(
        {"bootstrap.servers": bootstrap_servers, "linger.ms": 10, "enable.idempotence": True}
    )
    for event in events:
        # The record timestamp is the event time, so a backfill of a time range (which maps
        # times to offsets with Kafka's offsets-for-times) selects events by event time.
        producer.produce(
            topic,
            key=event.ip.encode(),
            value=event.to_json(),
            timestamp=event.event_time_ms,
            on_delivery=on_delivery,
        )
        producer.poll(0)
    producer.flush(60)
    if failed:
        raise RuntimeError(f"{len(failed)} events not delivered to {topic}: {failed[0]}")
    return acked
