"""`deployment.json` in the job's control folder, written with the lease's conditional writes
(create if absent, replace if unchanged since read): of two deploys that race, one is refused
instead of both writing."""

from __future__ import annotations

import json

from airflow_provider_kafkaspark.core.control.folder import CONTROL_DIR, DEPLOYMENT_FILE
from airflow_provider_kafkaspark.core.deploy.deployment import Deployment
from airflow_provider_kafkaspark.core.storage.conditional_files import conditional_files
from airflow_provider_kafkaspark.core.storage.location import Location, open_location
from airflow_provider_kafkaspark.errors import ControlFileError, DeploymentConflictError


class DeploymentFile:
    """The deployment record of the job whose checkpoint is `checkpoint`. `version` is what
    the next `write` is conditional on: the version last read or written through this object."""

    def __init__(self, checkpoint: str | Location) -> None:
        base = open_location(checkpoint) if isinstance(checkpoint, str) else checkpoint
        self.location = base.child(CONTROL_DIR)
        self._files = conditional_files(self.location)
        self.version: str | None = None

    @property
    def url(self) -> str:
        return self.location.describe(DEPLOYMENT_FILE)

    def read(self) -> Deployment | None:
        found = self._files.read(self.location.path(DEPLOYMENT_FILE))
        if found is None:
            self.version = None
            return None
        try:
            raw = json.loads(found.data.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ControlFileError(f"{self.url}: not JSON ({exc})") from exc
        self.version = found.version
        return Deployment.from_dict(raw, self.url)

    def write(self, deployment: Deployment) -> None:
        """Create the record (none read) or replace the one read; refused when another wrote
        it since."""
        data = json.dumps(deployment.to_dict(), indent=1, sort_keys=True).encode("utf-8")
        path = self.location.path(DEPLOYMENT_FILE)
        if self.version is None:
            written = self._files.create(path, data)
        else:
            written = self._files.replace(path, data, self.version)
        if written is None:
            current = self.read()
            raise DeploymentConflictError(
                f"{self.url}: changed by another deploy since it was read"
                + (f" (now {current.describe()})" if current else " (now removed)")
            )
        self.version = written
