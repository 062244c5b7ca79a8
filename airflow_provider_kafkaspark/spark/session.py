"""Spark settings every driver of this provider gets, and the ones only a driver in local mode
gets. Plain data and functions: no pyspark import, so the launchers can read them too."""

from __future__ import annotations

# Every driver's session: UTC event time, a graceful stop on SIGTERM, no progress bars in logs.
SESSION_DEFAULTS: dict[str, str] = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.streaming.stopGracefullyOnShutdown": "true",
    "spark.ui.showConsoleProgress": "false",
}
# Only for a `local[...]` master, where the whole job is one process on this machine: few
# shuffle partitions, no UI port to collide on, and loopback only (the local stack must not
# depend on how the host name resolves). On a cluster the driver must be reachable from its
# executors, so none of this applies there.
LOCAL_MODE_DEFAULTS: dict[str, str] = {
    "spark.sql.shuffle.partitions": "2",
    "spark.ui.enabled": "false",
    "spark.driver.memory": "1g",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
}


def is_local_master(master: str) -> bool:
    """`local`, `local[2]`, `local[*]`, `local[2,3]`: Spark's in-process masters."""
    return master == "local" or master.startswith("local[")


def session_defaults(master: str) -> dict[str, str]:
    return {**SESSION_DEFAULTS, **(LOCAL_MODE_DEFAULTS if is_local_master(master) else {})}
