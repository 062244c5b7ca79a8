"""`KafkaBootstrapHealthSensor`: are the connection's bootstrap servers alive and members?

Each server of the connection's `bootstrap.servers` is probed on its own
(`core.kafka.bootstrap_probe`): a dead or decommissioned entry makes every client's metadata fetch
wait for a timeout (docs/design.md, "Dead bootstrap entries"), so a DAG can check the list
before a submit.

Only Airflow and the pure core are imported here; the probe loads inside `poke`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from airflow.sdk import BaseSensorOperator, Context, PokeReturnValue

from airflow_provider_kafkaspark.core.spec.args import positive_number

_COLUMNS = ("server", "status", "broker_id", "elapsed_ms", "reason")


class KafkaBootstrapHealthSensor(BaseSensorOperator):
    """Done when every bootstrap server is OK (`require_all=True`), or when the cluster is
    reachable through at least one (`require_all=False`). Each poke logs a table of the
    servers, and names the dead, unreachable and not-a-member ones; the probe report
    (`BootstrapReport.to_dict()`) is the XCom.

    :param kafka_conn_id: an official-provider `kafka` connection. Templated.
    :param timeout_s: budget of one probe; the servers are probed in parallel.
    :param require_all: whether one bad entry keeps the sensor waiting.
    """

    template_fields: Sequence[str] = ("kafka_conn_id",)
    ui_color = "#d6eaf8"

    def __init__(
        self,
        *,
        kafka_conn_id: str = "kafka_default",
        timeout_s: float = 5.0,
        require_all: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.kafka_conn_id = kafka_conn_id
        self.timeout_s = positive_number(timeout_s, f"{self.task_id}: timeout_s")
        self.require_all = require_all

    def poke(self, context: Context) -> PokeReturnValue:
        from airflow_provider_kafkaspark.airflow_errors import airflow_errors
        from airflow_provider_kafkaspark.commands.output import table
        from airflow_provider_kafkaspark.core.kafka.bootstrap_probe import probe_bootstrap
        from airflow_provider_kafkaspark.hooks.kafkaspark import KafkaSparkHook

        with airflow_errors(self.task_id, self.kafka_conn_id):
            config = KafkaSparkHook(self.kafka_conn_id).kafka_client_config()
            report = probe_bootstrap(config, timeout_s=self.timeout_s)
        result = report.to_dict()
        rows = result["servers"]
        self.log.info(
            "bootstrap servers of connection %r (cluster %s, probed in %d ms):\n%s",
            self.kafka_conn_id,
            report.cluster_id,
            report.elapsed_ms,
            table(rows, _COLUMNS),
        )
        if report.dead:
            bad = [row for row in rows if row["status"] != "OK"]
            self.log.warning(
                "%d of %d bootstrap servers are not usable:\n%s",
                len(bad),
                len(rows),
                "\n".join(f"  {row['server']}: {row['status']}: {row['reason']}" for row in bad),
            )
        # The two criteria are the report's own: every server OK, or any server OK.
        done = not report.dead if self.require_all else report.healthy
        return PokeReturnValue(done, result if done else None)
