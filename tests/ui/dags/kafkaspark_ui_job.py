"""The running job the browser tests look at: one submit of the passthrough example job
(each record of the source topic to the driver's console), started by `airflow dags test`
against the UI's metadata database so that its handle is in XCom where the "Streaming jobs"
view finds it.

    KAFKASPARK_UI_HOME             folder of the checkpoint and the driver's files
    KAFKASPARK_UI_JOB_NAME         (default ui_job)
    KAFKASPARK_UI_TOPIC            the source topic (default ui_source)
    KAFKASPARK_UI_TRIGGER_INTERVAL (default "60 seconds": records produced after a batch
                                   wait as lag until the next trigger)
    Airflow connection `kafka_default` (type `kafka`, extra {"bootstrap.servers": ...})
"""

from __future__ import annotations

import os

import pendulum
from airflow.sdk import DAG

from airflow_provider_kafkaspark.operators.submit import SubmitStreamingJobOperator

home = os.environ.get("KAFKASPARK_UI_HOME", "/tmp/kafkaspark-ui").rstrip("/")
job_name = os.environ.get("KAFKASPARK_UI_JOB_NAME", "ui_job")

with DAG(
    dag_id="kafkaspark_ui_job",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    tags=["kafkaspark", "test"],
    doc_md=__doc__,
) as dag:
    SubmitStreamingJobOperator(
        task_id="submit",
        job_spec={
            "job_name": job_name,
            # The servers come from the Kafka connection at submit time.
            "source": {
                "bootstrap_servers": "from-connection:9092",
                "subscribe": [os.environ.get("KAFKASPARK_UI_TOPIC", "ui_source")],
                "starting_offsets": "earliest",
            },
            "transformation": "airflow_provider_kafkaspark.examples.passthrough:transform",
            "sink": {"kind": "console"},
            "checkpoint_location": f"{home}/{job_name}/checkpoint",
            "trigger_interval": os.environ.get("KAFKASPARK_UI_TRIGGER_INTERVAL", "60 seconds"),
            "lease_ttl_s": 10,
        },
        kafka_conn_id="kafka_default",
        workdir=f"{home}/{job_name}/drivers",
    )
