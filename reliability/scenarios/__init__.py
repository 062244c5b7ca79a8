"""The scenarios, in the order of the issue. Each module has `NAME`, `TITLE` and
`run(profile, workdir) -> ScenarioResult`, and starts whatever it needs itself."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from reliability.model import Profile, ScenarioResult

MODULES = (
    "driver_kills",
    "repeated_restores",
    "broker_loss",
    "partitions_added",
    "retention_overtakes",
    "topic_recreated",
    "bad_input",
    "secrets",
)

Scenario = Callable[[Profile, Path], ScenarioResult]


def load(name: str) -> ModuleType:
    if name not in MODULES:
        raise ValueError(f"unknown scenario {name!r}; known: {', '.join(MODULES)}")
    return importlib.import_module(f"reliability.scenarios.{name}")


def available() -> list[str]:
    """The scenarios whose module exists (the suite grows one module at a time)."""
    found = []
    for name in MODULES:
        if (Path(__file__).parent / f"{name}.py").exists():
            found.append(name)
    return found
