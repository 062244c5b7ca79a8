"""The scenarios, in the order of the issue. Each module has `NAME`, `TITLE` and
`run(profile, workdir) -> ScenarioResult`, and starts whatever it needs itself. A module that
also runs with its checkpoint and savepoints on S3 says so in `STORAGES` and takes
`run(profile, workdir, storage)`."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from reliability.model import Profile, ScenarioResult

MODULES = (
    "driver_kills",
    "repeated_restores",
    "repeated_handovers",
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


def storages(name: str) -> tuple[str, ...]:
    """Where a scenario can keep its state: ("local",) or ("local", "s3")."""
    return tuple(getattr(load(name), "STORAGES", ("local",)))


def run_name(name: str, storage: str) -> str:
    """How a run is named in the figures: the scenario, with its storage unless local."""
    return name if storage == "local" else f"{name}[{storage}]"


def available() -> list[str]:
    """The scenarios whose module exists (the suite grows one module at a time)."""
    found = []
    for name in MODULES:
        if (Path(__file__).parent / f"{name}.py").exists():
            found.append(name)
    return found
