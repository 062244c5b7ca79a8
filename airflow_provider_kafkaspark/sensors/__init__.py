"""Airflow adapters: connections in, core calls, XCom and Asset events out."""
