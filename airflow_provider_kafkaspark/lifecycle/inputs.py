"""What the verbs take, checked in one place: the job spec with the connection's servers and
client settings, and what a submit does about a running driver (`if_running`). Light: the
operators check their arguments with it while a DAG file is parsed."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from airflow_provider_kafkaspark.errors import InvalidArgumentError

if TYPE_CHECKING:
    from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec

IF_RUNNING = ("fail", "skip", "replace")


def check_if_running(if_running: str) -> str:
    """`if_running`, if it is one of `IF_RUNNING`; a typed error naming the choices if not."""
    if if_running not in IF_RUNNING:
        raise InvalidArgumentError(f"if_running={if_running!r} is not one of {list(IF_RUNNING)}")
    return if_running


def job_spec_of(value: dict[str, Any] | str, where: str = "job_spec") -> JobSpec:
    """The job spec an operator was given, as a dict or as its JSON text (a template's
    rendering), validated."""
    from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec

    if isinstance(value, str):
        return JobSpec.from_json(value, where=where)
    return JobSpec.from_dict(value)


def with_connection(
    spec: JobSpec,
    servers: str,
    kafka_config: dict[str, str],
    where: str = "Kafka connection",
) -> JobSpec:
    """The spec with the connection's servers and client settings (the connection wins),
    checked to fit together, with certificate and key files read here: the driver runs on
    another host (`core/kafka/security.py`)."""
    from pathlib import Path

    from airflow_provider_kafkaspark.core.kafka.security import check, portable

    check(kafka_config, where)
    config = portable(kafka_config, lambda path: Path(path).read_bytes(), where)
    source = dataclasses.replace(spec.source, bootstrap_servers=servers)
    return dataclasses.replace(
        spec, source=source, kafka_config={k: str(v) for k, v in config.items()}
    )


def live_first(servers: str, dead: list[str]) -> str:
    """The bootstrap list with the dead entries moved to the end, order kept otherwise:
    clients try the list in order, and an address that times out costs a whole timeout."""
    entries = [s.strip() for s in servers.split(",") if s.strip()]
    return ",".join([s for s in entries if s not in dead] + [s for s in entries if s in dead])
