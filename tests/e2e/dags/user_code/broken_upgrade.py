"""A new version of a job's code that needs a library the driver's environment lacks: the
most common way an upgrade goes wrong. Importing it fails, as it would in a real driver."""

from __future__ import annotations

from typing import Any

import kafkaspark_no_such_dependency  # type: ignore[import-not-found]  # noqa: F401


def transform(source: Any) -> Any:
    return source
