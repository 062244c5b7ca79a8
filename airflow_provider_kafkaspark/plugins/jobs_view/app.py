"""The view's FastAPI app, mounted in Airflow's api-server at `/kafkaspark`.

Every route needs a user signed in to Airflow (its JWT: the UI's `_token` cookie, which the
external view's frame sends, or an `Authorization: Bearer` header) and shows only the jobs of
DAGs that user may read: a user who may read none is refused. Pages and JSON come from the
same rows. Nothing here writes; no connection's content, only its id, is ever shown."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from airflow.api_fastapi.core_api.security import GetUserDep
from fastapi import Depends, FastAPI, HTTPException, Request, status
from fastapi.responses import HTMLResponse, JSONResponse, Response

from airflow_provider_kafkaspark.plugins.jobs_view import render
from airflow_provider_kafkaspark.plugins.jobs_view.known import jobs_of_dags, readable_dag_ids

if TYPE_CHECKING:
    from airflow_provider_kafkaspark.core.overview.facts import KnownJob

URL_PREFIX = "/kafkaspark"


def readable_dags(user: GetUserDep) -> set[str]:
    """The DAG ids the caller may read: 401 without a user (Airflow's dependency), 403 when
    the user may read none."""
    dag_ids = readable_dag_ids(user)
    if not dag_ids:
        raise HTTPException(status.HTTP_403_FORBIDDEN, "you may read no DAG, so no streaming job")
    return dag_ids


Readable = Annotated[set[str], Depends(readable_dags)]


def create_app() -> FastAPI:
    app = FastAPI(
        title="Streaming jobs (airflow-provider-kafkaspark)",
        docs_url=None,
        redoc_url=None,
    )

    @app.exception_handler(HTTPException)
    async def refused(request: Request, exc: HTTPException) -> Response:
        if request.url.path.startswith(f"{_base(request)}/api/"):
            return JSONResponse({"detail": exc.detail}, status_code=exc.status_code)
        title = {401: "Sign in to Airflow", 403: "Not allowed", 404: "Not found"}.get(
            exc.status_code, "Error"
        )
        page = render.message_page(title, str(exc.detail), base=_base(request))
        return HTMLResponse(page, status_code=exc.status_code)

    @app.get("/jobs", response_class=HTMLResponse)
    def jobs_page(request: Request, dag_ids: Readable) -> str:
        from airflow_provider_kafkaspark.plugins.jobs_view.look import job_rows

        rows = job_rows(jobs_of_dags(dag_ids))
        return render.jobs_page(rows, base=_base(request), airflow_base=_airflow_base(request))

    @app.get("/jobs/{job_name}", response_class=HTMLResponse)
    def job_page(
        request: Request, job_name: str, dag_ids: Readable, checkpoint: str | None = None
    ) -> str:
        from airflow_provider_kafkaspark.plugins.jobs_view.look import job_rows

        job = _one_job(jobs_of_dags(dag_ids), job_name, checkpoint)
        (row,) = job_rows([job])
        return render.job_page(
            row, job.tasks, base=_base(request), airflow_base=_airflow_base(request)
        )

    @app.get("/api/jobs")
    def jobs_json(dag_ids: Readable) -> dict[str, Any]:
        from airflow_provider_kafkaspark.plugins.jobs_view.look import job_rows

        return {"jobs": [row.to_dict() for row in job_rows(jobs_of_dags(dag_ids))]}

    @app.get("/api/jobs/{job_name}")
    def job_json(job_name: str, dag_ids: Readable, checkpoint: str | None = None) -> Any:
        from airflow_provider_kafkaspark.plugins.jobs_view.look import job_rows

        job = _one_job(jobs_of_dags(dag_ids), job_name, checkpoint)
        (row,) = job_rows([job])
        return {**row.to_dict(), "tasks": [vars(t) for t in job.tasks]}

    return app


def _one_job(jobs: list[KnownJob], job_name: str, checkpoint: str | None) -> KnownJob:
    """The newest known job of that name (and checkpoint, when given); 404 otherwise."""
    for job in jobs:
        if job.job_name == job_name and (checkpoint is None or job.checkpoint == checkpoint):
            return job
    where = f" on checkpoint {checkpoint}" if checkpoint else ""
    raise HTTPException(status.HTTP_404_NOT_FOUND, f"no known job {job_name!r}{where}")


def _base(request: Request) -> str:
    """This app's own prefix as the browser sees it (a proxy's prefix included)."""
    return str(request.scope.get("root_path", "")).rstrip("/")


def _airflow_base(request: Request) -> str:
    return _base(request).removesuffix(URL_PREFIX)
