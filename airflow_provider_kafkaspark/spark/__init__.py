"""Code that runs inside the Spark driver and its executors: the job runner, the managed
query (lease, graceful stop, progress), the exactly-once Kafka sink and its test-only crash
hooks. Airflow-side code must not import from here: some of these modules need pyspark."""
