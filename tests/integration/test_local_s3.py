"""The local S3-compatible server (SeaweedFS) the project starts itself: it serves S3 with
the credentials it was given, refuses others, enforces the conditional writes the lease on
object storage needs, and keeps its data across a stop and a start."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_kafkaspark.errors import ObjectStoreStartError
from kafkaspark_devstack.s3 import STATE_FILE, LocalS3Server


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


def test_a_start_on_another_port_than_the_folders_is_refused(tmp_path: Path) -> None:
    from kafkaspark_devstack.ports import free_port

    base = str(tmp_path / "cli-s3")
    started = local_s3("start", "--dir", base, "--port", "0")
    try:
        assert started.returncode == 0, started.stderr
        kept = LocalS3Server.attach(base).endpoint_url.rsplit(":", 1)[1]
    finally:
        stopped = local_s3("stop", "--dir", base)
    assert stopped.returncode == 0, stopped.stderr
    other = str(free_port())
    try:
        asked = local_s3("start", "--dir", base, "--port", other)
    finally:
        # A start that was not refused (the defect) leaves no server behind either.
        local_s3("stop", "--dir", base)
    assert asked.returncode == 2, asked.stdout + asked.stderr
    lines = asked.stderr.strip().splitlines()
    assert len(lines) == 1, asked.stderr
    assert lines[0] == (
        f"kafkaspark: error: --port {other}: the local S3 server in {Path(base).resolve()} "
        f"({STATE_FILE}) has --port {kept}; leave out --port to start it as it is, or give "
        f"another --dir for a new one with --port {other}"
    )
    assert asked.stdout == ""
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


# Run after `eval` of the env command's lines: the AWS variables reach s3fs, and the printed
# `aws` connection reaches the store through Airflow's own parsing of AIRFLOW_CONN_* and this
# package's hook, with no AWS variable left in the process.
USE_THE_ENV = """
import os, sys
import s3fs
fs = s3fs.S3FileSystem(skip_instance_cache=True)
fs.pipe_file(sys.argv[1] + "/by-variables", b"v")
for key in [k for k in os.environ if k.startswith("AWS_")]:
    del os.environ[key]
from airflow_provider_kafkaspark.core.storage.location import open_location
from airflow_provider_kafkaspark.hooks.kafkaspark import KafkaSparkHook
with KafkaSparkHook(aws_conn_id="printed_s3").storage():
    where = open_location(sys.argv[1])
    print(where.fs.cat_file(where.root + "/by-variables").decode())
"""


def test_env_prints_the_variables_and_an_aws_connection_that_work(
    s3_server: LocalS3Server, tmp_path: Path
) -> None:
    from tests.conftest import S3_BUCKET

    base = str(s3_server.base_dir)
    masked = local_s3("env", "--dir", base, "--conn-id", "printed_s3")
    assert masked.returncode == 0, masked.stderr
    assert s3_server.secret_key not in masked.stdout + masked.stderr
    assert "export AWS_SECRET_ACCESS_KEY='***'" in masked.stdout
    assert "--show-secret" in masked.stderr

    shown = local_s3("env", "--dir", base, "--conn-id", "printed_s3", "--show-secret")
    assert shown.returncode == 0, shown.stderr
    assert s3_server.endpoint_url in shown.stdout and "AIRFLOW_CONN_PRINTED_S3=" in shown.stdout
    script = tmp_path / "use_env.py"
    script.write_text(USE_THE_ENV)
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "AIRFLOW_CONN_"))}
    used = subprocess.run(
        ["bash", "-c", f'eval "$1"; exec "{sys.executable}" "{script}" "$2"', "env",
         shown.stdout, f"s3://{S3_BUCKET}/{tmp_path.name}"],
        capture_output=True, text=True, timeout=120, check=False, env=clean,
    )  # fmt: skip
    assert used.returncode == 0, used.stderr[-2000:]
    assert used.stdout.strip().endswith("v")

    bad = local_s3("env", "--dir", base, "--conn-id", "my-s3")
    assert bad.returncode == 2 and "--conn-id 'my-s3'" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1
