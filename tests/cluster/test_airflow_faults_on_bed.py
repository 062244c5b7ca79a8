"""Airflow hosts lost in the middle of a task, on Airflow's own services across hosts of the
bed, with the driver on YARN:

    hosts:  airflow (PostgreSQL, api-server, scheduler, dag-processor)   triggerer
            worker1, worker2 (Edge workers)   rm, node1 (YARN)   kafka   s3   ops

1. worker1 loses power in the middle of a submit: the ResourceManager has accepted the
   application, the task has not returned. The scheduler finds the task without a heartbeat
   and retries it on worker2, which must take up that application (the submit's marker
   and its YARN tag name it) instead of starting a second one.
2. The triggerer host loses power while the health sensor waits there, and boots again;
   the new triggerer runs the wait to its true end (healthy).
3. The ResourceManager crashes and starts again under the running job (work-preserving
   recovery): the same application, attempt and driver go on and read what came meanwhile.
4. The triggerer host loses power while the maintenance stop (`kafkaspark_stop`) waits
   there: the stop ends clean, with its savepoint.

The sink is read `read_committed`: 0 duplicates, 0 missing; the lease's history, from the
versions S3 kept of it, shows no driver writing it after another had taken it, and no
checkpoint file was written twice. Figures (seconds) go to `airflow_faults_figures.json` in
the test's folder, are printed, and (as the fault tier's) to `artifacts/across_hosts.json`."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from airflow_provider_kafkaspark.examples.access_events import AccessEvent, generate_events
from airflow_provider_kafkaspark.examples.ip_count import expected_counts, sink_windows
from kafkaspark_devstack.netbed import NetBed
from tests.cluster.airflow_bed import AirflowOnBed, postgres_folder
from tests.cluster.bed_stack import BUCKET, KAFKASPARK, REPO, BedStack, wait
from tests.faults.figures import record
from tests.faults.scenario import (
    enable_versions,
    lease_history,
    object_versions,
    rewritten_checkpoint_files,
)

HOSTS = ["s3", "kafka", "rm", "node1", "airflow", "triggerer", "worker1", "worker2", "ops"]
SOURCE, SINK, JOB = "fault_source", "fault_sink", "fault_ip_count"
CHECKPOINT = f"s3://{BUCKET}/jobs/{JOB}/checkpoint"

# On the ops host: the ResourceManager's applications of a name, in any state.
RM_APPS = """
import json, sys, urllib.request
rm, name = sys.argv[1:3]
with urllib.request.urlopen(f"{rm}/ws/v1/cluster/apps", timeout=10) as answer:
    apps = (json.load(answer).get("apps") or {}).get("app") or []
print(json.dumps([{k: a[k] for k in ("id", "state", "applicationTags")} for a in apps
                  if a["name"] == name]))
"""


def test_workers_and_the_triggerer_lost_mid_task(tmp_path: Path) -> None:
    figures: dict[str, Any] = {}
    with postgres_folder() as pg_dir, NetBed(tmp_path / "bed", HOSTS) as bed:
        run_faults(bed, BedStack(bed), pg_dir, tmp_path, figures)
    (tmp_path / "airflow_faults_figures.json").write_text(json.dumps(figures, indent=2))
    print("Airflow faults figures:", json.dumps(figures))


def run_faults(
    bed: NetBed, stack: BedStack, pg_dir: Path, tmp_path: Path, figures: dict[str, Any]
) -> None:
    on = stack.on
    t0 = time.monotonic()
    aws = stack.start_s3("s3")
    enable_versions(stack, "ops")
    bootstrap = stack.start_kafka("kafka")
    stack.create_topics("kafka", 3, SOURCE, SINK)
    stack.start_yarn("rm", ["node1"], ["worker1", "worker2"], tmp_path / "bed" / "opt")
    resource_manager = stack.spark_connection["extra"]["yarn_resourcemanager_webapp_address"]

    dags = tmp_path / "dags"
    dags.mkdir()
    (dags / "kafkaspark_fault_submit.py").symlink_to(
        REPO / "tests" / "cluster" / "dags" / "kafkaspark_fault_submit.py"
    )
    (dags / "kafkaspark_stop.py").symlink_to(REPO / "dags" / "kafkaspark_stop.py")
    airflow = AirflowOnBed(
        stack,
        pg_dir,
        dags,
        job=JOB,
        source=SOURCE,
        sink=SINK,
        bootstrap=bootstrap,
        # A task whose worker is gone is failed (and retried) after 30 s without a
        # heartbeat; a triggerer silent for 15 s loses its triggers to a live one.
        settings={
            "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT": "30",
            "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT_DETECTION_INTERVAL": "5",
            "AIRFLOW__TRIGGERER__TRIGGERER_HEALTH_CHECK_THRESHOLD": "15",
            # Scenario 4 powers the triggerer off under a deferred stop: defer at once.
            "KAFKASPARK_STOP_WAIT_IN_TASK_S": "none",
        },
    )
    airflow.start_core()
    airflow.start("triggerer", "triggerer")
    airflow.start("worker1", "edge-worker")
    figures["bed_up_s"] = round(time.monotonic() - t0, 1)

    def applications() -> list[dict[str, Any]]:
        return list(json.loads(stack.python("ops", RM_APPS, resource_manager, JOB)))

    def lose_triggerer() -> tuple[float, float]:
        """The triggerer's host loses power and boots again; its triggerer starts anew.
        Returns when it was lost, and for how long no triggerer ran there."""
        bed.kill_host("triggerer")
        airflow.forget("triggerer")
        lost = time.monotonic()
        bed.boot_host("triggerer")
        airflow.start("triggerer", "triggerer")
        return lost, round(time.monotonic() - lost, 1)

    def status(ref: str) -> dict[str, Any]:
        return dict(json.loads(on("ops", [KAFKASPARK, "job", "status", ref, "--json"], env=aws)))

    events = list(generate_events(4_000, seed=67))
    stack.produce("ops", SOURCE, events)

    # 1. worker1 dies once the ResourceManager has the application: spark-submit has handed
    # it over, the task has not returned (nor recorded it, most likely).
    run_id = airflow.trigger("kafkaspark_fault_submit")
    accepted = wait("the submit's application at the RM", applications, 300, pause_s=0.2)
    bed.kill_host("worker1")
    airflow.forget("worker1")
    killed = time.monotonic()
    airflow.start("worker2", "edge-worker")

    # 2. The health sensor waits in the triggerer; that host loses power.
    wait(
        "the health sensor deferred",
        lambda: airflow.task_state("kafkaspark_fault_submit", run_id, "healthy") == "deferred",
        600,
        pause_s=1,
    )
    figures["submit_retried_s"] = round(time.monotonic() - killed, 1)
    lost, figures["triggerer_down_health_s"] = lose_triggerer()
    submitted = airflow.finished("kafkaspark_fault_submit", run_id)["tasks"]
    figures["health_wait_after_triggerer_loss_s"] = round(time.monotonic() - lost, 1)

    submit, healthy = submitted["submit"], submitted["healthy"]
    assert submit["try_number"] == 2 and submit["hostname"] == "worker2", submit
    handle = submit["value"]
    assert handle["adopted"] is True, handle
    (app,) = applications()  # one application: the first try's, taken up by the second
    assert app["id"] == accepted[0]["id"] == handle["job_ref"]["application_id"]
    assert app["state"] == "RUNNING"
    assert healthy["value"]["state"] == "healthy", healthy
    figures["applications"] = 1

    def read_all(count: int) -> bool:
        return sum(stack.checkpoint_offsets("ops", CHECKPOINT, SOURCE).values()) == count

    # 3. The ResourceManager crashes and starts again; what is written meanwhile is read by
    # the same attempt of the same application.
    ref = json.dumps(handle["job_ref"])
    wait("the first events read", lambda: read_all(len(events)), 300)
    restarted = time.monotonic()
    on("rm", [KAFKASPARK, "local", "yarn", "restart-rm", "--dir", str(bed.folder("rm"))])
    figures["rm_down_s"] = round(time.monotonic() - restarted, 1)
    later = list(generate_events(1_000, seed=68, start_ms=events[-1].event_time_ms + 1))
    stack.produce("ops", SOURCE, later)
    events += later
    wait("the application RUNNING again", lambda: status(ref)["state"] == "RUNNING", 180)
    again = status(ref)
    assert again["attempts"] == 1 and again["alive"] is True, again
    wait("what came during the restart read", lambda: read_all(len(events)), 300)
    figures["rm_restart_to_read_s"] = round(time.monotonic() - restarted, 1)

    # All the input read before the stop: the flush event closes the last windows.
    flush_ms = max(e.event_time_ms for e in events) + 60_000
    stack.produce("ops", SOURCE, [AccessEvent("255.255.255.255", flush_ms, "/", 200)])
    wait("the source read to its end", lambda: read_all(len(events) + 1), 600)

    # 4. The maintenance stop waits in the triggerer; that host loses power again.
    stop_id = airflow.trigger("kafkaspark_stop")
    wait(
        "the stop deferred",
        lambda: airflow.task_state("kafkaspark_stop", stop_id, "stop_with_savepoint") == "deferred",
        300,
        pause_s=0.5,
    )
    lost, figures["triggerer_down_stop_s"] = lose_triggerer()
    stopped = airflow.finished("kafkaspark_stop", stop_id)["tasks"]["stop_with_savepoint"]
    figures["stop_after_triggerer_loss_s"] = round(time.monotonic() - lost, 1)
    assert stopped["value"]["stopped"]["clean"] is True and stopped["value"]["savepoint_id"]
    wait("the application's end", lambda: applications()[0]["state"] == "FINISHED", 120)

    counts, duplicates = sink_windows(stack.read("kafka", SINK, 3))
    expected = expected_counts(events, closed_before_ms=flush_ms - 10_000)
    missing = sum(1 for key in expected if key not in counts)
    figures.update(duplicates=duplicates, missing=missing, windows=len(expected))
    versions = object_versions(stack, f"jobs/{JOB}/checkpoint", "ops")
    history = lease_history(versions)
    rewritten = rewritten_checkpoint_files(versions)
    figures.update(holders=len(history.owners), holders_at_most=history.holders_at_most)
    assert duplicates == 0 and missing == 0
    assert counts == expected
    assert history.holders_at_most == 1, history
    assert rewritten == [], rewritten
    checked = {
        "records": len(events) + 1,
        "duplicates": duplicates,
        "missing": missing,
        "holders_at_most": history.holders_at_most,
        "checkpoint_files_rewritten": len(rewritten),
        "windows": len(expected),
    }
    record(
        "Airflow worker lost mid-submit",
        **checked,
        recover_s=figures["submit_retried_s"],
        applications=figures["applications"],
    )
    record(
        "triggerer lost during a deferred health wait",
        **checked,
        fault_s=figures["triggerer_down_health_s"],
        recover_s=figures["health_wait_after_triggerer_loss_s"],
    )
    record(
        "ResourceManager restarted under the job",
        **checked,
        fault_s=figures["rm_down_s"],
        recover_s=figures["rm_restart_to_read_s"],
    )
    record(
        "triggerer lost during a deferred stop",
        **checked,
        fault_s=figures["triggerer_down_stop_s"],
        recover_s=figures["stop_after_triggerer_loss_s"],
    )
    airflow.stop_all()
