"""Hadoop's token storage format, both ways, against bytes Hadoop's own code writes."""

from __future__ import annotations

import io

import pytest

from airflow_provider_kafkaspark.core.cluster.hadoop_credentials import (
    CredentialsFormatError,
    _read_vint,
    _write_vint,
    decode_secret_keys,
    encode_secret_keys,
)


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        (0, b"\x00"),
        (127, b"\x7f"),
        (-112, b"\x90"),
        (128, b"\x8f\x80"),  # WritableUtils: -113 (one byte follows), then 0x80
        (300, b"\x8e\x01\x2c"),
        (70000, b"\x8d\x01\x11\x70"),
        (-113, b"\x87\x70"),
    ],
)
def test_variable_length_integers_match_hadoops(value: int, encoded: bytes) -> None:
    out = io.BytesIO()
    _write_vint(out, value)
    assert out.getvalue() == encoded
    assert _read_vint(io.BytesIO(encoded)) == value


def test_secret_keys_round_trip() -> None:
    secrets = {"kafkaspark.A": b"x" * 300, "kafkaspark.B": "pässword".encode()}
    raw = encode_secret_keys(secrets)
    assert raw.startswith(b"HDTS\x00")
    assert decode_secret_keys(raw) == secrets


def test_tokens_are_skipped() -> None:
    # One token (alias "amrm", identifier, password, kind, service) then one secret key: what
    # a container's file holds after the ResourceManager adds its AMRMToken.
    out = io.BytesIO()
    out.write(b"HDTS\x00")
    _write_vint(out, 1)
    for part in (b"amrm", b"\x01\x02", b"pw", b"YARN_AM_RM_TOKEN", b"127.0.0.1:8030"):
        _write_vint(out, len(part))
        out.write(part)
    _write_vint(out, 1)
    for part in (b"kafkaspark.A", b"secret"):
        _write_vint(out, len(part))
        out.write(part)
    assert decode_secret_keys(out.getvalue()) == {"kafkaspark.A": b"secret"}


def test_protobuf_format() -> None:
    def field(number: int, value: bytes) -> bytes:
        return bytes([number << 3 | 2, len(value)]) + value

    entry = field(1, b"kafkaspark.A") + field(3, b"secret")
    token = field(1, b"amrm") + field(2, field(1, b"id"))
    message = field(1, token) + field(2, entry)
    raw = b"HDTS\x01" + bytes([len(message)]) + message
    assert decode_secret_keys(raw) == {"kafkaspark.A": b"secret"}


@pytest.mark.parametrize("raw", [b"", b"NOPE\x00", b"HDTS\x07", b"HDTS\x00\x01\x05ab"])
def test_other_files_are_refused(raw: bytes) -> None:
    with pytest.raises(CredentialsFormatError):
        decode_secret_keys(raw)
