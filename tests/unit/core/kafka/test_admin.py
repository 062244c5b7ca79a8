"""The Kafka facade's pure parts: config, input checks, error mapping."""

from __future__ import annotations

import re
import subprocess
import sys
import time

import pytest
from confluent_kafka import KafkaError, KafkaException

from airflow_provider_kafkaspark.core.kafka.admin import KafkaFacade
from airflow_provider_kafkaspark.core.kafka.client import client_config
from airflow_provider_kafkaspark.core.kafka.offsets import TopicPartition
from airflow_provider_kafkaspark.errors import (
    ConsumerGroupActiveError,
    InvalidInputError,
    KafkaAccessError,
    KafkaCoordinatorMovedError,
    KafkaRequestError,
    KafkaUnavailableError,
    TopicNotFoundError,
)

SECRET = "hunter2-secret"

# -- config ------------------------------------------------------------------------------------


def test_missing_bootstrap_servers_is_named() -> None:
    with pytest.raises(InvalidInputError, match=re.escape("'bootstrap.servers'")):
        KafkaFacade({"sasl.password": SECRET})


@pytest.mark.parametrize("servers", ["", "  ", 9092, ["a:1"]])
def test_bootstrap_servers_must_be_a_non_empty_string(servers: object) -> None:
    with pytest.raises(InvalidInputError, match=re.escape("'bootstrap.servers'")):
        client_config({"bootstrap.servers": servers}, 5)


@pytest.mark.parametrize("timeout_s", [0, -1, float("nan"), float("inf")])
def test_timeout_must_be_positive_and_finite(timeout_s: float) -> None:
    with pytest.raises(InvalidInputError, match="timeout_s"):
        KafkaFacade({"bootstrap.servers": "a:1"}, timeout_s=timeout_s)


def test_timeouts_are_derived_from_the_budget() -> None:
    config = client_config({"bootstrap.servers": "a:1"}, 6)
    assert config["socket.timeout.ms"] == 6000
    assert config["socket.connection.setup.timeout.ms"] == 2000
    assert config["reconnect.backoff.max.ms"] == 1500
    assert config["allow.auto.create.topics"] is False
    assert config["log_level"] == 0
    # Java-only names would make librdkafka refuse the config or warn on every client.
    assert "default.api.timeout.ms" not in config
    assert "request.timeout.ms" not in config


def test_derived_timeouts_stay_in_librdkafka_ranges() -> None:
    short = client_config({"bootstrap.servers": "a:1"}, 0.2)
    assert short["socket.timeout.ms"] == 200
    assert short["socket.connection.setup.timeout.ms"] == 1000
    assert short["reconnect.backoff.max.ms"] == 100
    long = client_config({"bootstrap.servers": "a:1"}, 3600)
    assert long["socket.timeout.ms"] == 300_000
    assert long["reconnect.backoff.max.ms"] == 10_000


def test_caller_settings_win_except_topic_auto_creation() -> None:
    config = client_config(
        {
            "bootstrap.servers": "a:1",
            "socket.timeout.ms": 1234,
            "socket.connection.setup.timeout.ms": 4321,
            "allow.auto.create.topics": True,
            "log_level": 6,
        },
        10,
    )
    assert config["socket.timeout.ms"] == 1234
    assert config["socket.connection.setup.timeout.ms"] == 4321
    assert config["allow.auto.create.topics"] is False
    assert config["log_level"] == 6


def test_backoff_cap_never_below_the_callers_backoff() -> None:
    # librdkafka refuses a config whose max backoff is below its initial backoff.
    config = client_config({"bootstrap.servers": "a:1", "reconnect.backoff.ms": "5000"}, 2)
    assert config["reconnect.backoff.max.ms"] == 5000


def test_rejected_config_names_the_key_but_not_the_value() -> None:
    facade = KafkaFacade(
        {"bootstrap.servers": "a:1", "sasl.password": SECRET, "security.protocol": "bogus-proto"}
    )
    with pytest.raises(InvalidInputError, match=re.escape("'security.protocol'")) as caught:
        facade.topic_partitions()
    assert "bogus-proto" not in str(caught.value)
    assert SECRET not in str(caught.value)


def test_importing_the_module_does_not_import_confluent_kafka() -> None:
    code = (
        "import sys\n"
        "from airflow_provider_kafkaspark.core.kafka.admin import KafkaFacade\n"
        "KafkaFacade({'bootstrap.servers': 'a:1'})\n"
        "assert 'confluent_kafka' not in sys.modules, 'imported at module level'\n"
        "assert 'airflow' not in sys.modules and 'pyspark' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# -- input checks that need no broker -------------------------------------------------------


def test_bad_inputs_fail_before_any_request() -> None:
    # Nothing listens at a:1: a request would fail after the timeout, not return.
    facade = KafkaFacade({"bootstrap.servers": "a:1"}, timeout_s=1)
    tp = TopicPartition("t", 0)
    with pytest.raises(InvalidInputError, match="timestamp"):
        facade.offsets_for_times({tp: -5})
    with pytest.raises(InvalidInputError, match="offset"):
        facade.record_timestamps({tp: -1})
    with pytest.raises(InvalidInputError, match="partition"):
        facade.watermarks([TopicPartition("t", -1)])
    with pytest.raises(InvalidInputError, match="group"):
        facade.group_offsets("")
    with pytest.raises(InvalidInputError, match="offset"):
        facade.commit_group_offsets("g", {"t": {0: -3}})
    assert facade.watermarks([]) == {}
    assert facade.topic_partitions([]) == {}
    facade.commit_group_offsets("g", {})


# -- error mapping -------------------------------------------------------------------------------


def failure(code: int, text: str = "reason") -> KafkaException:
    return KafkaException(KafkaError(code, text))


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        (KafkaError._TIMED_OUT, KafkaUnavailableError),
        (KafkaError._TRANSPORT, KafkaUnavailableError),
        (KafkaError.UNKNOWN_TOPIC_OR_PART, TopicNotFoundError),
        (KafkaError._UNKNOWN_PARTITION, TopicNotFoundError),
        (KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaAccessError),
        (KafkaError.SASL_AUTHENTICATION_FAILED, KafkaAccessError),
        (KafkaError.UNKNOWN_MEMBER_ID, ConsumerGroupActiveError),
        (KafkaError.POLICY_VIOLATION, KafkaRequestError),
    ],
)
def test_kafka_errors_map_to_typed_errors(code: int, expected: type[Exception]) -> None:
    facade = KafkaFacade({"bootstrap.servers": "k1:9092,k2:9092"}, timeout_s=3)
    error = facade._translate(failure(code), "watermarks", "partition t-0")
    assert type(error) is expected
    assert "k1:9092,k2:9092" in str(error)


def test_unavailable_names_servers_and_timeout_but_no_secret() -> None:
    facade = KafkaFacade(
        {"bootstrap.servers": "k1:9092", "sasl.password": SECRET, "sasl.username": "alice"},
        timeout_s=3,
    )
    error = facade._translate(failure(KafkaError._TIMED_OUT, f"echo {SECRET}"), "watermarks")
    assert isinstance(error, KafkaUnavailableError)
    assert "k1:9092" in str(error) and "3s" in str(error)
    assert SECRET not in str(error)


# A coordinator still loading; a partition just added, asked of a broker behind its
# leader's epoch.
@pytest.mark.parametrize(
    "code", [KafkaError.COORDINATOR_LOAD_IN_PROGRESS, KafkaError.UNKNOWN_LEADER_EPOCH]
)
def test_transient_errors_are_retried_within_the_budget(code: int) -> None:
    facade = KafkaFacade({"bootstrap.servers": "k1:9092"}, timeout_s=5)
    calls: list[float] = []

    def flaky(remaining: float) -> str:
        calls.append(remaining)
        if len(calls) < 3:
            raise failure(code)
        return "answer"

    assert facade._call("group offsets", flaky) == "answer"
    assert len(calls) == 3
    assert calls[-1] < calls[0] <= 5


def test_transient_errors_become_unavailable_when_the_budget_is_spent() -> None:
    facade = KafkaFacade({"bootstrap.servers": "k1:9092"}, timeout_s=0.6)

    def loading(remaining: float) -> str:
        raise failure(KafkaError.COORDINATOR_LOAD_IN_PROGRESS)

    started = time.monotonic()
    with pytest.raises(KafkaUnavailableError, match="COORDINATOR_LOAD_IN_PROGRESS"):
        facade._call("group offsets", loading)
    assert time.monotonic() - started < 3


# Asked once: a permanent refusal; and a moved coordinator, since librdkafka's admin client
# would send the retry to the same broker (10 s of the same answer before, issue 44): the
# caller gets a typed error at once and makes a new client.
@pytest.mark.parametrize(
    ("code", "expected", "says"),
    [
        (KafkaError.GROUP_AUTHORIZATION_FAILED, KafkaAccessError, "refused"),
        (
            KafkaError.NOT_COORDINATOR,
            KafkaCoordinatorMovedError,
            "no longer the group's coordinator",
        ),
    ],
)
def test_errors_a_retry_through_the_same_client_cannot_heal_are_not_retried(
    code: int, expected: type[Exception], says: str
) -> None:
    facade = KafkaFacade({"bootstrap.servers": "k1:9092"}, timeout_s=5)
    calls = 0

    def refused(remaining: float) -> str:
        nonlocal calls
        calls += 1
        raise failure(code)

    with pytest.raises(expected, match=says):
        facade._call("group offsets", refused)
    assert calls == 1


def test_a_moved_coordinator_is_an_outage_airflow_retries() -> None:
    assert issubclass(KafkaCoordinatorMovedError, KafkaUnavailableError)
