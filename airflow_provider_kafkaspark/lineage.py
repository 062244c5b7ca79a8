"""OpenLineage for the operators that run a job's code: its source topics in, its sink's topic
or path out, so a lineage backend sees Kafka -> job -> Kafka (or files).

The OpenLineage provider (`apache-airflow-providers-openlineage`, the `lineage` extra) calls
`get_openlineage_facets_on_start` before a task runs and `..._on_complete` after; its classes
are imported here only inside those calls, so the operators import without it.

A `subscribe_pattern` source: the start event cannot name its topics; the complete event
lists the cluster's topics once (one metadata request, bounded) and names those the pattern
reads now. An `assign` source: each assigned topic is one dataset, whichever partitions.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import TYPE_CHECKING, Any

from airflow_provider_kafkaspark.core.spec.lineage import DatasetName, JobDatasets

if TYPE_CHECKING:
    from airflow.providers.openlineage.extractors import OperatorLineage

    from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec
    from airflow_provider_kafkaspark.hooks.kafkaspark import KafkaSparkHook

log = logging.getLogger(__name__)

LISTING_TIMEOUT_S = 5.0


def operator_lineage(datasets: JobDatasets) -> OperatorLineage[Any, Any]:
    from airflow.providers.common.compat.openlineage.facet import Dataset
    from airflow.providers.openlineage.extractors import OperatorLineage

    def dataset(found: DatasetName) -> Dataset:
        return Dataset(namespace=found.namespace, name=found.name)

    return OperatorLineage(
        inputs=[dataset(d) for d in datasets.inputs],
        outputs=[dataset(d) for d in datasets.outputs],
    )


def on_servers(spec: JobSpec, servers: str) -> JobSpec:
    """The spec reading from `servers` (the connection's, which win over the spec's)."""
    return dataclasses.replace(
        spec, source=dataclasses.replace(spec.source, bootstrap_servers=servers)
    )


def connection_spec(given: JobSpec, hook: KafkaSparkHook) -> JobSpec:
    """The spec on the servers of the operator's Kafka connection, as configured there."""
    return on_servers(given, hook.kafka_servers())


def listed_topics(spec: JobSpec, hook: KafkaSparkHook) -> list[str] | None:
    """The cluster's topics, for a pattern source; None without a pattern or an answer."""
    if not spec.source.subscribe_pattern:
        return None
    from airflow_provider_kafkaspark.core.kafka.admin import KafkaFacade
    from airflow_provider_kafkaspark.errors import KafkaSparkError

    try:
        with KafkaFacade(hook.kafka_client_config(), timeout_s=LISTING_TIMEOUT_S) as kafka:
            return list(kafka.topic_partitions())
    except KafkaSparkError as exc:
        log.warning("the topics of pattern %r not listed: %s", spec.source.subscribe_pattern, exc)
        return None
