"""The driver's SIGUSR1 stack dump (`runner.dump_thread_stacks`): every thread, named, with
the frames it waits in, written while other threads run."""

from __future__ import annotations

import os
import signal
import threading

import pytest

from airflow_provider_kafkaspark.spark.runner import dump_thread_stacks


def _parked_in_a_wait(ready: threading.Event, release: threading.Event) -> None:
    ready.set()
    release.wait(10)


def test_a_signal_writes_every_thread_with_the_frame_it_waits_in(
    capsys: pytest.CaptureFixture[str],
) -> None:
    ready, release = threading.Event(), threading.Event()
    parked = threading.Thread(target=_parked_in_a_wait, args=(ready, release), name="parked-worker")
    parked.start()
    previous = signal.signal(signal.SIGUSR1, dump_thread_stacks)
    try:
        assert ready.wait(10)
        os.kill(os.getpid(), signal.SIGUSR1)
    finally:
        signal.signal(signal.SIGUSR1, previous)
        release.set()
        parked.join(10)
    err = capsys.readouterr().err
    assert "parked-worker (most recent call first):" in err
    assert "MainThread (most recent call first):" in err
    section = err.split("parked-worker (most recent call first):", 1)[1].split("Thread 0x")[0]
    assert "_parked_in_a_wait" in section
