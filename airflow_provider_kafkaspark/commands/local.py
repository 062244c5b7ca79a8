"""`kafkaspark local kafka|jars`: the local stack of real parts."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from airflow_provider_kafkaspark.commands.flags import with_example
from airflow_provider_kafkaspark.commands.output import EXIT_FINDINGS, EXIT_OK

DEFAULT_LOCAL_KAFKA_DIR = Path(".local") / "kafka"
DEFAULT_LOCAL_KAFKA_PORT = 9092


def add_parser(groups: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    local = groups.add_parser("local", help="the local stack: Kafka brokers, JVM jars")
    parts = local.add_subparsers(dest="part", required=True)

    kafka = parts.add_parser("kafka", help="a local Kafka cluster in KRaft mode")
    kafka.add_argument("action", choices=["start", "stop", "status", "kill", "restart"])
    kafka.add_argument("--dir", default=str(DEFAULT_LOCAL_KAFKA_DIR), help="cluster folder")
    kafka.add_argument("--brokers", type=int, default=1, help="nodes of a new cluster")
    kafka.add_argument(
        "--port",
        type=int,
        default=DEFAULT_LOCAL_KAFKA_PORT,
        help="first listener port of a new cluster (controllers at port+100)",
    )
    kafka.add_argument("--node", type=int, default=1, help="node id for kill/restart")
    kafka.add_argument("--timeout", type=float, default=90.0, help="seconds to wait for start")
    with_example(kafka, "kafkaspark local kafka start --brokers 3", "kafkaspark local kafka status")
    kafka.set_defaults(func=local_kafka)

    jars = parts.add_parser("jars", help="JVM jars resolved from Maven Central")
    jars.add_argument(
        "action",
        choices=["resolve", "archive"],
        help="resolve: fetch the jars; archive: build the class archives that make local "
        "Spark drivers and Kafka brokers start faster under KAFKASPARK_FAST_JVM=1",
    )
    jars.add_argument("--dir", default=None, help="jar cache folder (default .cache/jars)")
    with_example(jars, "kafkaspark local jars resolve", "kafkaspark local jars archive")
    jars.set_defaults(func=local_jars)


def local_kafka(args: argparse.Namespace) -> int:
    from airflow_provider_kafkaspark.local.kafka import STATE_FILE, LocalKafkaCluster

    base = Path(args.dir)
    if args.action == "start":
        if (base / STATE_FILE).is_file():
            cluster = LocalKafkaCluster.attach(base)
        else:
            cluster = LocalKafkaCluster(base, brokers=args.brokers, port=args.port)
        cluster.start(timeout=args.timeout)
        print(f"Kafka is up: bootstrap.servers={cluster.bootstrap_servers} (data in {base})")
        return EXIT_OK
    cluster = LocalKafkaCluster.attach(base)
    if args.action == "stop":
        cluster.stop()
        print(f"Kafka stopped (data kept in {base})")
    elif args.action == "status":
        status = cluster.status()
        print(json.dumps(status, indent=2))
        return EXIT_OK if all(n["running"] for n in status["nodes"]) else EXIT_FINDINGS
    elif args.action == "kill":
        cluster.kill_broker(args.node)
        print(f"Kafka node {args.node} killed")
    elif args.action == "restart":
        cluster.start_broker(args.node, timeout=args.timeout)
        print(f"Kafka node {args.node} is up at {cluster.node(args.node).address}")
    return EXIT_OK


def local_jars(args: argparse.Namespace) -> int:
    from airflow_provider_kafkaspark.local.jars import resolve_jars
    from airflow_provider_kafkaspark.local.jvm_archive import KINDS, build_archive

    jars_dir = Path(args.dir) if args.dir else None
    if args.action == "archive":
        for kind in KINDS:
            print(f"{kind}: {build_archive(kind, jars_dir)}")
        return EXIT_OK
    for bundle, folder in resolve_jars(jars_dir).items():
        print(f"{bundle}: {folder}")
    return EXIT_OK
