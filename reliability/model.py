"""What a scenario is given (a profile) and what it reports (counts, never prose alone)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class Profile:
    """How hard the scenarios push: `short` runs in CI, `long` from `make chaos`."""

    name: str
    driver_kills: int
    # driver_kills' input: events/s while the kills go on (they flow until the last kill is
    # done, however long that takes), and a cap on their number against a run that never
    # ends. The events checked are those the broker acknowledged.
    kill_event_rate: float
    kill_events_cap: int
    restores: int
    seed: int = 20261122

    @classmethod
    def named(cls, name: str) -> Profile:
        if name == "short":
            # CI's profile: each fault kind a few times, within CI's time budget; the long
            # profile is the one that counts rare events.
            return cls(
                "short",
                driver_kills=3,
                kill_event_rate=1_600.0,
                kill_events_cap=5_000_000,
                restores=2,
            )
        if name == "long":
            return cls(
                "long",
                driver_kills=25,
                kill_event_rate=700.0,
                kill_events_cap=10_000_000,
                restores=10,
            )
        raise ValueError(f"unknown profile {name!r}: short or long")


@dataclass
class ScenarioResult:
    """One scenario's figures. `passed` is the scenario's own verdict on its checks."""

    name: str
    title: str
    faults_injected: int = 0
    records_checked: int = 0
    duplicates: int = 0
    missing: int = 0
    restarts: int = 0
    passed: bool = False
    seconds: float = 0.0
    checks: dict[str, Any] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)

    def check(self, name: str, ok: bool, value: Any = None) -> bool:
        """Record a named check (and its observed value); a failed one fails the scenario."""
        self.checks[name] = value if value is not None else ok
        if not ok:
            self.failures.append(f"{name}: {value!r}")
        return ok

    def finish(self) -> ScenarioResult:
        self.passed = not self.failures and self.duplicates == 0 and self.missing == 0
        return self

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
