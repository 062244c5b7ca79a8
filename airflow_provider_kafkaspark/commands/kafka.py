"""`kafkaspark kafka probe-bootstrap` and `kafkaspark reconcile`."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from airflow_provider_kafkaspark.commands.flags import (
    add_shared,
    kafka_config_file,
    wants_json,
    with_example,
)
from airflow_provider_kafkaspark.commands.output import (
    EXIT_FINDINGS,
    EXIT_OK,
    emit_json,
    key_values,
    table,
)
from airflow_provider_kafkaspark.errors import InvalidInputError


def _add_kafka_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bootstrap-servers", required=True, help="host:port[,host:port...]")
    add_shared(parser, kafka_config_file=True)
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds per Kafka request")


def kafka_config(args: argparse.Namespace) -> dict[str, Any]:
    config: dict[str, Any] = {}
    file = kafka_config_file(args)
    if file:
        path = Path(file)
        try:
            lines = path.read_text().splitlines()
        except OSError as exc:
            raise InvalidInputError(f"{path}: cannot read ({exc.strerror})") from exc
        for number, line in enumerate(lines, 1):
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            if "=" not in text:
                raise InvalidInputError(f"{path}:{number}: expected key=value")
            key, value = text.split("=", 1)
            config[key.strip()] = value.strip()
    config["bootstrap.servers"] = args.bootstrap_servers
    from airflow_provider_kafkaspark.core.kafka.security import check

    check(config, f"Kafka settings of {file}" if file else "Kafka settings")
    return config


def add_parser(groups: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    kafka = groups.add_parser("kafka", help="questions to a Kafka cluster")
    add_shared(kafka, kafka_config_file=True)
    actions = kafka.add_subparsers(dest="action", required=True)
    probe = actions.add_parser(
        "probe-bootstrap", help="check each bootstrap server on its own (dead entries?)"
    )
    _add_kafka_options(probe)
    with_example(
        probe,
        "kafkaspark kafka probe-bootstrap --bootstrap-servers b1:9092,b2:9092 --json",
        "kafkaspark kafka probe-bootstrap --bootstrap-servers b1:9093 "
        "--kafka-config-file ~/.kafka/sasl.properties",
    )
    probe.set_defaults(func=probe_bootstrap, timeout=5.0)

    reconcile = groups.add_parser(
        "reconcile", help="compare a checkpoint's offsets with Kafka's partitions and retention"
    )
    reconcile.add_argument("checkpoint", help="checkpoint URL or path")
    reconcile.add_argument(
        "--subscribe", default="", help="topics the job reads (comma-separated), if not all known"
    )
    reconcile.add_argument(
        "--fail-on",
        choices=["INFO", "WARNING", "CRITICAL"],
        default="CRITICAL",
        help="findings of this severity or worse make the exit code 3",
    )
    _add_kafka_options(reconcile)
    with_example(
        reconcile,
        "kafkaspark reconcile /data/checkpoints/clicks --bootstrap-servers b1:9092 "
        "--subscribe clicks --fail-on WARNING",
    )
    reconcile.set_defaults(func=reconcile_checkpoint)


def probe_bootstrap(args: argparse.Namespace) -> int:
    from airflow_provider_kafkaspark.core.kafka.bootstrap_probe import probe_bootstrap as probe

    report = probe(kafka_config(args), timeout_s=args.timeout)
    result = report.to_dict()
    if wants_json(args):
        emit_json(result)
    else:
        print(
            table(
                [s.to_dict() for s in report.servers], ["server", "status", "elapsed_ms", "reason"]
            )
        )
    return EXIT_OK if report.healthy and not report.dead else EXIT_FINDINGS


def reconcile_checkpoint(args: argparse.Namespace) -> int:
    from airflow_provider_kafkaspark.core.health.observe import kafka_view
    from airflow_provider_kafkaspark.core.kafka.admin import KafkaFacade
    from airflow_provider_kafkaspark.core.kafka.reconcile import Severity, build_reconcile_plan
    from airflow_provider_kafkaspark.core.state.checkpoint import CheckpointReader

    position = CheckpointReader(args.checkpoint).position()
    subscribed = [t.strip() for t in args.subscribe.split(",") if t.strip()]
    with KafkaFacade(kafka_config(args), timeout_s=args.timeout) as kafka:
        view = kafka_view(kafka, position.committed_offsets, subscribed)
    plan = build_reconcile_plan(position.committed_offsets, view)
    if wants_json(args):
        emit_json(plan.to_dict())
    else:
        print(plan.summary())
        rows = [f.to_dict() for f in plan.findings]
        print(table(rows, ["severity", "kind", "topic", "partition", "message"]))
        lag = plan.to_dict()["lag"]
        print()
        print(key_values({k: v for k, v in lag.items() if k != "top"}))
    return EXIT_FINDINGS if plan.blocking(Severity[args.fail_on]) else EXIT_OK
