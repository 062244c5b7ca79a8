"""The Kubernetes production example (`examples/production/kubernetes/`) run as shipped, by
an Airflow side installed as the README says (the built wheel, its extras and Airflow 3 in
an empty virtualenv): its DAG folder, job package and `connections.env`, with only the
addresses, the credentials, the bucket and the image substituted (the tier's image is kept
in step with the example's Dockerfile by tests/unit/test_production_examples.py).
`airflow dags test` runs the deploy DAG (submit, health gate), then the restart window DAG
(an upgrade with a warm handover: the window's run id is part of the spec's identity); the
per-minute page views the job writes are read `read_committed` after each and must be
exactly the clicks produced, none twice. The job is stopped with the CLI from the checkpoint
alone."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from kafkaspark_devstack.k8s.cluster import LocalKubernetesCluster
from kafkaspark_devstack.kafka import LocalKafkaCluster
from kafkaspark_devstack.s3 import LocalS3Server
from tests.cluster.yarn_apps import wait
from tests.integration.kafka_util import create_topic
from tests.integration.wheel_util import airflow_virtualenv
from tests.k8s.k8s_stack import BUCKET, NAMESPACE, airflow_kubeconfig, make_namespace
from tests.production_example import (
    EXAMPLES,
    JOB_NAME,
    SINK,
    SINK_PARTITIONS,
    SOURCE,
    example_connections,
    page_views,
    produce_clicks,
    s3_compatible_aws,
)

EXAMPLE = EXAMPLES / "kubernetes"


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
    aws = s3_compatible_aws(given, s3.aws_connection())
    chosen = {
        "AIRFLOW_CONN_KAFKA_CLICKSTREAM": kafka_conn,
        "AIRFLOW_CONN_SPARK_K8S": spark,
        "AIRFLOW_CONN_KUBERNETES_DEFAULT": kube,
        "AIRFLOW_CONN_AWS_STREAMING": aws,
    }
    return {name: json.dumps(value) for name, value in chosen.items()}


def airflow(bin_dir: Path, env: dict[str, str], *args: str, timeout: float = 900) -> str:
    proc = subprocess.run(
        [str(bin_dir / "airflow"), *args],
        cwd=bin_dir,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
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
    create_topic(bootstrap, SINK, SINK_PARTITIONS)
    make_namespace(k8s)
    kubeconfig = airflow_kubeconfig(k8s, tmp_path / "airflow.kubeconfig")
    state = f"s3://{BUCKET}/{tmp_path.name}"
    # The Airflow side as a team installs it: the wheel and its extras in an empty virtualenv.
    bin_dir = airflow_virtualenv(tmp_path / "install") / "bin"
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("AWS_", "AIRFLOW_CONN_", "PYTHONPATH", "VIRTUAL_ENV"))
    }
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
    airflow(bin_dir, env, "db", "migrate", timeout=300)
    try:
        deployed = airflow(bin_dir, env, "dags", "test", "clickstream_deploy")
        assert f"deploy of {JOB_NAME}: submit" in deployed, deployed[-3000:]
        wait(
            "the first minutes' page views",
            lambda: page_views(bootstrap),
            lambda v: v == expected,
            300,
        )

        window = airflow(bin_dir, env, "dags", "test", "clickstream_restart_window")
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
            [
                str(bin_dir / "kafkaspark"),
                "job",
                "stop",
                "--job",
                JOB_NAME,
                "--checkpoint",
                checkpoint,
            ],
            env=stop_env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert stopped.returncode == 0, stopped.stderr
