"""The plugin Airflow loads through the provider's metadata (`get_provider_info()["plugins"]`).

The pages are a FastAPI app mounted in the api-server at `/kafkaspark`; the external view
puts "Streaming jobs" in Airflow's navigation, shown in the UI's frame. The app is built when
Airflow loads the plugin, which DAG parsing never does."""

from __future__ import annotations

from airflow.plugins_manager import AirflowPlugin

from airflow_provider_kafkaspark.plugins.jobs_view.app import URL_PREFIX, create_app

VIEW_ROUTE = "streaming-jobs"


class StreamingJobsViewPlugin(AirflowPlugin):
    name = "kafkaspark_streaming_jobs"
    fastapi_apps = [  # noqa: RUF012 (Airflow reads these class attributes)
        {"app": create_app(), "url_prefix": URL_PREFIX, "name": "Streaming jobs"}
    ]
    external_views = [  # noqa: RUF012
        {
            "name": "Streaming jobs",
            "href": f"{URL_PREFIX}/jobs",
            "destination": "nav",
            "category": "browse",
            "url_route": VIEW_ROUTE,
        }
    ]
