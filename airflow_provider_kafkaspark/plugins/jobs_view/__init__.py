"""The "Streaming jobs" view: a FastAPI app in Airflow's api-server (its pages and their JSON)
and an external view in Airflow's navigation that shows it."""
