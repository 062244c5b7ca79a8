"""The address and ports of the local stack's servers (Kafka, the S3 store, YARN).

Loopback, unless `KAFKASPARK_LOCAL_HOST` names this host's address in the multi-host test
bed (`kafkaspark_devstack/netbed.py`), where each server runs on a host of its own."""

from __future__ import annotations

import os
import socket

HOST_ENV = "KAFKASPARK_LOCAL_HOST"
HOST = os.environ.get(HOST_ENV) or "127.0.0.1"


def free_port(host: str = HOST) -> int:
    """A port nothing listens on right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def port_in_use(port: int, host: str = HOST) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return True
    return False
