"""The driver's lease heartbeat: renew every ttl/3, and give the lease up once it was not
renewed for a whole ttl by this process's monotonic clock.

Each renewal runs in a thread of its own, so that a call that hangs (a host cut off from its
store: every connect waits out its timeout, and botocore retries) cannot hold the expiry
check back. Before, such a driver noticed only when the call failed, 37 s into a 15 s ttl,
while another driver may have taken the lease at 15 s.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from airflow_provider_kafkaspark.core.control.lease import Lease
from airflow_provider_kafkaspark.errors import LeaseHeldError

log = logging.getLogger("kafkaspark.driver")


@dataclass
class _Renewal:
    started: float
    done: threading.Event
    lease: Lease | None = None
    error: BaseException | None = None


class LeaseHeartbeat:
    """`LeaseHeartbeat(renew, ttl_s, renewed_at, on_renewed, on_lost).run(stop_event)`:
    `renew` writes the lease (fenced) and returns it; `renewed_at` is the monotonic time the
    lease was taken; `on_lost(why, taken_over)` is called once, when a renewal is refused
    (`LeaseHeldError`: taken over) or none succeeded for `ttl_s`."""

    def __init__(
        self,
        renew: Callable[[], Lease],
        ttl_s: float,
        renewed_at: float,
        on_renewed: Callable[[Lease], None],
        on_lost: Callable[[str, bool], None],
    ) -> None:
        self.renew = renew
        self.ttl_s = ttl_s
        self.renewed_at = renewed_at  # monotonic time of the last write of the lease
        self.on_renewed = on_renewed
        self.on_lost = on_lost

    def run(self, done: threading.Event) -> None:
        renew_every = self.ttl_s / 3
        tick = min(1.0, renew_every / 2)
        pending: _Renewal | None = None
        last_error: BaseException | None = None
        while not done.wait(tick):
            now = time.monotonic()
            if pending is None and now - self.renewed_at >= renew_every:
                pending = self._start(now)
            if pending is not None and pending.done.is_set():
                if isinstance(pending.error, LeaseHeldError):
                    self.on_lost(str(pending.error), True)
                    return
                if pending.lease is not None:
                    self.renewed_at = pending.started
                    self.on_renewed(pending.lease)
                else:
                    last_error = pending.error
                    log.warning("lease heartbeat failed, will retry: %s", last_error)
                pending = None
            unrenewed_s = time.monotonic() - self.renewed_at
            if unrenewed_s > self.ttl_s:
                if pending is not None:
                    why = (
                        f"a renewal has not answered for {time.monotonic() - pending.started:.0f}s"
                    )
                else:
                    why = f"last error: {last_error}"
                self.on_lost(f"not renewed for {unrenewed_s:.0f}s ({why})", False)
                return

    def _start(self, now: float) -> _Renewal:
        renewal = _Renewal(now, threading.Event())

        def attempt() -> None:
            try:
                renewal.lease = self.renew()
            except BaseException as exc:  # noqa: BLE001 - reported by the heartbeat loop
                renewal.error = exc
            finally:
                renewal.done.set()

        threading.Thread(target=attempt, name="kafkaspark-lease-renewal", daemon=True).start()
        return renewal
