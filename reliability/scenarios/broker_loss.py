"""Broker loss on a 3-broker cluster (replication 3, min.insync.replicas 2).

Part 1: while a supervised driver copies a steady stream, one broker is killed (a crash, not
a controlled shutdown: its leaderships move only after its session expires) and brought
back. The longest time without a committed batch around the outage is measured and bounded.

Part 2: the driver is stopped, another broker is stopped for good while the connection's
bootstrap list still names it. The bootstrap sensor must name it within 30 s, and a submit
with that list must start the job again: it commits new batches with few restarts.

Every value produced in both parts must be in the sink exactly once (read_committed).
"""

from __future__ import annotations

import itertools
import json
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from airflow_provider_kafkaspark.core.cluster.host_process import pid_alive
from airflow_provider_kafkaspark.core.cluster.restart import RestartPolicy
from kafkaspark_devstack.kafka import LocalKafkaCluster
from reliability import stack
from reliability.model import Profile, ScenarioResult

if TYPE_CHECKING:
    from airflow.sdk import Context

    from airflow_provider_kafkaspark.core.cluster.job_ref import LocalJobRef

NAME = "broker_loss"
TITLE = (
    "Broker loss on 3 brokers (RF 3, min ISR 2): 0 loss, 0 duplicates, bounded stall; "
    "a decommissioned bootstrap entry is named and the job still starts"
)

SOURCE, SINK = "broker_loss_in", "broker_loss_out"
PARTITIONS = 3
JOB = "broker-loss"
CONN_ID = "kafkaspark_broker_loss"

# Brokers lost and brought back in part 1, per profile: a crash (SIGKILL: leaderships move
# only once the broker's session expires) and, in the long profile, a controlled shutdown.
OUTAGES: dict[str, list[tuple[str, int]]] = {
    "short": [("kill", 2)],
    "long": [("kill", 2), ("stop", 3)],
}
# The first bootstrap entry: the one a client given the list in order would try first.
DECOMMISSIONED = 1

PRELOAD = 1_000
STEADY_RATE = 500.0
# A cap on the steady input, not its amount: the scenario stops it once the job recovered
# from the last outage. It lies beyond the bounds of every wait of an outage, so a wait gives
# up (and says what it saw) before the input could end on its own.
STEADY_CAP_S_PER_OUTAGE = 1_800.0
TAIL, TAIL_RATE = 5_000, 1_000.0
# How long the cluster may take to notice a lost broker (broker.session.timeout.ms, 9 s, for
# a crash) and move its leaderships and transaction coordinators: a bound, not a wait.
REELECTION_TIMEOUT_S = 180.0

# The stall bound around an outage. Seen here: 16-38 s, most of it the Spark Kafka source's
# admin client giving up a listOffsets call after 30 s ("Timed out waiting for a node
# assignment") and retrying, once leaders have moved (after broker.session.timeout.ms, 9 s).
# Should the batch fail instead, one supervised restart must also fit: back-off (5 s) plus a
# driver start, 15-40 s on the 2 shared cores used here. A stall beyond the bound means the
# job hung, or restarted more than once for one lost broker.
MAX_GAP_S = 120.0
# The bound on naming a decommissioned bootstrap entry.
NAMED_WITHIN_S = 30.0
# The operator's own defaults (SubmitStreamingJobOperator: 3 restarts in 600 s, 5 s back-off).
POLICY = RestartPolicy(max_restarts=3, window_s=600.0, backoff_s=5.0, backoff_max_s=120.0)

START_TIMEOUT_S = 300.0
CATCH_UP_TIMEOUT_S = 300.0


class CommitWatch(threading.Thread):
    """Notes when each new committed batch appears, to measure stalls after the fact."""

    def __init__(self, checkpoint: Path, poll_s: float = 0.5) -> None:
        super().__init__(daemon=True, name="commit-watch")
        self.checkpoint, self.poll_s = checkpoint, poll_s
        self.commits: list[tuple[float, int]] = []
        self._halt = threading.Event()
        self._lock = threading.Lock()

    def run(self) -> None:
        last = -1
        while not self._halt.is_set():
            batch = stack.committed(self.checkpoint)
            if batch > last:
                with self._lock:
                    self.commits.append((time.monotonic(), batch))
                last = batch
            self._halt.wait(self.poll_s)

    def stop(self) -> None:
        self._halt.set()
        self.join(10)

    def times(self) -> list[float]:
        with self._lock:
            return [t for t, _ in self.commits]

    def stall(self, down_at: float, up_at: float) -> tuple[float, int]:
        """(the longest time without a commit from the last commit before `down_at` to the
        first after `up_at`, the commits made while the broker was down)."""
        times = self.times()
        before = max((t for t in times if t <= down_at), default=down_at)
        after = min((t for t in times if t >= up_at), default=time.monotonic())
        points = [before, *(t for t in times if before < t < after), after]
        gap = max(b - a for a, b in itertools.pairwise(points))
        return gap, sum(1 for t in times if down_at < t < up_at)


def supervisor_state(checkpoint: Path) -> dict[str, Any]:
    """What the local supervisor last wrote: `attempt` counts runner starts (1 = none
    restarted), `gave_up` whether the restart budget ran out."""
    from airflow_provider_kafkaspark.core.control.folder import SUPERVISOR_FILE, ControlFolder

    location = ControlFolder(str(checkpoint)).location
    if not location.exists(SUPERVISOR_FILE):
        return {}
    state: dict[str, Any] = json.loads(location.read_text(SUPERVISOR_FILE))
    return state


def restarts_of(checkpoint: Path) -> int:
    return max(0, int(supervisor_state(checkpoint).get("attempt", 1)) - 1)


def wait_in_sync(bootstrap: str, timeout_s: float) -> None:
    """Until every partition (internal ones too) has all its replicas in sync: a broker
    restarted a moment ago leads nothing and lags, and stopping a second one before it
    caught up would leave partitions below min.insync.replicas."""
    wait_no_partition(
        bootstrap,
        "every replica back in sync (partitions out of sync shown)",
        lambda p: len(p.isrs) != len(p.replicas),
        lambda p: f"replicas {p.replicas}, isr {p.isrs}",
        timeout_s,
    )


def wait_reelected(bootstrap: str, node: int, timeout_s: float) -> None:
    """Until no partition (internal ones too) has broker `node` as its leader or in its ISR:
    the cluster noticed the broker is gone and moved its leaderships."""
    wait_no_partition(
        bootstrap,
        f"the cluster to move broker {node}'s leaderships (partitions still on it shown)",
        lambda p: p.leader == node or node in p.isrs,
        lambda p: f"leader {p.leader}, isr {p.isrs}",
        timeout_s,
    )


def wait_no_partition(
    bootstrap: str,
    what: str,
    matches: Callable[[Any], bool],
    shown: Callable[[Any], str],
    timeout_s: float,
) -> None:
    """Poll the cluster's metadata until no partition `matches`; on giving up, the ones that
    still did are shown."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})

    def still_matching() -> list[str]:
        try:
            metadata = admin.list_topics(timeout=5)
        except Exception as exc:  # noqa: BLE001 - retried until the bound
            return [f"no metadata: {exc}"]
        return [
            f"{topic.topic}-{p.id} ({shown(p)})"
            for topic in metadata.topics.values()
            for p in topic.partitions.values()
            if matches(p)
        ]

    stack.wait_for(what, still_matching, timeout_s, poll_s=1.0, done=lambda seen: seen == [])


def probe_until_named(address: str, since: float, bound_s: float) -> tuple[float, dict[str, Any]]:
    """Poke the bootstrap sensor (the connection `CONN_ID`) until its report names `address`
    as not usable; (seconds since `since`, the last report). Keeps poking a little past the
    bound so that a late answer is measured rather than cut off."""
    from airflow_provider_kafkaspark.sensors.bootstrap import KafkaBootstrapHealthSensor

    # require_all=False is how a DAG lets the submit go ahead on the live entries; the
    # report (XCom) still lists the dead ones.
    sensor = KafkaBootstrapHealthSensor(
        task_id="bootstrap_health", kafka_conn_id=CONN_ID, timeout_s=5.0, require_all=False
    )
    report: dict[str, Any] = {}
    while True:
        poked = sensor.poke(cast("Context", {}))
        report = dict(poked.xcom_value or {})
        elapsed = time.monotonic() - since
        if address in report.get("dead", []) or elapsed > bound_s + 30:
            return elapsed, report
        time.sleep(1.0)


def run(profile: Profile, workdir: Path) -> ScenarioResult:
    from airflow_provider_kafkaspark.hooks.kafkaspark import KafkaSparkHook
    from airflow_provider_kafkaspark.lifecycle.inputs import with_connection

    result = ScenarioResult(name=NAME, title=TITLE)
    cluster = LocalKafkaCluster(
        workdir / "kafka",
        brokers=3,
        # Broker-wide too, so the internal topics the job uses (consumer offsets for the
        # sink's markers and lag commits) are as strict as the data topics.
        broker_config={"min.insync.replicas": "2", "default.replication.factor": "3"},
    )
    checkpoint, jobs = workdir / "checkpoint", workdir / "jobs"
    handle: LocalJobRef | None = None
    producers: list[stack.SteadyProducer] = []
    watch = CommitWatch(checkpoint)
    conn_env = f"AIRFLOW_CONN_{CONN_ID.upper()}"
    saved_env = {k: os.environ.get(k) for k in (conn_env, "AIRFLOW_HOME")}
    try:
        stack.log(NAME, "starting 3 Kafka brokers")
        cluster.start(timeout=180)
        everyone = cluster.bootstrap_servers
        stack.create_topics(
            everyone,
            {SOURCE: PARTITIONS, SINK: PARTITIONS},
            replication=3,
            config={"min.insync.replicas": "2"},
        )
        producers.append(
            stack.produce_all(
                everyone, SOURCE, start=0, count=PRELOAD, extra_config={"acks": "all"}
            )
        )

        # -- part 1: brokers lost under a running job, and brought back ----------------------
        spec = stack.passthrough_spec(
            bootstrap=everyone, checkpoint=checkpoint, source=SOURCE, sink=SINK, job_name=JOB
        )
        handle = stack.submit(spec, jobs, POLICY)
        stack.log(NAME, f"driver {handle.pid} submitted, waiting for its first batch")
        stack.wait_committed_beyond(handle, checkpoint, -1, START_TIMEOUT_S)
        watch.start()
        outages = OUTAGES[profile.name]
        # Stopped once the job recovered from the last outage, so that the job has new
        # records to commit (or stall on) throughout, however long the broker takes to come
        # back; the caps only end a run that never would.
        steady = stack.SteadyProducer(
            everyone,
            SOURCE,
            10**9,
            STEADY_RATE,
            start=PRELOAD,
            max_seconds=STEADY_CAP_S_PER_OUTAGE * len(outages),
            extra_config={"acks": "all"},
        )
        producers.append(steady)
        steady.start()
        windows: list[tuple[float, float]] = []
        input_flowing: list[bool] = []
        for how, node in outages:
            wait_in_sync(everyone, 180)
            flowing = stack.wait_committed_beyond(
                handle, checkpoint, stack.committed(checkpoint), START_TIMEOUT_S
            )
            stack.log(NAME, f"batch {flowing} committed under load: {how} broker {node}")
            down_at = time.monotonic()
            if how == "kill":
                cluster.kill_broker(node)
            else:
                cluster.stop_broker(node)
            result.faults_injected += 1
            # The broker stays down until the cluster has moved its leaderships (and with
            # them the transaction coordinators) and the job has committed a batch through
            # the re-elected cluster, not one still waiting on the dead broker.
            wait_reelected(everyone, node, REELECTION_TIMEOUT_S)
            through = stack.wait_committed_beyond(
                handle, checkpoint, stack.committed(checkpoint), MAX_GAP_S + START_TIMEOUT_S
            )
            stack.log(
                NAME,
                f"batch {through} committed through the re-elected cluster; restarting broker "
                f"{node} after {time.monotonic() - down_at:.1f}s down",
            )
            cluster.start_broker(node, timeout=180)
            up_at = time.monotonic()
            input_flowing.append(steady.is_alive())
            stack.wait_committed_beyond(
                handle, checkpoint, stack.committed(checkpoint), MAX_GAP_S + START_TIMEOUT_S
            )
            windows.append((down_at, up_at))
        input_flowing.append(steady.is_alive())
        steady.finish(180)
        result.check("input_flowing_through_outages", all(input_flowing), steady.status())
        stack.wait_caught_up(handle, checkpoint, everyone, [SOURCE], CATCH_UP_TIMEOUT_S)
        watch.stop()
        stalls = [watch.stall(down_at, up_at) for down_at, up_at in windows]
        gap = max(g for g, _ in stalls)
        while_down = [n for _, n in stalls]
        restarts_1 = restarts_of(checkpoint)
        stack.log(
            NAME,
            f"caught up after {steady.produced} steady records: longest stall {gap:.1f}s, "
            f"batches committed while a broker was down {while_down}, "
            f"{restarts_1} driver restarts",
        )
        result.check("longest_stall_s", gap <= MAX_GAP_S, round(gap, 1))
        result.check("batches_while_broker_down", True, while_down)
        result.check("restarts_during_outages", restarts_1 <= POLICY.max_restarts, restarts_1)
        last = stack.stop(handle, NAME)
        handle = None

        # -- part 2: a broker decommissioned, still named by the bootstrap list --------------
        wait_in_sync(everyone, 180)
        dead = cluster.node(DECOMMISSIONED).address
        os.environ.setdefault("AIRFLOW_HOME", str(workdir / "airflow"))
        os.environ[conn_env] = json.dumps(
            {"conn_type": "kafka", "extra": {"bootstrap.servers": everyone}}
        )
        stack.log(NAME, f"decommissioning broker {DECOMMISSIONED} ({dead})")
        decommissioned_at = time.monotonic()
        cluster.stop_broker(DECOMMISSIONED)
        result.faults_injected += 1
        named_s, report = probe_until_named(dead, decommissioned_at, NAMED_WITHIN_S)
        named = dead in report.get("dead", [])
        stack.log(NAME, f"sensor report {named_s:.1f}s after the decommission: {report}")
        result.check("dead_entry_named_s", named and named_s <= NAMED_WITHIN_S, round(named_s, 1))
        result.check("cluster_still_healthy", bool(report.get("healthy")), report.get("healthy"))

        servers, spec_config = KafkaSparkHook(CONN_ID).kafka_spec_config()
        result.check("submitted_list_names_dead_entry", dead in servers.split(","), servers)
        live = ",".join(n.address for n in cluster.nodes if n.node_id != DECOMMISSIONED)
        tail = stack.SteadyProducer(
            servers,
            SOURCE,
            TAIL,
            TAIL_RATE,
            start=PRELOAD + steady.produced,
            extra_config={"acks": "all"},
        )
        producers.append(tail)
        tail.start()
        handle = stack.submit(with_connection(spec, servers, spec_config), jobs, POLICY)
        submitted_at = time.monotonic()
        stack.log(NAME, f"driver {handle.pid} submitted with {servers}")
        after = stack.wait_committed_beyond(handle, checkpoint, last, START_TIMEOUT_S)
        first_batch_s = time.monotonic() - submitted_at
        stack.log(NAME, f"batch {after} committed {first_batch_s:.1f}s after the submit")
        result.check("first_batch_after_submit_s", True, round(first_batch_s, 1))
        tail.wait_ended(TAIL / TAIL_RATE + 180)
        stack.wait_caught_up(handle, checkpoint, live, [SOURCE], CATCH_UP_TIMEOUT_S)
        state = supervisor_state(checkpoint)
        restarts_2 = restarts_of(checkpoint)
        result.check(
            "restarts_after_decommission",
            restarts_2 <= POLICY.max_restarts and not state.get("gave_up", False),
            restarts_2,
        )
        stack.stop(handle, NAME)
        handle = None
        result.restarts = restarts_1 + restarts_2

        # -- exactly once ---------------------------------------------------------------------
        errors = [e for p in producers for e in p.errors]
        result.check("producer_errors", not errors, len(errors))
        expected = [v for p in producers for v in p.values]
        found = [v.decode() for v in stack.read_committed(live, SINK)]
        count = stack.OnceCount.of(expected, found)
        result.records_checked = count.checked
        result.duplicates = count.duplicates
        result.missing = count.missing
        result.check("unexpected", count.unexpected == 0, count.unexpected)
        stack.log(
            NAME,
            f"{count.checked} values: {count.duplicates} duplicates, {count.missing} missing, "
            f"{count.unexpected} unexpected",
        )
    except BaseException:
        if handle is not None:
            from kafkaspark_devstack.drivers import read_log

            stack.log(NAME, f"driver log tail:\n{read_log(handle, tail=120)}")
        raise
    finally:
        if watch.is_alive():
            watch.stop()
        for producer in producers:
            producer.stop()
        if handle is not None and pid_alive(handle.pid):
            stack.kill(handle)
        cluster.stop()
        for key, value in saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    return result
