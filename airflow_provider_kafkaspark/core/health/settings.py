"""The settings of a health watch, in one frozen object shared by `StreamingHealthSensor`,
`StreamingHealthTrigger` and the trigger's serialized form: each setting is declared,
checked and serialized here once, and `watch()` is the one place a `HealthWatch` is built."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

from airflow_provider_kafkaspark.core.health.rules import HealthPolicy
from airflow_provider_kafkaspark.core.health.watch import (
    DEFAULT_STARTUP_GRACE_MS,
    HealthWatch,
    parse_fail_on,
)
from airflow_provider_kafkaspark.core.spec.args import non_negative_int, positive_number
from airflow_provider_kafkaspark.errors import InvalidArgumentError


@dataclass(frozen=True)
class HealthSettings:
    """What a watch waits for and how it polls (the run it watches is not part of it).

    `fail_on` holds status names, sorted, so the serialized form is plain JSON that compares
    equal after a round trip; `poll_interval_s` is the sensor's `poke_interval`, in poke mode
    and in the triggerer alike.
    """

    min_new_batches: int = 3
    window_s: float = 60.0
    fail_on: tuple[str, ...] = tuple(sorted(s.value for s in parse_fail_on(None)))
    lease_required: bool = True
    startup_grace_s: float = DEFAULT_STARTUP_GRACE_MS / 1000
    poll_interval_s: float = 10.0
    kafka_timeout_s: float = 10.0
    policy: HealthPolicy | None = None

    @classmethod
    def checked(cls, owner: str, **values: Any) -> HealthSettings:
        """The settings from `values` (the fields above; the rest keep their defaults), each
        checked and named as `<owner>: <setting>` when wrong. `fail_on` may be names in any
        case, `policy` a mapping of `HealthPolicy` fields."""
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - names)
        if unknown:
            raise InvalidArgumentError(f"{owner}: unknown settings {unknown}")
        raw = {f.name: getattr(cls, f.name) for f in fields(cls)} | values
        if not isinstance(raw["lease_required"], bool):
            raise InvalidArgumentError(f"{owner}: lease_required must be True or False")
        policy = raw["policy"]
        if policy is not None and not isinstance(policy, HealthPolicy):
            try:
                policy = HealthPolicy(**dict(policy))
            except TypeError as exc:
                raise InvalidArgumentError(f"{owner}: policy: {exc}") from None
        grace = raw["startup_grace_s"]
        return cls(
            min_new_batches=non_negative_int(raw["min_new_batches"], f"{owner}: min_new_batches"),
            window_s=positive_number(raw["window_s"], f"{owner}: window_s"),
            fail_on=tuple(sorted(s.value for s in parse_fail_on(raw["fail_on"]))),
            lease_required=raw["lease_required"],
            startup_grace_s=0.0
            if grace == 0
            else positive_number(grace, f"{owner}: startup_grace_s"),
            poll_interval_s=positive_number(raw["poll_interval_s"], f"{owner}: poll_interval_s"),
            kafka_timeout_s=positive_number(raw["kafka_timeout_s"], f"{owner}: kafka_timeout_s"),
            policy=policy,
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON: what the trigger serializes."""
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        values["fail_on"] = list(self.fail_on)
        values["policy"] = None if self.policy is None else asdict(self.policy)
        return values

    @classmethod
    def from_dict(cls, values: Mapping[str, Any], owner: str = "health settings") -> HealthSettings:
        return cls.checked(owner, **values)

    def watch(
        self, since_batch: int | None, since_ms: int | None, started_ms: int | None = None
    ) -> HealthWatch:
        """A new watch of one run with these settings."""
        return HealthWatch(
            since_batch=since_batch,
            min_new_batches=self.min_new_batches,
            window_ms=round(self.window_s * 1000),
            policy=self.policy,
            fail_on=parse_fail_on(self.fail_on),
            lease_required=self.lease_required,
            since_ms=since_ms,
            started_ms=started_ms,
            startup_grace_ms=round(self.startup_grace_s * 1000),
        )
