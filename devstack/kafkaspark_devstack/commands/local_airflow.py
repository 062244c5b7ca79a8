"""`kafkaspark local postgres|airflow`: an Airflow deployment's own services for the
multi-host bed (its metadata database, api-server, scheduler, dag-processor, triggerer and
Edge workers), each started on the host it is run on."""

from __future__ import annotations

import argparse
from pathlib import Path

from airflow_provider_kafkaspark.commands.flags import with_example
from airflow_provider_kafkaspark.commands.output import EXIT_OK, server_status

DEFAULT_LOCAL_POSTGRES_DIR = Path(".local") / "postgres"
DEFAULT_LOCAL_AIRFLOW_DIR = Path(".local") / "airflow"


def add_parsers(parts: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    postgres = parts.add_parser("postgres", help="a local PostgreSQL (Airflow's metadata DB)")
    postgres.add_argument("action", choices=["start", "stop", "status"])
    postgres.add_argument("--dir", default=str(DEFAULT_LOCAL_POSTGRES_DIR), help="server folder")
    postgres.add_argument("--port", type=int, default=5432, help="port of a new server")
    postgres.add_argument(
        "--database", action="append", default=[], help="database to create on start"
    )
    postgres.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for start")
    with_example(postgres, "kafkaspark local postgres start --database airflow")
    postgres.set_defaults(func=local_postgres)

    airflow = parts.add_parser(
        "airflow",
        help="one Airflow component on this host; the shared settings come from AIRFLOW__* "
        "variables",
    )
    airflow.add_argument("action", choices=["start", "stop", "status"])
    airflow.add_argument(
        "component",
        choices=["api-server", "scheduler", "dag-processor", "triggerer", "edge-worker"],
    )
    airflow.add_argument(
        "--dir", default=str(DEFAULT_LOCAL_AIRFLOW_DIR), help="components' folder (homes, logs)"
    )
    airflow.add_argument("--queues", default=None, help="an Edge worker's queues (comma-separated)")
    airflow.add_argument(
        "--timeout", type=float, default=180.0, help="seconds to wait until it is ready"
    )
    with_example(
        airflow,
        "kafkaspark local airflow start scheduler",
        "kafkaspark local airflow start edge-worker --queues default",
    )
    airflow.set_defaults(func=local_airflow)


def local_postgres(args: argparse.Namespace) -> int:
    from kafkaspark_devstack.postgres import LocalPostgres

    server = LocalPostgres(args.dir, port=args.port)
    if args.action == "start":
        server.start(timeout=args.timeout)
        for name in args.database:
            server.create_database(name)
        print(f"PostgreSQL is up at {server.host}:{server.port} (data in {args.dir})")
        return EXIT_OK
    if args.action == "stop":
        server.stop()
        print(f"PostgreSQL stopped (data kept in {args.dir})")
        return EXIT_OK
    return server_status(server.status())


def local_airflow(args: argparse.Namespace) -> int:
    from kafkaspark_devstack.airflow_services import LocalAirflowComponent

    extra = ["--queues", args.queues] if args.queues and args.action == "start" else []
    component = LocalAirflowComponent(args.dir, args.component, args=extra)
    if args.action == "start":
        component.start(timeout=args.timeout)
        print(f"Airflow {args.component} is up (log {component.log_file})")
        return EXIT_OK
    if args.action == "stop":
        component.stop()
        print(f"Airflow {args.component} stopped")
        return EXIT_OK
    return server_status(component.status())
