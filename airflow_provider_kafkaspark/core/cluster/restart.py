"""Restart policy: at most K restarts in a sliding window, with exponential back-off.

A job whose bootstrap list named decommissioned brokers can restart for an hour, each start
waiting out metadata timeouts (docs/design.md). A bounded budget turns that into one clear failure.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from airflow_provider_kafkaspark.errors import InvalidInputError

# The runner's exits that no restart policy restarts (spark/final_exit.py): a clean stop (0), a
# stop without draining (2), the lease held by a live driver (3), a bad job (4), a standby no
# handover reached (5), the lease taken over while it ran (6). Any other exit, or a kill by a
# signal, is a crash.
FINAL_EXITS = frozenset({0, 2, 3, 4, 5, 6})


@dataclass(frozen=True)
class RestartPolicy:
    max_restarts: int = 3
    window_s: float = 600.0
    backoff_s: float = 5.0
    backoff_max_s: float = 120.0

    def __post_init__(self) -> None:
        if self.max_restarts < 0:
            raise InvalidInputError(f"restart policy: max_restarts {self.max_restarts} < 0")
        if self.window_s <= 0 or self.backoff_s < 0 or self.backoff_max_s < self.backoff_s:
            raise InvalidInputError(
                "restart policy: window_s must be > 0 and 0 <= backoff_s <= backoff_max_s"
            )

    def to_dict(self) -> dict[str, Any]:
        return {
            "max_restarts": self.max_restarts,
            "window_s": self.window_s,
            "backoff_s": self.backoff_s,
            "backoff_max_s": self.backoff_max_s,
        }


@dataclass
class RestartBudget:
    policy: RestartPolicy
    restarts_at: list[float] = field(default_factory=list)

    def next_delay(self, now_s: float) -> float | None:
        """Seconds to wait before the next restart, or None when the budget is spent."""
        recent = [t for t in self.restarts_at if now_s - t < self.policy.window_s]
        self.restarts_at = recent
        if len(recent) >= self.policy.max_restarts:
            return None
        return float(min(self.policy.backoff_max_s, self.policy.backoff_s * 2 ** len(recent)))

    def record(self, now_s: float) -> None:
        self.restarts_at.append(now_s)
