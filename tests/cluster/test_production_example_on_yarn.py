"""The YARN production example (`examples/production/yarn/`) run as shipped, on the bed:

    hosts:  s3   kafka   rm, node1 (YARN)   airflow (the Airflow side: its CLI and spark-submit)

The Airflow side is installed as the README says (the built wheel, its extras and Airflow 3
in an empty virtualenv). The example's DAG folder, job package and `connections.env` are
used as they are; only the addresses, the credentials, the bucket and the jar paths are
substituted. `airflow dags test` runs the
deploy DAG on the airflow host (a submit to YARN in cluster mode, the health gate), then the
restart window DAG (an upgrade with a warm handover: a second YARN application takes over);
the per-minute page views are read `read_committed` after each and must be exactly the
clicks produced, none twice. The job is stopped from the checkpoint alone."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

from airflow_provider_kafkaspark.spark.local_session import spark_jars_option
from kafkaspark_devstack.netbed import NetBed
from tests.cluster.bed_stack import BUCKET, BedStack, wait
from tests.integration.wheel_util import airflow_virtualenv
from tests.production_example import (
    EXAMPLES,
    JOB_NAME,
    SINK,
    SOURCE,
    example_connections,
    s3_compatible_aws,
)

HOSTS = ["s3", "kafka", "rm", "node1", "airflow"]
EXAMPLE = EXAMPLES / "yarn"

# On a bed host (the test's namespace does not reach the bed's addresses).
PRODUCE = """
import json, sys
from tests.production_example import produce_clicks
start, stop, per_minute = map(int, sys.argv[2:5])
counts = produce_clicks(sys.argv[1], range(start, stop), per_minute)
print(json.dumps([[*key, views] for key, views in counts.items()]))
"""
IMPORTED = "import airflow_provider_kafkaspark as p; print(p.__file__)"
READ = """
import json, sys
from tests.production_example import page_views
print(json.dumps([[*key, views] for key, views in page_views(sys.argv[1]).items()]))
"""


def counted(rows: list[list[Any]]) -> Counter[tuple[str, str]]:
    return Counter({(start, page): int(views) for start, page, views in rows})


def connections(stack: BedStack, rm: str) -> dict[str, str]:
    """The example's connections with the bed's addresses and the store's keys."""
    given = example_connections(EXAMPLE / "connections.env")
    kafka = given["AIRFLOW_CONN_KAFKA_CLICKSTREAM"]
    kafka["extra"]["bootstrap.servers"] = stack.bootstrap
    spark = given["AIRFLOW_CONN_SPARK_YARN"]
    spark["extra"]["yarn_resourcemanager_webapp_address"] = f"http://{stack.addr[rm]}:8088"
    aws = s3_compatible_aws(given, stack.s3_connection)
    chosen = {
        "AIRFLOW_CONN_KAFKA_CLICKSTREAM": kafka,
        "AIRFLOW_CONN_SPARK_YARN": spark,
        "AIRFLOW_CONN_AWS_STREAMING": aws,
    }
    return {name: json.dumps(value) for name, value in chosen.items()}


def dags_test(stack: BedStack, dag_id: str, env: dict[str, str]) -> str:
    """`airflow dags test` on the airflow host: what it printed, task logs included."""
    argv = ["sh", "-c", f"exec airflow dags test {dag_id} 2>&1"]
    return stack.on("airflow", argv, env=env, timeout=900)


def test_the_yarn_example_deploys_and_restarts_as_shipped(tmp_path: Path) -> None:
    with NetBed(tmp_path / "bed", HOSTS) as bed:
        stack = BedStack(bed)
        aws = stack.start_s3("s3")
        bootstrap = stack.start_kafka("kafka")
        stack.create_topics("kafka", 3, SOURCE)
        stack.create_topics("kafka", 2, SINK)
        stack.start_yarn("rm", ["node1"], ["airflow"], tmp_path / "bed" / "opt")
        state = f"s3://{BUCKET}/{tmp_path.name}"
        # The Airflow side as a team installs it: the wheel and its extras in an empty
        # virtualenv, its `airflow`, `kafkaspark` and `spark-submit` first on the path,
        # nothing of the source tree on it.
        venv = airflow_virtualenv(tmp_path / "install")
        env = {
            "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}",
            "PYTHONPATH": "",
            "AIRFLOW__CORE__DAGS_FOLDER": str(EXAMPLE / "dags"),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "CLICKSTREAM_STATE_URL": state,
            # The jars as the airflow host has them (the example's default names the nodes'
            # folder, where a cluster's image puts them): the submit stages them on S3.
            "CLICKSTREAM_JARS": spark_jars_option(s3a=True),
            **stack.client_env["airflow"],
            **connections(stack, "rm"),
        }

        def views() -> Counter[tuple[str, str]]:
            return counted(json.loads(stack.python("airflow", READ, bootstrap, timeout=120)))

        def produce(start: int, stop: int, per_minute: int) -> Counter[tuple[str, str]]:
            out = stack.python(
                "airflow", PRODUCE, bootstrap, str(start), str(stop), str(per_minute)
            )
            return counted(json.loads(out))

        expected = produce(0, 4, 120)
        stack.on("airflow", ["airflow", "db", "migrate"], env=env, timeout=300)
        where = stack.on("airflow", ["python", "-c", IMPORTED], env=env)
        assert where.startswith(str(venv)), where
        checkpoint = f"{state}/{JOB_NAME}/checkpoint"
        try:
            deployed = dags_test(stack, "clickstream_deploy", env)
            assert f"deploy of {JOB_NAME}: submit" in deployed, deployed[-3000:]
            wait("the first minutes' page views", lambda: views() == expected, 300, 5)

            window = dags_test(stack, "clickstream_restart_window", env)
            assert f"deploy of {JOB_NAME}: upgrade" in window, window[-3000:]
            expected += produce(30, 33, 100)

            def settled() -> bool:
                seen = views()
                return seen == expected or any(seen[k] > expected[k] for k in seen)

            wait("the page views after the restart window", settled, 300, 5)
            assert views() == expected  # every click counted once, across the upgrade
        finally:
            stop = ["kafkaspark", "job", "stop", "--job", JOB_NAME, "--checkpoint", checkpoint]
            stack.on("airflow", stop, env={**env, **aws}, timeout=300)
