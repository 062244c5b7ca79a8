"""Airflow plugins of the provider: the "Streaming jobs" view in Airflow's UI."""
