"""Loaded at start-up by every Python process whose PYTHONPATH begins with this folder
(`faults.clock_env`): `time.time()` and `time.time_ns()` read KAFKASPARK_FAULT_CLOCK_OFFSET_S
seconds off, as on a host whose clock is wrong. (libfaketime, preloaded, would stall
librdkafka's timed waits in the same process and make `time.time()` fail in threads.)"""

from __future__ import annotations

import os
import time

_OFFSET_S = float(os.environ.get("KAFKASPARK_FAULT_CLOCK_OFFSET_S") or 0)

if _OFFSET_S:
    _wall, _wall_ns = time.time, time.time_ns
    _offset_ns = int(_OFFSET_S * 1e9)

    def _skewed() -> float:
        return _wall() + _OFFSET_S

    def _skewed_ns() -> int:
        return _wall_ns() + _offset_ns

    time.time = _skewed
    time.time_ns = _skewed_ns
