"""Lifecycle control for Spark Structured Streaming jobs that read Kafka, for Airflow."""

from __future__ import annotations

from typing import Any

# The one version (SemVer): pyproject.toml reads it (setuptools' dynamic version), the provider
# info below lists it, and CHANGELOG.md's newest release names it (tests/unit/test_release.py).
__version__ = "0.1.0"


INTEGRATION = "Kafka Spark Streaming lifecycle"
_PACKAGE = "airflow_provider_kafkaspark"


def get_provider_info() -> dict[str, Any]:
    """What Airflow's ProvidersManager reads through the `apache_airflow_provider` entry point:
    the modules of each kind (shown by `airflow providers operators`, `... sensors`,
    `... triggers`), the links of task instances, and the `kafkaspark://` Asset scheme with its
    URI check."""

    def modules(*names: str) -> list[dict[str, Any]]:
        return [
            {"integration-name": INTEGRATION, "python-modules": [f"{_PACKAGE}.{n}" for n in names]}
        ]

    return {
        "package-name": "airflow-provider-kafkaspark",
        "name": INTEGRATION,
        "description": "Submit, watch, stop with savepoint, restore, reconcile and backfill "
        "Spark Structured Streaming jobs that read Kafka.",
        "versions": [__version__],
        "integrations": [
            {
                "integration-name": INTEGRATION,
                "external-doc-url": "https://spark.apache.org/docs/latest/"
                "structured-streaming-kafka-integration.html",
                "tags": ["apache", "service"],
            }
        ],
        "operators": modules(
            "operators.submit",
            "operators.deploy",
            "operators.stop",
            "operators.savepoint",
            "operators.reconcile",
            "operators.backfill",
        ),
        "hooks": modules("hooks.kafkaspark"),
        "sensors": modules("sensors.health", "sensors.bootstrap", "sensors.watch"),
        "triggers": modules("triggers.health", "triggers.stop", "triggers.watch"),
        "notifications": [f"{_PACKAGE}.notifiers.LogNotifier"],
        # The "Streaming jobs" view: its pages in the api-server, its entry in the UI's menu.
        "plugins": [
            {
                "name": "kafkaspark_streaming_jobs",
                "plugin-class": f"{_PACKAGE}.plugins.jobs_view.plugin.StreamingJobsViewPlugin",
            }
        ],
        # The links of task instances (links.py), for the api-server to know them by class.
        "extra-links": [
            f"{_PACKAGE}.links.{name}"
            for name in ("SparkUiLink", "YarnApplicationLink", "StreamingJobLink")
        ],
        "asset-uris": [
            {
                "schemes": ["kafkaspark"],
                "handler": f"{_PACKAGE}.assets.sanitize_uri",
                "factory": f"{_PACKAGE}.assets.create_asset",
            }
        ],
    }
