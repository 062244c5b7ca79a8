"""The local S3-compatible server (SeaweedFS) the project starts itself: it serves S3 with
the credentials it was given, refuses others, enforces the conditional writes the lease on
object storage needs, and keeps its data across a stop and a start."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_kafkaspark.errors import ObjectStoreStartError
from airflow_provider_kafkaspark.local.s3 import STATE_FILE, LocalS3Server


def s3fs_for(server: LocalS3Server, **changes: object) -> Any:
    import s3fs

    return s3fs.S3FileSystem(skip_instance_cache=True, **{**server.storage_options(), **changes})


def precondition_failed(exc: BaseException) -> bool:
    return "pre-conditions" in str(exc) or "PreconditionFailed" in repr(exc.__cause__)


def test_conditional_writes_credentials_and_restart(tmp_path: Path) -> None:
    server = LocalS3Server(tmp_path / "s3")
    with server:
        state = tmp_path / "s3" / STATE_FILE
        assert stat.S_IMODE(state.stat().st_mode) == 0o600  # holds the secret key
        server.create_bucket("lease-test")
        fs = s3fs_for(server)
        lease = "lease-test/cp/_kafkaspark/lease.json"

        fs.pipe_file(lease, b"first", mode="create")
        with pytest.raises(OSError) as refused:
            fs.pipe_file(lease, b"second", mode="create")
        assert precondition_failed(refused.value)
        assert fs.cat(lease) == b"first"

        etag = fs.info(lease)["ETag"]
        fs.pipe_file(lease, b"renewed", IfMatch=etag)
        with pytest.raises(OSError) as stale:
            fs.pipe_file(lease, b"late", IfMatch=etag)
        assert precondition_failed(stale.value)
        assert fs.cat(lease) == b"renewed"

        wrong = s3fs_for(server, secret="not-the-secret")
        with pytest.raises(PermissionError):
            wrong.cat(lease)

    assert not server.is_running()
    again = LocalS3Server.attach(tmp_path / "s3")
    with again:
        assert again.endpoint_url == server.endpoint_url
        assert s3fs_for(again).cat("lease-test/cp/_kafkaspark/lease.json") == b"renewed"


def local_s3(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "airflow_provider_kafkaspark.cli", "local", "s3", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


def test_the_cli_starts_reports_and_stops_a_server(tmp_path: Path) -> None:
    base = str(tmp_path / "cli-s3")
    started = local_s3("start", "--dir", base, "--port", "0", "--bucket", "bucket-one")
    try:
        assert started.returncode == 0, started.stderr
        server = LocalS3Server.attach(base)
        assert server.secret_key not in started.stdout + started.stderr
        assert server.endpoint_url in started.stdout
        assert s3fs_for(server).exists("bucket-one")
        status = local_s3("status", "--dir", base)
        assert status.returncode == 0 and json.loads(status.stdout)["running"] is True
    finally:
        stopped = local_s3("stop", "--dir", base)
    assert stopped.returncode == 0, stopped.stderr
    status = local_s3("status", "--dir", base)
    assert status.returncode != 0 and json.loads(status.stdout)["running"] is False


def test_a_start_that_fails_leaves_no_server_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = LocalS3Server(tmp_path / "s3")
    started: list[int] = []

    def never_ready(timeout: float) -> None:
        assert server.is_running()  # the process is there, it just never answers
        started.append(server.status()["pid"])
        raise ObjectStoreStartError("did not answer (test)")

    monkeypatch.setattr(server, "_wait_ready", never_ready)
    with pytest.raises(ObjectStoreStartError):
        server.start()
    assert len(started) == 1 and not Path(f"/proc/{started[0]}").exists()
    assert server.status()["pid"] is None
