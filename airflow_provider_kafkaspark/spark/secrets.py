"""The driver's secrets, where its backend put them: its environment (a local driver's
process, a Kubernetes pod's Secret), or, in a YARN container, the secret keys of the
container's Hadoop credentials (`backends/yarn.py` puts them there at submit).

`load_job_spec` is how every driver entry point reads its spec: the spec's secret settings
are filled from those variables (`core/spec/secret_env.py`), and the storage credentials (the
AWS variables, which s3fs and botocore read from the environment) join this process's
environment. The spec's own secret variables do not: no child process of the driver needs
them.
"""

from __future__ import annotations

import base64
import os
from collections.abc import MutableMapping
from dataclasses import replace
from pathlib import Path

from airflow_provider_kafkaspark.core.cluster.hadoop_credentials import (
    CredentialsFormatError,
    decode_secret_keys,
)
from airflow_provider_kafkaspark.core.kafka.security import EMBEDDED
from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec, JobSpecError
from airflow_provider_kafkaspark.core.spec.secret_env import VARIABLE_PREFIX, fill_secrets
from airflow_provider_kafkaspark.core.storage.private_file import private_copy

TOKEN_FILE_ENV = "HADOOP_TOKEN_FILE_LOCATION"
# The alias of each secret key in the credentials: this prefix, then the variable's name.
ALIAS_PREFIX = "kafkaspark.env."


def credential_variables(environ: MutableMapping[str, str]) -> dict[str, str]:
    """The variables the container's Hadoop credentials carry (none outside a YARN container,
    or with no token file)."""
    path = environ.get(TOKEN_FILE_ENV)
    if not path:
        return {}
    try:
        keys = decode_secret_keys(Path(path).read_bytes())
    except OSError as exc:
        raise JobSpecError(
            f"{TOKEN_FILE_ENV} {path}: the container's credentials cannot be read "
            f"({exc.strerror or type(exc).__name__})"
        ) from None
    except CredentialsFormatError as exc:
        raise JobSpecError(f"{TOKEN_FILE_ENV} {path}: {exc}") from None
    return {
        alias[len(ALIAS_PREFIX) :]: value.decode()
        for alias, value in keys.items()
        if alias.startswith(ALIAS_PREFIX)
    }


def load_job_spec(path: str, environ: MutableMapping[str, str] | None = None) -> JobSpec:
    """The spec at `path`, its secrets filled; the credentials' variables join `environ`."""
    target = os.environ if environ is None else environ
    variables = credential_variables(target)
    target.update({k: v for k, v in variables.items() if not k.startswith(VARIABLE_PREFIX)})
    return with_embedded_files(fill_secrets(JobSpec.load(path), {**target, **variables}))


def with_embedded_files(spec: JobSpec) -> JobSpec:
    """The spec with each file its Kafka settings carry (a keytab, `security.EMBEDDED`)
    written to a private file of this host, the setting naming that file: both clients
    want a path."""
    embedded = {k: v for k, v in spec.kafka_config.items() if str(v).startswith(EMBEDDED)}
    if not embedded:
        return spec
    config = dict(spec.kafka_config)
    for key, value in embedded.items():
        try:
            content = base64.b64decode(value[len(EMBEDDED) :], validate=True)
        except ValueError:
            raise JobSpecError(f"job spec field 'kafka_config.{key}': not base64") from None
        config[key] = str(private_copy(content, key.replace(".", "_")))
    return replace(spec, kafka_config=config)
