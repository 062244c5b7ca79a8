"""`KafkaSparkHook`: connections in. The official providers' `kafka` connection (its extra is
the librdkafka config dict), `aws` connection (read by the Amazon provider's hook) and, for
cluster managers, their `spark` connection; this provider defines no connection type of its own.

Imported by operators inside `execute`, never at DAG parse time.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from typing import Any

from airflow.sdk import BaseHook

from airflow_provider_kafkaspark.errors import InvalidInputError
from airflow_provider_kafkaspark.hooks.aws_connection import AwsStorage, aws_storage
from airflow_provider_kafkaspark.hooks.kafka_connection import (
    kafka_client_config,
    kafka_spec_config,
)


def _spark_connection(spark_conn_id: str) -> tuple[str, str | None]:
    """(master, deploy mode) of a `spark` connection, read as the official Spark hook reads it
    (which it does only privately, in `SparkSubmitHook._resolve_connection`): a UI connection
    keeps the whole master URL in its host, a URI one splits the scheme into the type; the
    port is appended; the extra's `deploy-mode` is the mode."""
    from airflow.sdk.exceptions import AirflowNotFoundException

    try:
        conn = BaseHook.get_connection(spark_conn_id)
    except AirflowNotFoundException as exc:
        raise InvalidInputError(
            f"Spark connection {spark_conn_id!r} is not defined: add it (UI, CLI or an "
            f"AIRFLOW_CONN_{str(spark_conn_id).upper()} variable)"
        ) from exc
    if conn.conn_type == "spark" and conn.host and ("://" in conn.host or not conn.port):
        master = str(conn.host)
    else:
        master = f"{conn.conn_type}://{conn.host or ''}"
    if conn.port:
        master = f"{master}:{conn.port}"
    extra = conn.extra_dejson
    mode = extra.get("deploy-mode") if isinstance(extra, dict) else None
    return master, None if mode is None else str(mode)


class KafkaSparkHook(BaseHook):
    """What the operators, sensors and trigger read from Airflow connections: a `kafka`
    connection's client config (for in-process calls, and the part a job spec carries to the
    driver), a `spark` connection's master and deploy mode, and an `aws` connection's
    credentials for checkpoints and savepoints on S3. Every error names the connection, never
    a value from it."""

    hook_name = "Kafka + Spark Structured Streaming"

    def __init__(
        self,
        kafka_conn_id: str = "kafka_default",
        spark_conn_id: str | None = None,
        aws_conn_id: str | None = None,
    ):
        super().__init__()
        self.kafka_conn_id = kafka_conn_id
        self.spark_conn_id = spark_conn_id
        self.aws_conn_id = aws_conn_id

    @contextlib.contextmanager
    def storage(self) -> Iterator[None]:
        """S3 URLs opened inside this block use the `aws` connection (without one: the
        standard AWS variables and files)."""
        from airflow_provider_kafkaspark.core.storage import s3_options_scope

        with s3_options_scope(self.s3fs_options()):
            yield

    def s3fs_options(self) -> dict[str, Any] | None:
        """s3fs options of the `aws` connection; None without one."""
        return self._aws.s3fs_options if self._aws else None

    def driver_env(self) -> dict[str, str]:
        """The standard AWS variables of the `aws` connection, for a driver process (empty
        without one: the driver inherits the worker's)."""
        return self._aws.driver_env if self._aws else {}

    @functools.cached_property
    def _aws(self) -> AwsStorage | None:
        # Read once per hook: a task asks for its storage scope and its driver's variables.
        return aws_storage(self.aws_conn_id) if self.aws_conn_id else None

    def get_conn(self) -> dict[str, Any]:
        """The Kafka client config, as `kafka_client_config`."""
        return self.kafka_client_config()

    def kafka_client_config(self) -> dict[str, Any]:
        """The client config of the `kafka` connection, callbacks resolved (for in-process
        use: admin calls, probes, reconciliation)."""
        return kafka_client_config(self.kafka_conn_id)

    def kafka_spec_config(self) -> tuple[str, dict[str, str]]:
        """(bootstrap servers, the rest of the client config as strings), for a job spec:
        what the driver's admin client, lag commits and sink producers need."""
        return kafka_spec_config(self.kafka_conn_id)

    def spark_connection(self) -> tuple[str, str | None]:
        """(master, deploy mode) of the `spark` connection, as the official Spark hook reads it."""
        return _spark_connection(self._spark_conn_id())

    def _spark_conn_id(self) -> str:
        if not self.spark_conn_id:
            raise InvalidInputError(
                "no spark_conn_id given: a cluster master needs a `spark` connection"
            )
        return self.spark_conn_id
