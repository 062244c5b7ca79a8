"""Checks of operator and sensor arguments that are not templated (checked at construction):
a wrong type or value is an `InvalidArgumentError` naming the parameter, not a TypeError from
a comparison deep inside."""

from __future__ import annotations

import math
from typing import Any

from airflow_provider_kafkaspark.errors import InvalidArgumentError


def _shown(value: object) -> str:
    return repr(value)[:40] if isinstance(value, str | int | float) else type(value).__name__


def positive_number(value: object, name: str) -> float:
    """`value` as a float when it is a finite number > 0 (not a bool, not a string)."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise InvalidArgumentError(f"{name} must be a number > 0, got {_shown(value)}")
    return float(value)


def non_negative_int(value: object, name: str) -> int:
    """`value` when it is an int >= 0 (not a bool, not a string)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidArgumentError(f"{name} must be an int >= 0, got {_shown(value)}")
    return value


def with_poll_interval(
    kwargs: dict[str, Any], poll_interval_s: float | None, default_s: float
) -> dict[str, Any]:
    """A sensor's keyword arguments with Airflow's `poke_interval` set from
    `poll_interval_s`, the sensors' other name for it (their triggers poll at the same
    interval); both given and different is refused."""
    if poll_interval_s is not None:
        if "poke_interval" in kwargs and kwargs["poke_interval"] != poll_interval_s:
            raise InvalidArgumentError(
                f"{kwargs.get('task_id')}: poll_interval_s and poke_interval differ; give one"
            )
        kwargs["poke_interval"] = poll_interval_s
    kwargs.setdefault("poke_interval", default_s)
    return kwargs
