"""Reconcile the example job's checkpoint against Kafka every few minutes.

Fails on CRITICAL findings (records lost to retention, a deleted or recreated topic),
reports WARNINGs (partitions the checkpoint has never read, lag above thresholds).
"""

from __future__ import annotations

import pendulum
from airflow.sdk import DAG

from airflow_provider_kafkaspark.examples.dag_settings import example_settings
from airflow_provider_kafkaspark.operators.reconcile import KafkaPartitionReconcileOperator

settings = example_settings()

with DAG(
    dag_id="kafkaspark_reconcile",
    schedule=settings.reconcile_schedule,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["kafkaspark", "example"],
    doc_md=__doc__,
) as dag:
    KafkaPartitionReconcileOperator(
        task_id="reconcile",
        aws_conn_id=settings.aws_conn_id,
        checkpoint=settings.checkpoint,
        kafka_conn_id="kafka_default",
        subscribe=[settings.source_topic, *settings.reconcile_topics],
        fail_on="CRITICAL",
    )
