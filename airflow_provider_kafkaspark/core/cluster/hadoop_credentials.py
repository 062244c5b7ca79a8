"""Hadoop's token storage file (`Credentials`, magic `HDTS`): how secrets reach a YARN
application without a file in its staging folder.

A client names such a file in `HADOOP_TOKEN_FILE_LOCATION`; Hadoop's login reads its secret
keys into the user's credentials, and spark-submit hands those to the ResourceManager with the
application master's launch context (the channel that carries delegation tokens). The
NodeManager gives them to the container as a file only the application's user reads, named by
the container's own `HADOOP_TOKEN_FILE_LOCATION`. Spark's staging folder and its conf archive
never see them.

Both of Hadoop's formats are read (the Writable one, version 0, which Hadoop writes for
launch contexts, and the protobuf one, version 1); the Writable one is written.
"""

from __future__ import annotations

import io
from collections.abc import Mapping

MAGIC = b"HDTS"
WRITABLE, PROTOBUF = 0, 1


class CredentialsFormatError(ValueError):
    """Not a token storage file this module reads."""


# -- Hadoop's WritableUtils variable-length integers -------------------------------------------


def _write_vint(out: io.BytesIO, value: int) -> None:
    if -112 <= value <= 127:
        out.write(bytes([value & 0xFF]))
        return
    length = -112
    if value < 0:
        value ^= -1
        length = -120
    tmp = value
    while tmp != 0:
        tmp >>= 8
        length -= 1
    out.write(bytes([length & 0xFF]))
    count = -(length + 120) if length < -120 else -(length + 112)
    for index in range(count, 0, -1):
        out.write(bytes([(value >> ((index - 1) * 8)) & 0xFF]))


def _read_vint(data: io.BytesIO) -> int:
    first = _read(data, 1)[0]
    signed = first - 256 if first > 127 else first
    if signed >= -112:
        return signed
    negative = signed < -120
    count = -(signed + 120) if negative else -(signed + 112)
    value = 0
    for byte in _read(data, count):
        value = (value << 8) | byte
    return value ^ -1 if negative else value


def _read(data: io.BytesIO, count: int) -> bytes:
    chunk = data.read(count)
    if count < 0 or len(chunk) != count:
        raise CredentialsFormatError("token storage file ends early")
    return chunk


def _write_bytes(out: io.BytesIO, value: bytes) -> None:
    _write_vint(out, len(value))
    out.write(value)


def _read_bytes(data: io.BytesIO) -> bytes:
    return _read(data, _read_vint(data))


# -- the formats ------------------------------------------------------------------------------


def encode_secret_keys(secrets: Mapping[str, bytes]) -> bytes:
    """A token storage file (Writable format) holding `secrets` as secret keys, no tokens."""
    out = io.BytesIO()
    out.write(MAGIC + bytes([WRITABLE]))
    _write_vint(out, 0)  # tokens
    _write_vint(out, len(secrets))
    for alias, value in sorted(secrets.items()):
        _write_bytes(out, alias.encode())
        _write_bytes(out, value)
    return out.getvalue()


def decode_secret_keys(raw: bytes) -> dict[str, bytes]:
    """The secret keys of a token storage file (its tokens are skipped)."""
    data = io.BytesIO(raw)
    if data.read(4) != MAGIC:
        raise CredentialsFormatError("not a Hadoop token storage file (no HDTS magic)")
    version = _read(data, 1)[0]
    if version == WRITABLE:
        return _writable_secrets(data)
    if version == PROTOBUF:
        return _protobuf_secrets(data)
    raise CredentialsFormatError(f"token storage format {version} is not known here")


def _writable_secrets(data: io.BytesIO) -> dict[str, bytes]:
    for _ in range(_read_vint(data)):
        _read_bytes(data)  # alias
        for _field in range(4):  # identifier, password, kind, service
            _read_bytes(data)
    secrets: dict[str, bytes] = {}
    for _ in range(_read_vint(data)):
        alias = _read_bytes(data).decode()
        secrets[alias] = _read_bytes(data)
    return secrets


def _varint(data: io.BytesIO) -> int:
    value = shift = 0
    for _ in range(10):
        byte = _read(data, 1)[0]
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value
        shift += 7
    raise CredentialsFormatError("a protobuf varint longer than 10 bytes")


def _fields(data: io.BytesIO) -> list[tuple[int, bytes | int]]:
    """A protobuf message's fields (number, value), length-delimited or varint."""
    fields: list[tuple[int, bytes | int]] = []
    while data.tell() < len(data.getbuffer()):
        key = _varint(data)
        number, wire = key >> 3, key & 7
        if wire == 0:
            fields.append((number, _varint(data)))
        elif wire == 2:
            fields.append((number, _read(data, _varint(data))))
        else:
            raise CredentialsFormatError(f"protobuf wire type {wire} is not expected here")
    return fields


def _protobuf_secrets(data: io.BytesIO) -> dict[str, bytes]:
    # CredentialsProto (delimited): tokens = 1, secrets = 2, each a CredentialsKVProto of
    # alias = 1, token = 2, secret = 3.
    message = io.BytesIO(_read(data, _varint(data)))
    secrets: dict[str, bytes] = {}
    for number, value in _fields(message):
        if number != 2 or not isinstance(value, bytes):
            continue
        entry = dict(_fields(io.BytesIO(value)))
        alias, secret = entry.get(1), entry.get(3, b"")
        if isinstance(alias, bytes) and isinstance(secret, bytes):
            secrets[alias.decode()] = secret
    return secrets
