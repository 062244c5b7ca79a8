"""The REST client's decisions with ResourceManager HA: which address next, what an answer
means, and a whole call over a scripted transport (no network: the real failover is in
tests/cluster/test_rm_failover.py)."""

from __future__ import annotations

import pytest

from airflow_provider_kafkaspark.core.cluster import spnego, yarn_rest
from airflow_provider_kafkaspark.core.cluster.job_ref import YarnJobRef, job_ref_from_dict
from airflow_provider_kafkaspark.core.cluster.yarn_rest import (
    Answer,
    after_redirect,
    call_order,
    classify,
    redact,
    resource_manager_addresses,
)
from airflow_provider_kafkaspark.errors import (
    ClusterAuthenticationError,
    ClusterUnavailableError,
    InvalidArgumentError,
    InvalidInputError,
    JobNotFoundError,
    NoActiveResourceManagerError,
)

RM1, RM2 = "http://rm1:8088", "http://rm2:8088"
APP = '{"app": {"name": "ip_count", "state": "RUNNING"}}'


def test_addresses_are_a_comma_list_and_one_address_is_a_list_of_one() -> None:
    assert resource_manager_addresses("http://rm:8088/") == ["http://rm:8088"]
    assert resource_manager_addresses(f" {RM1}/ , {RM2},,{RM1}") == [RM1, RM2]
    with pytest.raises(InvalidArgumentError, match="not an http"):
        resource_manager_addresses(f"{RM1},rm2:8088")
    with pytest.raises(InvalidArgumentError, match="no ResourceManager address"):
        resource_manager_addresses(" , ")


def test_the_last_active_address_goes_first_then_the_configured_order() -> None:
    three = [RM1, RM2, "http://rm3:8088"]
    assert call_order(three, None) == three
    assert call_order(three, RM2) == [RM2, RM1, "http://rm3:8088"]
    assert call_order(three, "http://gone:8088") == three  # a list that changed since


def test_a_standby_naming_the_active_one_sends_the_call_there_next() -> None:
    remaining = ["http://rm3:8088", RM2]
    assert after_redirect(remaining, "http://RM2:8088/ws/v1/cluster/apps/x") == [
        RM2,
        "http://rm3:8088",
    ]
    # An address the reference does not name is never followed.
    assert after_redirect(remaining, "http://evil:8088/x") == remaining


@pytest.mark.parametrize(
    ("answer", "kind"),
    [
        (Answer(0, error="Connection refused"), "unreachable"),
        (Answer(307, "This is standby RM. The redirect url is: x", location=RM2), "standby"),
        (Answer(200, "This is standby RM. Redirecting to the current active RM"), "standby"),
        (Answer(200, '{"clusterInfo": {"haState": "STANDBY"}}'), "standby"),
        (Answer(200, '{"clusterInfo": {"haState": "INITIALIZING"}}'), "standby"),
        (Answer(200, '{"clusterInfo": {"haState": "ACTIVE"}}'), "active"),
        (Answer(200, '{"clusterInfo": {"id": 1}}'), "active"),  # no HA: the one RM
        (Answer(202, '{"state": "RUNNING"}'), "active"),  # a kill accepted
        (Answer(200, "<html>starting</html>"), "failed"),
        (Answer(200, "[1]"), "failed"),
        (Answer(503, "busy"), "failed"),
        (Answer(404, "Not Found"), "not_found"),
        (Answer(401, "Authentication required"), "unauthenticated"),
        (Answer(400, "bad state"), "refused"),
    ],
)
def test_answers_are_classified(answer: Answer, kind: str) -> None:
    assert classify(answer).kind == kind


def test_addresses_in_messages_lose_their_credentials() -> None:
    assert redact("http://user:pw@rm1:8088/ws?token=s") == "http://rm1:8088/ws"
    assert redact("user:pw@rm1:8088") == "rm1:8088"


class Script:
    """A transport that answers each address from a script and records what was asked."""

    def __init__(self, answers: dict[str, Answer]) -> None:
        self.answers = answers
        self.asked: list[tuple[str, str]] = []

    def __call__(self, method: str, url: str, data: bytes | None) -> Answer:
        self.asked.append((method, url))
        origin = next(a for a in self.answers if url.startswith(a))
        return self.answers[origin]


@pytest.fixture(autouse=True)
def _forget_active() -> None:
    yarn_rest._LAST_ACTIVE.clear()


def ref(resource_manager: str = f"{RM1},{RM2}") -> YarnJobRef:
    return YarnJobRef("ip_count", "s3://b/cp", "application_1_1", resource_manager)


def test_a_call_passes_a_standby_and_remembers_the_active_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    script = Script({RM1: Answer(307, "This is standby RM", location=RM2), RM2: Answer(200, APP)})
    monkeypatch.setattr(yarn_rest, "TRANSPORT", script)
    assert yarn_rest.application(ref())["state"] == "RUNNING"
    assert yarn_rest.application(ref())["state"] == "RUNNING"
    # The second call starts at the RM that answered the first.
    assert [u.split("/ws")[0] for _, u in script.asked] == [RM1, RM2, RM2]


def test_a_kill_reaches_the_active_one_past_a_dead_one(monkeypatch: pytest.MonkeyPatch) -> None:
    script = Script({RM1: Answer(0, error="Connection refused"), RM2: Answer(200, APP)})
    monkeypatch.setattr(yarn_rest, "TRANSPORT", script)
    yarn_rest.kill(ref())
    assert ("PUT", f"{RM2}/ws/v1/cluster/apps/application_1_1/state") in script.asked
    assert ("PUT", f"{RM1}/ws/v1/cluster/apps/application_1_1/state") not in script.asked


def test_no_active_one_is_a_typed_error_naming_each_address_asked_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    script = Script(
        {
            "http://u:secret@rm1:8088": Answer(0, error="Connection refused"),
            RM2: Answer(200, "This is standby RM. Redirecting to the current active RM"),
        }
    )
    monkeypatch.setattr(yarn_rest, "TRANSPORT", script)
    with pytest.raises(NoActiveResourceManagerError) as caught:
        yarn_rest.application(ref(f"http://u:secret@rm1:8088,{RM2}"))
    message = str(caught.value)
    assert "http://rm1:8088 did not answer (Connection refused)" in message
    assert f"{RM2} is a standby ResourceManager" in message
    assert "secret" not in message
    assert [a for a, _ in caught.value.tried] == ["http://rm1:8088", RM2]
    assert len(script.asked) == 2  # each once, no retry
    assert isinstance(caught.value, ClusterUnavailableError)


def test_an_active_rm_that_does_not_know_the_application_ends_the_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    script = Script({RM1: Answer(404, "Not Found"), RM2: Answer(200, APP)})
    monkeypatch.setattr(yarn_rest, "TRANSPORT", script)
    with pytest.raises(JobNotFoundError, match="application_1_1"):
        yarn_rest.application(ref())
    assert len(script.asked) == 1


def test_a_refusal_is_not_asked_of_the_other_rm(monkeypatch: pytest.MonkeyPatch) -> None:
    script = Script({RM1: Answer(403, "denied"), RM2: Answer(200, APP)})
    monkeypatch.setattr(yarn_rest, "TRANSPORT", script)
    with pytest.raises(ClusterUnavailableError, match="refused: HTTP 403"):
        yarn_rest.application(ref())
    assert len(script.asked) == 1


def test_references_of_one_or_several_rms_load() -> None:
    for given in ("http://rm:8088", f"{RM1},{RM2}"):
        raw = {
            "backend": "yarn",
            "job_name": "j",
            "checkpoint": "s3://b/cp",
            "application_id": "application_1_1",
            "resource_manager": given,
        }
        loaded = job_ref_from_dict(raw)
        assert isinstance(loaded, YarnJobRef) and loaded.resource_manager == given


# -- secured clusters (SPNEGO) --------------------------------------------------------------


def test_a_401_is_a_typed_authentication_error_asked_of_one_rm_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    script = Script({RM1: Answer(401, "", authenticate="Basic realm=x"), RM2: Answer(200, APP)})
    monkeypatch.setattr(yarn_rest, "TRANSPORT", script)
    with pytest.raises(ClusterAuthenticationError) as caught:
        yarn_rest.application(ref())
    assert "HTTP 401 (WWW-Authenticate: Basic" in str(caught.value)
    assert "SPNEGO/Kerberos" in str(caught.value)
    assert isinstance(caught.value, InvalidInputError)  # permanent: Airflow does not retry
    assert len(script.asked) == 1


def test_a_negotiate_challenge_is_answered_once_with_a_ticket(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sent: list[str | None] = []
    answers = [Answer(401, "", authenticate="Negotiate"), Answer(200, APP)]

    def send(method: str, url: str, data: bytes | None, authorization: str | None) -> Answer:
        sent.append(authorization)
        return answers[len(sent) - 1]

    logins: list[spnego.KerberosLogin] = []

    def authorization(url: str, login: spnego.KerberosLogin) -> tuple[str, object]:
        logins.append(login)
        return "Negotiate dG9rZW4=", None

    monkeypatch.setattr(yarn_rest, "_send", send)
    monkeypatch.setattr(spnego, "authorization", authorization)
    monkeypatch.setattr(spnego, "confirm", lambda *a: None)
    login = spnego.KerberosLogin("me@R", "/k.keytab", "spark connection 'x'")
    transport = yarn_rest.kerberos_transport(lambda: login)
    assert yarn_rest.application(ref(RM1), transport)["state"] == "RUNNING"
    assert sent == [None, "Negotiate dG9rZW4="]
    assert logins == [login]


def test_an_unsecured_rm_never_resolves_the_login(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(yarn_rest, "_send", lambda *a: Answer(200, APP))

    def login() -> spnego.KerberosLogin:
        raise AssertionError("an unsecured RM's call must not read a connection's login")

    assert yarn_rest.application(ref(RM1), yarn_rest.kerberos_transport(login))


def test_a_refused_ticket_is_not_tried_again(monkeypatch: pytest.MonkeyPatch) -> None:
    sent: list[str | None] = []

    def send(method: str, url: str, data: bytes | None, authorization: str | None) -> Answer:
        sent.append(authorization)
        return Answer(401, "", authenticate="Negotiate")

    monkeypatch.setattr(yarn_rest, "_send", send)
    monkeypatch.setattr(spnego, "authorization", lambda url, login: ("Negotiate eA==", None))
    with pytest.raises(ClusterAuthenticationError, match="unauthenticated: HTTP 401"):
        yarn_rest.application(ref(), yarn_rest.kerberos_transport(spnego.KerberosLogin))
    assert len(sent) == 2  # one plain request and one with the ticket; RM2 not asked
