"""Which Spark may run a job and continue its checkpoint: the one the job names, and never
an older line than the newest that wrote the checkpoint (`core/state/spark_compat.py`).
"""

from __future__ import annotations

import sys

from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec
from airflow_provider_kafkaspark.errors import InvalidInputError


def check_spark_release(spec: JobSpec) -> str:
    """This driver's Spark, once it is the one the job names and may continue the checkpoint
    (`check_checkpoint_release`). Raises InvalidInputError (a bad spec: never restarted)
    otherwise."""
    import pyspark

    own = str(pyspark.__version__)
    if spec.spark_version is not None and spec.spark_version != own:
        raise InvalidInputError(
            f"job spec field 'spark_version': the job names Spark {spec.spark_version}, but "
            f"this driver ({sys.executable}) has pyspark {own}: set spark_conf "
            f"'spark.pyspark.driver.python' to an interpreter with pyspark {spec.spark_version}"
        )
    check_checkpoint_release(spec.checkpoint_location, own)
    return own


def check_checkpoint_release(checkpoint: str, own: str) -> None:
    """Refuse a checkpoint a later Spark line wrote (`core/state/spark_compat.py`), else record this
    driver's Spark as its newest writer when it is newer. A standby checks again once handed
    the checkpoint: the restore that hands it over may have brought a savepoint of a later
    Spark."""
    from airflow_provider_kafkaspark.core.control.folder import ControlFolder
    from airflow_provider_kafkaspark.core.control.lease import now_ms
    from airflow_provider_kafkaspark.core.control.reports import WrittenBy
    from airflow_provider_kafkaspark.core.state.spark_compat import continue_refusal, newest

    control = ControlFolder(checkpoint)
    recorded = control.read_written_by()
    written_by = recorded.spark_version if recorded else None
    refusal = continue_refusal(written_by, own)
    if refusal is not None:
        raise InvalidInputError(f"{checkpoint}: {refusal}")
    newest_writer = newest([written_by, own]) or own
    if newest_writer != written_by:
        control.write_written_by(WrittenBy(newest_writer, now_ms()))
