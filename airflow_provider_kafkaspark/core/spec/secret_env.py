"""Secrets out of the shipped spec: a submit writes the job spec where others can read it (a
cluster's staging folder, a driver's working folder), so the settings that are secrets (a SASL
password, an OIDC client secret, a TLS key, a JAAS line, an S3 secret key in `spark_conf`)
leave it. Each travels to the driver in a variable of its own (`KAFKASPARK_SECRET_...`),
through the channel the backend keeps for secrets; the spec keeps only which variable holds
which setting (`secret_env`), and the driver puts them back before it builds anything.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace

from airflow_provider_kafkaspark.core.kafka.security import is_secret_key
from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec, JobSpecError

VARIABLE_PREFIX = "KAFKASPARK_SECRET_"
# The spec's settings that may hold secrets, by the path a message names.
SECTIONS = ("kafka_config", "spark_conf", "source.options", "sink.options")


def variable_name(place: str) -> str:
    """`kafka_config.sasl.password` -> `KAFKASPARK_SECRET_KAFKA_CONFIG_SASL_PASSWORD`."""
    return VARIABLE_PREFIX + re.sub(r"[^A-Z0-9]+", "_", place.upper()).strip("_")


def _settings(spec: JobSpec) -> dict[str, dict[str, str]]:
    return {
        "kafka_config": spec.kafka_config,
        "spark_conf": spec.spark_conf,
        "source.options": spec.source.options,
        "sink.options": spec.sink.options,
    }


def _with_settings(spec: JobSpec, settings: dict[str, dict[str, str]]) -> JobSpec:
    return replace(
        spec,
        kafka_config=settings["kafka_config"],
        spark_conf=settings["spark_conf"],
        source=replace(spec.source, options=settings["source.options"]),
        sink=replace(spec.sink, options=settings["sink.options"]),
    )


def split_secrets(spec: JobSpec) -> tuple[JobSpec, dict[str, str]]:
    """The spec to write or ship, without its secret settings, and the variables that carry
    them. A spec split before (a restart's) passes unchanged with no variables."""
    settings = {section: dict(values) for section, values in _settings(spec).items()}
    secret_env = dict(spec.secret_env)
    variables: dict[str, str] = {}
    for section, values in settings.items():
        for key in [k for k in values if is_secret_key(k)]:
            place = f"{section}.{key}"
            name = variable_name(place)
            if name in variables:
                raise JobSpecError(f"job spec field '{place}': its variable {name} is taken")
            variables[name] = str(values.pop(key))
            secret_env[place] = name
    return replace(_with_settings(spec, settings), secret_env=secret_env), variables


def fill_secrets(spec: JobSpec, environ: Mapping[str, str]) -> JobSpec:
    """The spec with its secret settings back from `environ` (the driver's side). A variable
    that is not there is a bad job, named by its setting and variable."""
    if not spec.secret_env:
        return spec
    settings = {section: dict(values) for section, values in _settings(spec).items()}
    for place, name in spec.secret_env.items():
        section = next((s for s in SECTIONS if place.startswith(f"{s}.")), None)
        if section is None:
            raise JobSpecError(f"job spec field 'secret_env.{place}': not a setting of {SECTIONS}")
        if name not in environ:
            raise JobSpecError(
                f"job spec field '{place}': the driver did not get its secret (variable {name})"
            )
        settings[section][place[len(section) + 1 :]] = environ[name]
    return replace(_with_settings(spec, settings), secret_env={})
