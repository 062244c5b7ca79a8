"""`poll_interval_s`, the sensors' other name for Airflow's `poke_interval`: one check for
both sensors of a running job (health and watch)."""

from __future__ import annotations

from typing import Any

from airflow_provider_kafkaspark.errors import InvalidArgumentError


def with_poll_interval(
    kwargs: dict[str, Any], poll_interval_s: float | None, default_s: float
) -> dict[str, Any]:
    """The operator's keyword arguments with `poke_interval` set from `poll_interval_s` (the
    trigger polls at the same interval); both given and different is refused."""
    if poll_interval_s is not None:
        if "poke_interval" in kwargs and kwargs["poke_interval"] != poll_interval_s:
            raise InvalidArgumentError(
                f"{kwargs.get('task_id')}: poll_interval_s and poke_interval differ; give one"
            )
        kwargs["poke_interval"] = poll_interval_s
    kwargs.setdefault("poke_interval", default_s)
    return kwargs
