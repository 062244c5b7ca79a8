"""The Kubernetes production example (`examples/production/kubernetes/`) run as shipped: its
DAG folder, its job package and its `connections.env`, with only the addresses, the
credentials, the bucket and the image substituted (the tier's image is kept in step with the
example's Dockerfile by tests/unit/test_production_examples.py). `airflow dags test` runs the
deploy DAG (submit, health gate), then the restart window DAG (an upgrade with a warm
handover: the window's run id is part of the spec's identity); the per-minute page views the
job writes are read `read_committed` after each and must be exactly the clicks produced,
none twice. The job is stopped with the CLI from the checkpoint alone."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from confluent_kafka import Producer

from kafkaspark_devstack.k8s.cluster import LocalKubernetesCluster
from kafkaspark_devstack.kafka import LocalKafkaCluster
from kafkaspark_devstack.s3 import LocalS3Server
from tests.cluster.yarn_apps import wait
from tests.integration.kafka_util import create_topic, read_all_values
from tests.k8s.k8s_stack import BUCKET, NAMESPACE, airflow_kubeconfig, make_namespace

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "production" / "kubernetes"
JOB_NAME = "clickstream_page_views"
SOURCE, SINK = "clickstream.events", "clickstream.page_views_per_minute"
BIN = Path(sys.executable).parent
# 2026-01-01T00:00:00Z: the clicks' event time starts here.
BASE_MS = 1_767_225_600_000
MINUTE_MS = 60_000
PAGES = ("/", "/pricing", "/docs", "/blog", "/signup")


def example_connections(path: Path) -> dict[str, dict[str, Any]]:
    """The file's AIRFLOW_CONN_* values by variable, the active lines and (under the same
    name, suffixed by their place) the commented alternatives."""
    found: dict[str, dict[str, Any]] = {}
    for line in path.read_text().splitlines():
        match = re.match(r"^(#\s*)?(AIRFLOW_CONN_\w+)=(.*)$", line.strip())
        if not match:
            continue
        name = match.group(2) if not match.group(1) else f"{match.group(2)}#{len(found)}"
        found[name] = json.loads(shlex.split(match.group(3))[0])
    return found


def substituted(
    path: Path, k8s: LocalKubernetesCluster, kafka: str, s3: LocalS3Server, kubeconfig: Path
) -> dict[str, str]:
    """The example's connections with this cluster's addresses and credentials."""
    given = example_connections(path)
    kafka_conn = given["AIRFLOW_CONN_KAFKA_CLICKSTREAM"]
    kafka_conn["extra"]["bootstrap.servers"] = kafka
    spark = given["AIRFLOW_CONN_SPARK_K8S"]
    spark["host"] = f"k8s://{k8s.server}"
    spark["extra"]["namespace"] = NAMESPACE
    kube = given["AIRFLOW_CONN_KUBERNETES_DEFAULT"]
    kube["extra"]["kube_config_path"] = str(kubeconfig)
    # The example's alternative for an S3-compatible store, with this one's keys and endpoint.
    (aws,) = [
        v
        for k, v in given.items()
        if k.startswith("AIRFLOW_CONN_AWS_STREAMING#") and "endpoint_url" in v.get("extra", {})
    ]
    ours = s3.aws_connection()
    aws.update(login=ours["login"], password=ours["password"])
    aws["extra"].update(ours["extra"])
    chosen = {
        "AIRFLOW_CONN_KAFKA_CLICKSTREAM": kafka_conn,
        "AIRFLOW_CONN_SPARK_K8S": spark,
        "AIRFLOW_CONN_KUBERNETES_DEFAULT": kube,
        "AIRFLOW_CONN_AWS_STREAMING": aws,
    }
    return {name: json.dumps(value) for name, value in chosen.items()}


def produce_clicks(bootstrap: str, minutes: range, per_minute: int) -> Counter[tuple[str, str]]:
    """Clicks in each minute of `minutes` (after BASE_MS); the views per (minute, page)."""
    producer = Producer({"bootstrap.servers": bootstrap})
    counts: Counter[tuple[str, str]] = Counter()
    for minute in minutes:
        for i in range(per_minute):
            page = PAGES[(i * 7 + minute) % len(PAGES)]
            ts = BASE_MS + minute * MINUTE_MS + (i * 997) % MINUTE_MS
            click = {"page": page, "user_id": f"u-{i % 50}", "ts": ts}
            producer.produce(SOURCE, json.dumps(click).encode(), key=page.encode())
            counts[(iso(BASE_MS + minute * MINUTE_MS), page)] += 1
    # A click far later in event time moves the watermark past every minute above.
    flush = {"page": "/flush", "user_id": "u-0", "ts": BASE_MS + (minutes.stop + 10) * MINUTE_MS}
    producer.produce(SOURCE, json.dumps(flush).encode())
    assert producer.flush(30) == 0
    return counts


def iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def page_views(bootstrap: str) -> Counter[tuple[str, str]]:
    """The sink's (window start, page) rows, counted by how often each was written, with the
    views each says; a row written twice shows as a second entry."""
    seen: Counter[tuple[str, str]] = Counter()
    for value in read_all_values(bootstrap, SINK, 2):
        row = json.loads(value)
        if row["page"] != "/flush":
            seen[(row["window_start"], row["page"])] += int(row["views"])
    return seen


def airflow(env: dict[str, str], *args: str, timeout: float = 900) -> str:
    proc = subprocess.run(
        [str(BIN / "airflow"), *args], env=env, capture_output=True, text=True, timeout=timeout
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"airflow {' '.join(args)} failed:\n{output[-6000:]}"
    return output


def test_the_kubernetes_example_deploys_and_restarts_as_shipped(
    k8s: LocalKubernetesCluster,
    bridge_kafka: LocalKafkaCluster,
    bridge_s3: LocalS3Server,
    tmp_path: Path,
) -> None:
    bootstrap = bridge_kafka.bootstrap_servers
    create_topic(bootstrap, SOURCE, 3)
    create_topic(bootstrap, SINK, 2)
    make_namespace(k8s)
    kubeconfig = airflow_kubeconfig(k8s, tmp_path / "airflow.kubeconfig")
    state = f"s3://{BUCKET}/{tmp_path.name}"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "AIRFLOW_CONN_"))}
    env.pop("KUBECONFIG", None)
    env.update(
        {
            "AIRFLOW_HOME": str(tmp_path / "airflow"),
            "AIRFLOW__CORE__DAGS_FOLDER": str(EXAMPLE / "dags"),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "CLICKSTREAM_STATE_URL": state,
            "CLICKSTREAM_DRIVER_IMAGE": k8s.driver_image,
            "CLICKSTREAM_PULL_SECRET": "",
            **substituted(EXAMPLE / "connections.env", k8s, bootstrap, bridge_s3, kubeconfig),
        }
    )
    checkpoint = f"{state}/{JOB_NAME}/checkpoint"
    stop_env = {**env, **bridge_s3.aws_environment(), "KUBECONFIG": str(kubeconfig)}
    expected = produce_clicks(bootstrap, range(0, 4), 120)
    airflow(env, "db", "migrate", timeout=300)
    try:
        deployed = airflow(env, "dags", "test", "clickstream_deploy")
        assert f"deploy of {JOB_NAME}: submit" in deployed, deployed[-3000:]
        wait(
            "the first minutes' page views",
            lambda: page_views(bootstrap),
            lambda v: v == expected,
            300,
        )

        window = airflow(env, "dags", "test", "clickstream_restart_window")
        assert f"deploy of {JOB_NAME}: upgrade" in window, window[-3000:]
        expected += produce_clicks(bootstrap, range(30, 33), 100)
        seen = wait(
            "the page views after the restart window",
            lambda: page_views(bootstrap),
            lambda v: v == expected or any(v[k] > expected[k] for k in v),
            300,
        )
        assert seen == expected  # every click counted once, across the upgrade
    finally:
        stopped = subprocess.run(
            [str(BIN / "kafkaspark"), "job", "stop", "--job", JOB_NAME, "--checkpoint", checkpoint],
            env=stop_env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert stopped.returncode == 0, stopped.stderr
