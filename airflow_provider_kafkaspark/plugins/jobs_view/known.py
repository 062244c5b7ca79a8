"""The jobs Airflow knows: the results of the provider's task instances in the metadata
database, of the DAGs the user may read."""

from __future__ import annotations

from typing import Any

from airflow_provider_kafkaspark.core.overview.facts import KnownJob
from airflow_provider_kafkaspark.core.overview.known import OPERATORS, TaskResult, known_jobs

# Newest results read per look: enough for hundreds of jobs and their stops.
RESULTS_READ = 2000


def readable_dag_ids(user: Any) -> set[str]:
    from airflow.api_fastapi.app import get_auth_manager

    return set(get_auth_manager().get_authorized_dag_ids(user=user, method="GET"))


def jobs_of_dags(dag_ids: set[str]) -> list[KnownJob]:
    """The known jobs whose tasks ran in `dag_ids`, newest submit first."""
    if not dag_ids:
        return []
    from airflow.models.taskinstance import TaskInstance
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session
    from sqlalchemy import and_, select

    stmt = (
        select(
            XComModel.dag_id,
            XComModel.run_id,
            XComModel.task_id,
            TaskInstance.operator,
            XComModel.timestamp,
            XComModel.value,
        )
        .join(
            TaskInstance,
            and_(
                TaskInstance.dag_id == XComModel.dag_id,
                TaskInstance.run_id == XComModel.run_id,
                TaskInstance.task_id == XComModel.task_id,
                TaskInstance.map_index == XComModel.map_index,
            ),
        )
        .where(
            XComModel.key == "return_value",
            TaskInstance.operator.in_(OPERATORS),
            XComModel.dag_id.in_(sorted(dag_ids)),
        )
        .order_by(XComModel.timestamp.desc())
        .limit(RESULTS_READ)
    )
    with create_session() as session:
        rows = session.execute(stmt).all()
    return known_jobs(
        TaskResult(
            dag_id=row.dag_id,
            run_id=row.run_id,
            task_id=row.task_id,
            operator=str(row.operator),
            at=row.timestamp.isoformat(),
            value=XComModel.deserialize_value(row),
        )
        for row in rows
    )
