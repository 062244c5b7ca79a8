"""Typed errors. Each message names the file, port, topic or field at fault and what to do."""

from __future__ import annotations


class KafkaSparkError(Exception):
    """Base class of every error this package raises on purpose."""


class LocalStackError(KafkaSparkError):
    """The local Kafka/Spark stack cannot start or be reached."""


class JavaNotFoundError(LocalStackError):
    """No usable Java runtime."""


class JarsNotFoundError(LocalStackError):
    """The JVM jars resolved by the setup step are missing."""


class PortInUseError(LocalStackError):
    """A port the local stack wants is already taken."""


class BrokerStartError(LocalStackError):
    """A local broker process exited or did not become ready."""
