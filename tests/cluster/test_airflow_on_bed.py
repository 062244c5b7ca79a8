"""The story of the README's example DAGs, run by Airflow's own services across hosts of the
bed, with the drivers on YARN:

    hosts:  airflow (PostgreSQL, api-server, scheduler, dag-processor)   triggerer
            worker1, worker2 (Edge workers)   rm, node1 (YARN)   kafka   s3   ops

`kafkaspark_deploy` runs on worker1 (a deployment: the submit and its health gate); the
driver's container is killed on its node and YARN restarts it; worker1 then goes away and
worker2 runs the rest: `kafkaspark_restart_window` (a deployment upgrade: the compatibility
check as a YARN application of its own, a stop with a savepoint, a partition added to the
source and written to while the job is stopped, the restore as a new YARN application that
reads it, the health gate), then a maintenance stop (`kafkaspark_stop`, waiting in the
triggerer) during which a fifth partition is added and written to, `kafkaspark_reconcile`
reporting it, `kafkaspark_deploy` bringing the job back to read it, and a last
`kafkaspark_stop`. The sink
is read `read_committed`: 0 duplicates, 0 missing. DAG runs are triggered and read through
the api-server's REST API from the ops host, as a person would.

Figures (seconds) go to `airflow_bed_figures.json` in the test's folder and are printed."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from airflow_provider_kafkaspark.examples.access_events import AccessEvent, generate_events
from airflow_provider_kafkaspark.examples.ip_count import expected_counts, sink_windows
from kafkaspark_devstack.netbed import NetBed
from tests.cluster.airflow_bed import AirflowOnBed, postgres_folder
from tests.cluster.bed_stack import BUCKET, KAFKASPARK, REPO, BedStack, wait

HOSTS = ["s3", "kafka", "rm", "node1", "airflow", "triggerer", "worker1", "worker2", "ops"]
SOURCE, SINK, JOB = "bed_source", "bed_sink", "bed_ip_count"
CHECKPOINT = f"s3://{BUCKET}/jobs/{JOB}/checkpoint"

# On the ops host during the restart window: once the stop has left its report, add a source
# partition and write to it while the job is down; print when the partition was added.
WHILE_STOPPED = """
import json, sys, time
from confluent_kafka.admin import AdminClient, NewPartitions
from airflow_provider_kafkaspark.core.control.folder import ControlFolder
from airflow_provider_kafkaspark.examples.access_events import AccessEvent, produce_events
bootstrap, topic, checkpoint, since_ms, rows = sys.argv[1:6]
control = ControlFolder(checkpoint)
deadline = time.monotonic() + 600
while time.monotonic() < deadline:
    stopped = control.read_stopped()
    if stopped is not None and stopped.stopped_at_ms >= int(since_ms):
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_partitions([NewPartitions(topic, 4)])[topic].result(60)
        added_ms = int(time.time() * 1000)
        produce_events(bootstrap, topic, [AccessEvent(*r) for r in json.load(open(rows))])
        print(json.dumps({"added_ms": added_ms}))
        sys.exit(0)
    time.sleep(0.2)
sys.exit("no stop report within 600 s")
"""
# On the ops host: what a browser following a link gets (redirects followed).
HTTP_STATUS = """
import sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=30) as answer:
    print(answer.status)
"""
ADD_PARTITION = """
import sys
from confluent_kafka.admin import AdminClient, NewPartitions
bootstrap, topic, count = sys.argv[1:4]
admin = AdminClient({"bootstrap.servers": bootstrap})
admin.create_partitions([NewPartitions(topic, int(count))])[topic].result(60)
"""


def iso_ms(text: str) -> int:
    return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)


def took_s(task: dict[str, Any]) -> float:
    return round((iso_ms(task["end_date"]) - iso_ms(task["start_date"])) / 1000, 1)


def test_example_dags_on_airflow_services_across_hosts(tmp_path: Path) -> None:
    figures: dict[str, Any] = {}
    with postgres_folder() as pg_dir, NetBed(tmp_path / "bed", HOSTS) as bed:
        run_story(bed, BedStack(bed), pg_dir, tmp_path, figures)
    (tmp_path / "airflow_bed_figures.json").write_text(json.dumps(figures, indent=2))
    print("Airflow bed figures:", json.dumps(figures))


def run_story(
    bed: NetBed, stack: BedStack, pg_dir: Path, tmp_path: Path, figures: dict[str, Any]
) -> None:
    on = stack.on
    t0 = time.monotonic()
    aws = stack.start_s3("s3")
    bootstrap = stack.start_kafka("kafka")
    stack.create_topics("kafka", 3, SOURCE, SINK)
    stack.start_yarn("rm", ["node1"], ["worker1", "worker2"], tmp_path / "bed" / "opt")

    # One Airflow deployment. The DAG files are the README's; their schedules are off, so
    # that only the runs below happen.
    dags = tmp_path / "dags"
    dags.mkdir()
    for name in ("deploy", "restart_window", "reconcile", "stop"):
        (dags / f"kafkaspark_{name}.py").symlink_to(REPO / "dags" / f"kafkaspark_{name}.py")
    airflow = AirflowOnBed(
        stack,
        pg_dir,
        dags,
        job=JOB,
        source=SOURCE,
        sink=SINK,
        bootstrap=bootstrap,
        settings={
            "KAFKASPARK_RESTART_WINDOW_SCHEDULE": "none",
            "KAFKASPARK_RECONCILE_SCHEDULE": "none",
        },
    )
    airflow.start_core()
    airflow.start("triggerer", "triggerer")
    airflow.start("worker1", "edge-worker")
    figures["bed_up_s"] = round(time.monotonic() - t0, 1)

    def dag_run(dag_id: str, timeout_s: float = 900) -> dict[str, Any]:
        run = airflow.dag_run(dag_id, timeout_s)
        figures.setdefault(f"{dag_id}_run_s", []).append(round(run["seconds"], 1))
        return run

    events = list(generate_events(6_000, seed=61))
    first, during_window, during_maintenance = events[:3_000], events[3_000:4_500], events[4_500:]
    stack.produce("ops", SOURCE, first)

    # Deploy on worker1: nothing runs, so a submit, then the health gate.
    deploy = dag_run("kafkaspark_deploy")
    assert deploy["tasks"]["deploy"]["hostname"] == "worker1"
    deployed = deploy["tasks"]["deploy"]["value"]
    assert (deployed["action"], deployed["status"]) == ("submit", "STABLE"), deployed
    handle = deployed["handle"]
    assert handle["mode"] == "yarn" and "pid" not in handle
    app_id = handle["job_ref"]["application_id"]
    # The deploy task instance links to its YARN application's page on the ResourceManager,
    # to the application's tracking URL (the RM's proxy in front of the driver's Spark UI)
    # and to the job's page; the first two answer from the ops host, as for a person.
    links = deploy["tasks"]["deploy"]["links"]
    rm = handle["job_ref"]["resource_manager"].split(",")[0].rstrip("/")
    assert links["YARN application"] == f"{rm}/cluster/app/{app_id}", links
    assert f"/proxy/{app_id}" in str(links["Spark UI"]), links  # the RM's own proxy
    assert str(links["Streaming job"]).startswith(f"http://airflow:8080/kafkaspark/jobs/{JOB}?")
    for name in ("YARN application", "Spark UI"):
        assert stack.python("ops", HTTP_STATUS, str(links[name])).strip() == "200", name

    # The driver's container dies on its node; YARN, not an Airflow host, starts it again.
    ref_text = json.dumps(handle["job_ref"])

    def status(ref: str = ref_text) -> dict[str, Any]:
        argv = [KAFKASPARK, "job", "status", ref, "--json"]
        return dict(json.loads(on("ops", argv, env=aws)))

    found = on("node1", ["pgrep", "-f", "yarn.ApplicationMaster"]).split()
    assert found and all(int(p) < 10_000 for p in found)  # pids of the node's own PID space
    killed = time.monotonic()
    on("node1", ["kill", "-9", *found])
    wait("YARN's second attempt", lambda: status().get("attempts", 0) >= 2, 300)
    figures["yarn_next_attempt_s"] = round(time.monotonic() - killed, 1)

    # The submit's worker goes away; another host's worker runs the rest.
    airflow.stop("worker1", "edge-worker")
    airflow.start("worker2", "edge-worker")

    # The restart window: stop with a savepoint, restore it as a new YARN application; while
    # the job is stopped, a partition is added to the source and written to.
    rows = bed.folder("ops") / "during_window.json"
    rows.write_text(json.dumps([[e.ip, e.event_time_ms, e.path, e.status] for e in during_window]))
    watch = [WHILE_STOPPED, bootstrap, SOURCE, CHECKPOINT, str(int(time.time() * 1000)), str(rows)]
    watcher = bed.popen(
        "ops",
        [sys.executable, "-c", *watch],
        cwd=str(bed.folder("ops")),
        env={**stack.base_env, **aws},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        window = dag_run("kafkaspark_restart_window")["tasks"]
        out, err = watcher.communicate(timeout=120)
    finally:
        if watcher.poll() is None:
            watcher.kill()
            watcher.wait(10)
    assert watcher.returncode == 0, err.decode()
    added_ms = json.loads(out.decode().strip().splitlines()[-1])["added_ms"]
    upgrade = window["upgrade"]
    assert upgrade["hostname"] == "worker2"
    result = upgrade["value"]
    assert (result["action"], result["status"]) == ("upgrade", "STABLE"), result
    # The partition was there before the restore, and the restore's reconcile saw it.
    restored = result["handle"]
    assert added_ms < iso_ms(upgrade["end_date"])
    assert "4 partitions" in restored["restored"]["reconcile"]
    assert restored["job_ref"]["application_id"] != app_id
    assert result["deployment"]["stable_savepoint"]
    timings = result["timings"]
    assert timings["compat_check_s"] > 0  # the check ran (on YARN) before the stop
    for step in ("compat_check", "stop", "savepoint", "submit", "health_gate"):
        figures[f"window_{step}_s"] = timings[f"{step}_s"]
    figures["window_run_s"] = took_s(upgrade)

    # Maintenance: stopped from worker2, a partition added and written to while the job is
    # down, the reconcile reports it, and the deploy brings the job back to read it.
    stopped = dag_run("kafkaspark_stop")["tasks"]["stop_with_savepoint"]
    assert stopped["hostname"] == "worker2" and stopped["value"]["stopped"]["clean"] is True
    # The stop ends in its task when the driver answers within its in-task wait (10 s), or
    # in the triggerer after; the deferred stop across hosts is test_airflow_faults_on_bed's.
    restored_ref = json.dumps(restored["job_ref"])
    wait("the application's end", lambda: status(restored_ref)["state"] == "FINISHED", 120)
    stack.python("ops", ADD_PARTITION, bootstrap, SOURCE, "5")
    stack.produce("ops", SOURCE, during_maintenance)
    reconcile = dag_run("kafkaspark_reconcile")["tasks"]["reconcile"]
    assert reconcile["hostname"] == "worker2"
    plan = reconcile["value"]
    new = [f for f in plan["findings"] if f["kind"] == "NEW_PARTITION"]
    assert [(f["topic"], f["partition"]) for f in new] == [(SOURCE, 4)], plan["findings"]
    again = dag_run("kafkaspark_deploy")["tasks"]["deploy"]
    assert again["hostname"] == "worker2" and again["value"]["action"] == "submit"
    again_ref = again["value"]["handle"]["job_ref"]
    assert again_ref["application_id"] not in (
        app_id,
        restored["job_ref"]["application_id"],
    )

    flush_ms = max(e.event_time_ms for e in events) + 60_000
    stack.produce("ops", SOURCE, [AccessEvent("255.255.255.255", flush_ms, "/", 200)])
    total = len(events) + 1

    def caught_up() -> bool:
        committed = stack.checkpoint_offsets("ops", CHECKPOINT, SOURCE)
        return len(committed) == 5 and sum(committed.values()) == total

    wait("the source read to its end, the new partition too", caught_up, 600)
    final = dag_run("kafkaspark_stop")["tasks"]["stop_with_savepoint"]
    assert final["hostname"] == "worker2"
    assert final["value"]["stopped"]["clean"] is True and final["value"]["savepoint_id"]
    last_ref = json.dumps(again_ref)
    wait("the last application's end", lambda: status(last_ref)["state"] == "FINISHED", 120)

    counts, duplicates = sink_windows(stack.read("kafka", SINK, 3))
    expected = expected_counts(events, closed_before_ms=flush_ms - 10_000)
    missing = sum(1 for key in expected if key not in counts)
    figures.update(duplicates=duplicates, missing=missing, windows=len(expected))
    assert duplicates == 0 and missing == 0
    assert counts == expected
    airflow.stop_all()
