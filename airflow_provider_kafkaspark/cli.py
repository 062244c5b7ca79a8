"""`kafkaspark`: the package's capabilities for a person at a terminal."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from airflow_provider_kafkaspark.errors import KafkaSparkError

DEFAULT_LOCAL_KAFKA_DIR = Path(".local") / "kafka"
DEFAULT_LOCAL_KAFKA_PORT = 9092


def _local_kafka(args: argparse.Namespace) -> int:
    from airflow_provider_kafkaspark.local.kafka import STATE_FILE, LocalKafkaCluster

    base = Path(args.dir)
    if args.action == "start":
        if (base / STATE_FILE).is_file():
            cluster = LocalKafkaCluster.attach(base)
        else:
            cluster = LocalKafkaCluster(base, brokers=args.brokers, port=args.port)
        cluster.start(timeout=args.timeout)
        print(f"Kafka is up: bootstrap.servers={cluster.bootstrap_servers} (data in {base})")
        return 0
    cluster = LocalKafkaCluster.attach(base)
    if args.action == "stop":
        cluster.stop()
        print(f"Kafka stopped (data kept in {base})")
    elif args.action == "status":
        status = cluster.status()
        print(json.dumps(status, indent=2))
        return 0 if all(n["running"] for n in status["nodes"]) else 3
    elif args.action == "kill":
        cluster.kill_broker(args.node)
        print(f"Kafka node {args.node} killed")
    elif args.action == "restart":
        cluster.start_broker(args.node, timeout=args.timeout)
        print(f"Kafka node {args.node} is up at {cluster.node(args.node).address}")
    return 0


def _local_jars(args: argparse.Namespace) -> int:
    from airflow_provider_kafkaspark.local.jars import resolve_jars

    for bundle, folder in resolve_jars(Path(args.dir) if args.dir else None).items():
        print(f"{bundle}: {folder}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kafkaspark",
        description="Lifecycle control for Spark Structured Streaming jobs that read Kafka.",
    )
    groups = parser.add_subparsers(dest="group", required=True)

    local = groups.add_parser("local", help="the local stack: Kafka brokers, JVM jars")
    local_parts = local.add_subparsers(dest="part", required=True)

    kafka = local_parts.add_parser("kafka", help="a local Kafka cluster in KRaft mode")
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
    kafka.set_defaults(func=_local_kafka)

    jars = local_parts.add_parser("jars", help="JVM jars resolved from Maven Central")
    jars.add_argument("action", choices=["resolve"])
    jars.add_argument("--dir", default=None, help="jar cache folder (default .cache/jars)")
    jars.set_defaults(func=_local_jars)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except KafkaSparkError as exc:
        print(f"kafkaspark: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
