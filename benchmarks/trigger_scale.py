"""What watching N jobs costs one triggerer and the object store, N = 10 .. 200.

Each job is watched by a `StreamingHealthTrigger` (the deferrable health sensor's trigger, as a
deployment's health gate or a restart window runs it), all of them in one triggerer process.
Two stand-ins, stated as such:

- **Drivers** are simulated by one process that writes, for every job, what a driver writes
  that the trigger reads: Spark's offset and commit files of a new batch every trigger
  interval (`offsets/<n>`, `commits/<n>`), on a checkpoint whose lease was taken once with a
  long ttl (a real driver renews it every ttl/3; those writes change nothing the trigger
  decides on). It only writes (PUT), so every other request the S3 server counts is a
  trigger's.
  The topic holds more records than those batches reach, so every job lags.
- **The triggerer** is a process that runs the N triggers in one asyncio loop, as Airflow's
  triggerer runs its triggers, without its database round trips; each trigger's watch asks
  for more new batches than the window has, so every trigger polls (every
  `poll_interval_s`, the sensor's default 10 s) for the whole window.

For each N, after the triggers' first polls: the triggerer's CPU seconds (user + system) per
job-minute and resident memory per job (above the process's own after its imports), and the
S3 requests per job-minute counted at the S3 server (SeaweedFS's own request metrics) by type.
The real S3 server and Kafka broker are the dev stack's. N runs one after the other, in the
order given.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

BUCKET = "kafkaspark-scale"
TOPIC = "scale-in"
PARTITIONS = 3
KAFKA_CONN = "kafka_scale"
AWS_CONN = "aws_scale"
READS = ("GET", "HEAD", "LIST")
BACKLOG = 30_000


def checkpoint_of(base: str, job: int) -> str:
    return f"{base}/job-{job:04d}/checkpoint"


# -- the simulated drivers ------------------------------------------------------------------


def _offsets(batch: int) -> str:
    meta = json.dumps({"batchWatermarkMs": 0, "batchTimestampMs": int(time.time() * 1000)})
    ends = {TOPIC: {str(p): (batch + 1) * 100 for p in range(PARTITIONS)}}
    return f"v1\n{meta}\n{json.dumps(ends)}"


def simulate_drivers(base: str, jobs: int, trigger_s: float, stop: threading.Event) -> int:
    """Write each job's first batch and lease, then a batch per job every `trigger_s` until
    `stop`; returns the batches written."""
    import fsspec

    from airflow_provider_kafkaspark.core.control.folder import ControlFolder
    from airflow_provider_kafkaspark.core.control.lease import Lease

    fs = fsspec.filesystem("s3")
    for job in range(jobs):
        root = checkpoint_of(base, job).removeprefix("s3://")
        fs.pipe(f"{root}/metadata", json.dumps({"id": f"scale-{job}"}).encode())
        sources = {TOPIC: dict.fromkeys((str(p) for p in range(PARTITIONS)), 0)}
        fs.pipe(f"{root}/sources/0/0", f"v1\n{json.dumps(sources)}".encode())
        fs.pipe(f"{root}/offsets/0", _offsets(0).encode())
        fs.pipe(f"{root}/commits/0", b'v1\n{"nextBatchWatermarkMs":0}')
        ControlFolder(checkpoint_of(base, job)).acquire_lease(
            Lease.new(f"scale-{job}", ttl_ms=3_600_000)
        )
    written, batch = 0, 0
    while not stop.is_set():
        began = time.monotonic()
        batch += 1
        for job in range(jobs):
            root = checkpoint_of(base, job).removeprefix("s3://")
            fs.pipe(f"{root}/offsets/{batch}", _offsets(batch).encode())
            fs.pipe(f"{root}/commits/{batch}", b'v1\n{"nextBatchWatermarkMs":0}')
            written += 1
        stop.wait(max(0.0, trigger_s - (time.monotonic() - began)))
    return written


# -- the triggerer (a child process) ---------------------------------------------------------


def _rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _mark(label: str, **extra: Any) -> None:
    print(json.dumps({"mark": label, "cpu_s": _cpu_s(), "rss_kb": _rss_kb(), **extra}), flush=True)


def triggerer(base: str, jobs: int, warm_s: float, window_s: float, poll_s: float) -> None:
    """Run `jobs` health triggers in one loop; print marks at the window's start and end."""
    import asyncio

    from airflow_provider_kafkaspark.triggers.health import StreamingHealthTrigger

    _mark("imported")

    async def watch(trigger: StreamingHealthTrigger, events: list[Any]) -> None:
        async for event in trigger.run():
            events.append(event.payload)

    async def main() -> None:
        events: list[Any] = []
        triggers = [
            StreamingHealthTrigger(
                checkpoint=checkpoint_of(base, job),
                kafka_conn_id=KAFKA_CONN,
                aws_conn_id=AWS_CONN,
                since_batch=0,
                timeout_s=warm_s + window_s + 600,
                min_new_batches=1_000_000,
                poll_interval_s=poll_s,
            )
            for job in range(jobs)
        ]
        tasks = [asyncio.create_task(watch(t, events)) for t in triggers]
        await asyncio.sleep(warm_s)
        _mark("start", events=len(events))
        await asyncio.sleep(window_s)
        _mark("end", events=len(events), first_events=events[:3])
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    asyncio.run(main())


# -- one N ---------------------------------------------------------------------------------


def _reads(counts: dict[str, float]) -> float:
    return sum(counts.get(kind, 0.0) for kind in READS)


def _measure(
    s3: Any, env: dict[str, str], base: str, jobs: int, settings: dict[str, float]
) -> dict[str, Any]:
    stop = threading.Event()
    written: list[int] = []
    simulator = threading.Thread(
        target=lambda: written.append(simulate_drivers(base, jobs, settings["trigger_s"], stop)),
        daemon=True,
    )
    simulator.start()
    command = [
        sys.executable,
        __file__,
        "triggerer",
        base,
        str(jobs),
        str(settings["warm_s"]),
        str(settings["window_s"]),
        str(settings["poll_s"]),
    ]
    child = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    marks: dict[str, dict[str, Any]] = {}
    counts: dict[str, dict[str, float]] = {}
    try:
        assert child.stdout is not None
        for line in child.stdout:
            if not line.startswith('{"mark"'):
                continue
            mark = json.loads(line)
            marks[mark["mark"]] = mark
            counts[mark["mark"]] = s3.request_counts()
        child.wait(timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
        stop.set()
        simulator.join(60)
    if child.returncode != 0 or set(marks) != {"imported", "start", "end"}:
        raise RuntimeError(f"triggerer for {jobs} jobs failed ({child.returncode}): {marks}")
    minutes = settings["window_s"] / 60
    start, end = marks["start"], marks["end"]
    requests = {k: end_v - counts["start"].get(k, 0.0) for k, end_v in counts["end"].items()}
    cpu = end["cpu_s"] - start["cpu_s"]
    return {
        "jobs": jobs,
        "events_before_end": end["events"],
        "first_events": end.get("first_events", []),
        "triggerer_cpu_s_per_job_minute": round(cpu / jobs / minutes, 4),
        "triggerer_cpu_share_of_a_core": round(cpu / settings["window_s"], 3),
        "triggerer_rss_mb": round(end["rss_kb"] / 1024, 1),
        "triggerer_rss_mb_per_job": round(
            (end["rss_kb"] - marks["imported"]["rss_kb"]) / 1024 / jobs, 3
        ),
        "s3_reads_per_job_minute": round(_reads(requests) / jobs / minutes, 2),
        "s3_requests_in_window": {k: int(v) for k, v in sorted(requests.items()) if v},
        "simulated_batches_written": sum(written),
    }


def run(
    jobs: str = "10,50,100,200",
    window_s: float = 60.0,
    warm_s: float = 25.0,
    poll_s: float = 10.0,
    trigger_s: float = 5.0,
) -> dict[str, Any]:
    """`jobs`: the Ns, comma separated."""
    from kafkaspark_devstack.kafka import LocalKafkaCluster
    from kafkaspark_devstack.s3 import LocalS3Server
    from reliability import stack

    counts = [int(n) for n in str(jobs).split(",") if n.strip()]
    settings = {"window_s": window_s, "warm_s": warm_s, "poll_s": poll_s, "trigger_s": trigger_s}
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="kafkaspark-bench-scale-") as tmp:
        base_dir = Path(tmp)
        with LocalKafkaCluster(base_dir / "kafka") as kafka, LocalS3Server(base_dir / "s3") as s3:
            s3.create_bucket(BUCKET)
            stack.create_topics(kafka.bootstrap_servers, {TOPIC: PARTITIONS})
            # More records than the simulated batches reach: every job lags, so no watch ends
            # early as idle (a quiet topic that a live driver has read to its end is healthy).
            stack.produce_all(kafka.bootstrap_servers, TOPIC, start=0, count=BACKLOG, rate=50_000)
            aws = s3.aws_environment()
            env = {
                **os.environ,
                **aws,
                f"AIRFLOW_CONN_{KAFKA_CONN.upper()}": json.dumps(
                    {"conn_type": "kafka", "extra": {"bootstrap.servers": kafka.bootstrap_servers}}
                ),
                f"AIRFLOW_CONN_{AWS_CONN.upper()}": json.dumps(s3.aws_connection()),
                "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
            }
            saved = {k: os.environ.get(k) for k in aws}
            os.environ.update(aws)  # the simulated drivers' writes
            try:
                for n in counts:
                    stack.log("trigger_scale", f"{n} jobs")
                    base = f"s3://{BUCKET}/n{n}"
                    results.append(_measure(s3, env, base, n, settings))
                    stack.log("trigger_scale", f"{n} jobs: {results[-1]}")
            finally:
                for key, value in saved.items():
                    if value is None:
                        os.environ.pop(key, None)
                    else:
                        os.environ[key] = value
    first, last = results[0], results[-1]
    return {
        "stand_ins": "simulated drivers (checkpoint files every trigger, lease taken once); "
        "the triggerer's loop without its database",
        "poll_interval_s": poll_s,
        "trigger_interval_s": trigger_s,
        "window_s": window_s,
        "by_jobs": results,
        "largest_n": last["jobs"],
        "cpu_per_job_ratio_largest_to_smallest": round(
            last["triggerer_cpu_s_per_job_minute"] / first["triggerer_cpu_s_per_job_minute"], 3
        ),
        "s3_reads_per_job_ratio_largest_to_smallest": round(
            last["s3_reads_per_job_minute"] / first["s3_reads_per_job_minute"], 3
        ),
    }


if __name__ == "__main__" and len(sys.argv) > 1 and sys.argv[1] == "triggerer":
    triggerer(
        sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]), float(sys.argv[6])
    )
