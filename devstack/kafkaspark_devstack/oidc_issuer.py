"""A small real OIDC issuer on loopback for the client-credentials grant: the token endpoint
the local broker's SASL/OAUTHBEARER listener trusts, for Kafka's Java client
(`OAuthBearerLoginCallbackHandler`) and librdkafka (`sasl.oauthbearer.method=oidc`) alike.

It runs as a process of its own (clients in other processes, JVMs included, fetch tokens
from it) and answers:

- `POST /token`: `grant_type=client_credentials`, the client authenticated by HTTP Basic
  (as both Kafka clients send it) or by the form fields `client_id`/`client_secret`, an
  optional `scope`. Answers `{"access_token": <RS256 JWT>, "token_type": "Bearer",
  "expires_in": N}`, the JWT with `iss`, `sub` (the client id), `aud`, `iat`, `exp`, `scope`
  and the key's `kid`; an unknown client or a wrong secret gets 401 `{"error":
  "invalid_client"}`, another grant 400 `{"error": "unsupported_grant_type"}`;
- `GET /jwks`: the signing key's public half as a JWK set (what the broker verifies with);
- `GET /.well-known/openid-configuration`: the discovery document naming both.

The clients and their secrets, the audience and the signing key are fixed at the start and
kept in `<base_dir>` (state and key files mode 0600), so a later process (a test's helper,
the CLI) finds the issuer again by `LocalOidcIssuer.attach`.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import json
import logging
import os
import secrets
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from airflow_provider_kafkaspark.core.storage.private_file import write_private
from airflow_provider_kafkaspark.errors import LocalStackError, PortInUseError
from kafkaspark_devstack.daemon import load_state, log_tail, save_state, spawn, stop_group
from kafkaspark_devstack.daemon import wait_ready as wait_until
from kafkaspark_devstack.kafka_security import OAuthValidation
from kafkaspark_devstack.ports import HOST, free_port, port_in_use
from kafkaspark_devstack.process import server_running

log = logging.getLogger(__name__)

STATE_FILE = "oidc.json"
KEY_FILE = "signing-key.pem"
DEFAULT_CLIENT_ID = "kafkaspark-client"
DEFAULT_AUDIENCE = "kafka-broker"
DEFAULT_SCOPE = "kafka"
DEFAULT_EXPIRES_IN = 3600
_MODULE = "kafkaspark_devstack.oidc_issuer"


class OidcIssuerStartError(LocalStackError):
    """The local OIDC issuer did not come up."""


@dataclass
class _IssuerState:
    port: int
    clients: dict[str, str]
    audience: str = DEFAULT_AUDIENCE
    expires_in: int = DEFAULT_EXPIRES_IN
    kid: str = field(default_factory=lambda: secrets.token_hex(8))
    pid: int | None = None
    host: str = HOST


@dataclass(frozen=True)
class OidcClient:
    """What a Kafka client needs to log in through the issuer."""

    token_url: str
    client_id: str
    client_secret: str
    scope: str = DEFAULT_SCOPE


class LocalOidcIssuer:
    """The issuer process. Use as a context manager or start()/stop()."""

    def __init__(
        self,
        base_dir: str | os.PathLike[str],
        *,
        clients: Mapping[str, str] | None = None,
        audience: str = DEFAULT_AUDIENCE,
        expires_in: int = DEFAULT_EXPIRES_IN,
        port: int | None = None,
        host: str = HOST,
    ) -> None:
        self.base_dir = Path(base_dir).resolve()
        self._proc: subprocess.Popen[bytes] | None = None
        existing = load_state(self.base_dir / STATE_FILE, _IssuerState)
        if existing is not None:
            self._state = existing
        else:
            self._state = _IssuerState(
                port=port or free_port(host),
                clients=dict(clients or {DEFAULT_CLIENT_ID: secrets.token_urlsafe(24)}),
                audience=audience,
                expires_in=expires_in,
                host=host,
            )

    @classmethod
    def attach(cls, base_dir: str | os.PathLike[str]) -> LocalOidcIssuer:
        if not (Path(base_dir) / STATE_FILE).is_file():
            raise LocalStackError(f"no local OIDC issuer in {base_dir} (no {STATE_FILE})")
        return cls(base_dir)

    # -- what brokers and clients need ---------------------------------------------------

    @property
    def issuer(self) -> str:
        """The `iss` of every token, also the base of the endpoints' URLs."""
        return f"http://{self._state.host}:{self._state.port}"

    @property
    def token_url(self) -> str:
        return f"{self.issuer}/token"

    @property
    def jwks_url(self) -> str:
        return f"{self.issuer}/jwks"

    @property
    def audience(self) -> str:
        return self._state.audience

    @property
    def clients(self) -> dict[str, str]:
        return dict(self._state.clients)

    def broker_validation(self) -> OAuthValidation:
        """What a broker's OAUTHBEARER listener checks tokens against (BrokerSecurity.oauth)."""
        return OAuthValidation(self.jwks_url, self.issuer, self.audience, self.token_url)

    def client(self, client_id: str = DEFAULT_CLIENT_ID) -> OidcClient:
        return OidcClient(self.token_url, client_id, self._state.clients[client_id])

    def fetch_token(self, client_id: str, client_secret: str, scope: str | None = None) -> str:
        """A token for `client_id` as a client would get it (form fields); raises
        urllib.error.HTTPError when refused."""
        form = {"grant_type": "client_credentials", "client_id": client_id}
        form["client_secret"] = client_secret
        if scope:
            form["scope"] = scope
        request = urllib.request.Request(
            self.token_url, data=urllib.parse.urlencode(form).encode(), method="POST"
        )
        with urllib.request.urlopen(request, timeout=10) as answer:
            return str(json.load(answer)["access_token"])

    # -- lifecycle -----------------------------------------------------------------------

    def start(self, timeout: float = 30.0) -> LocalOidcIssuer:
        if self.is_running():
            return self
        if port_in_use(self._state.port, self._state.host):
            raise PortInUseError(
                f"local OIDC issuer in {self.base_dir}: port {self._state.port} is in use"
            )
        self.base_dir.mkdir(parents=True, exist_ok=True)
        key_file = self.base_dir / KEY_FILE
        if not key_file.is_file():
            write_private(key_file, _new_signing_key())
        self._save_state()  # the server reads its settings from the state file
        env = dict(os.environ)
        # The server imports this module by name: its packages must be on its path even
        # when this process found them some other way.
        roots = [str(Path(__file__).resolve().parents[1]), *_provider_roots()]
        env["PYTHONPATH"] = os.pathsep.join([*roots, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
        command = [sys.executable, "-m", _MODULE, str(self.base_dir)]
        self._proc = spawn(command, self.log_file, cwd=self.base_dir, env=env)
        self._state.pid = self._proc.pid
        self._save_state()
        try:
            self._wait_ready(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self, timeout: float = 10.0) -> None:
        pid = self._state.pid
        if self.is_running() and pid:
            stop_group(pid, self.is_running, self._proc, what="local OIDC issuer", timeout=timeout)
        self._state.pid = None
        self._save_state()

    def is_running(self) -> bool:
        return server_running(self._state.pid, _MODULE.encode(), self._proc)

    def status(self) -> dict[str, Any]:
        return {
            "running": self.is_running(),
            "issuer": self.issuer,
            "token_url": self.token_url,
            "jwks_url": self.jwks_url,
            "audience": self.audience,
            "clients": sorted(self._state.clients),
            "pid": self._state.pid,
            "log_file": str(self.log_file),
        }

    @property
    def log_file(self) -> Path:
        return self.base_dir / "oidc.log"

    def __enter__(self) -> LocalOidcIssuer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _wait_ready(self, timeout: float) -> None:
        url = f"{self.issuer}/.well-known/openid-configuration"
        last = "no answer yet"

        def answers() -> bool:
            nonlocal last
            try:
                with urllib.request.urlopen(url, timeout=2) as answer:
                    return bool(answer.status == 200)
            except OSError as exc:
                last = str(exc)
                return False

        wait_until(
            answers,
            self.is_running,
            timeout=timeout,
            pause=0.1,
            exited=lambda: OidcIssuerStartError(
                f"local OIDC issuer exited during start-up; last lines of {self.log_file}:\n"
                f"{log_tail(self.log_file)}"
            ),
            late=lambda: OidcIssuerStartError(
                f"local OIDC issuer at {self.issuer} did not answer in {timeout:g}s "
                f"(last: {last}); log {self.log_file}:\n{log_tail(self.log_file)}"
            ),
        )

    def _save_state(self) -> None:
        save_state(self.base_dir / STATE_FILE, self._state)


def _provider_roots() -> list[str]:
    import airflow_provider_kafkaspark

    return [str(Path(airflow_provider_kafkaspark.__file__).resolve().parents[1])]


def _new_signing_key() -> str:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()


# -- the server process ---------------------------------------------------------------------


class _Issuer:
    """What the request handler works with: settings, key, and the token maker."""

    def __init__(self, base_dir: Path) -> None:
        import jwt
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import rsa

        state = load_state(base_dir / STATE_FILE, _IssuerState)
        if state is None:
            raise LocalStackError(f"no {STATE_FILE} in {base_dir}")
        self.state = state
        key = serialization.load_pem_private_key((base_dir / KEY_FILE).read_bytes(), None)
        if not isinstance(key, rsa.RSAPrivateKey):
            raise LocalStackError(f"{base_dir / KEY_FILE} is not an RSA key")
        self.key = key
        self.issuer = f"http://{state.host}:{state.port}"
        jwk = jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key(), as_dict=True)
        jwk.update({"kid": state.kid, "use": "sig", "alg": "RS256"})
        self.jwks = {"keys": [jwk]}

    def discovery(self) -> dict[str, Any]:
        return {
            "issuer": self.issuer,
            "token_endpoint": f"{self.issuer}/token",
            "jwks_uri": f"{self.issuer}/jwks",
            "grant_types_supported": ["client_credentials"],
            "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
            "id_token_signing_alg_values_supported": ["RS256"],
            "response_types_supported": ["token"],
            "subject_types_supported": ["public"],
        }

    def authenticated(self, candidates: list[tuple[str, str]]) -> str | None:
        """The client id of the first (id, secret) pair that matches a known client."""
        for client_id, secret in candidates:
            known = self.state.clients.get(client_id)
            if known is not None and secrets.compare_digest(known, secret):
                return client_id
        return None

    def token(self, client_id: str, scope: str | None) -> dict[str, Any]:
        import jwt

        now = int(time.time())
        claims = {
            "iss": self.issuer,
            "sub": client_id,
            "aud": self.state.audience,
            "iat": now,
            "nbf": now,
            "exp": now + self.state.expires_in,
            "scope": scope or DEFAULT_SCOPE,
            "client_id": client_id,
            "jti": secrets.token_hex(12),
        }
        token = jwt.encode(claims, self.key, algorithm="RS256", headers={"kid": self.state.kid})
        return {
            "access_token": token,
            "token_type": "Bearer",
            "expires_in": self.state.expires_in,
            "scope": claims["scope"],
        }


def _basic_credentials(header: str | None) -> list[tuple[str, str]]:
    """The (id, secret) pairs an `Authorization: Basic` header may mean: RFC 6749 says both
    are form-encoded before base64 (Kafka's Java client does that), librdkafka sends them
    raw; a secret with `+` or `%` reads differently either way, so both readings count."""
    if not header or not header.lower().startswith("basic "):
        return []
    try:
        decoded = base64.b64decode(header[6:].strip(), validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        return []
    client_id, sep, secret = decoded.partition(":")
    if not sep:
        return []
    raw = (client_id, secret)
    unquoted = (urllib.parse.unquote_plus(client_id), urllib.parse.unquote_plus(secret))
    return [raw] if raw == unquoted else [raw, unquoted]


def _handler(issuer: _Issuer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "kafkaspark-oidc/1"

        def _json(self, status: int, body: Mapping[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Cache-Control", "no-store")
            if status == 401:
                self.send_header("WWW-Authenticate", 'Basic realm="kafkaspark-oidc"')
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            path = urllib.parse.urlsplit(self.path).path
            if path == "/jwks":
                self._json(200, issuer.jwks)
            elif path == "/.well-known/openid-configuration":
                self._json(200, issuer.discovery())
            else:
                self._json(404, {"error": "not_found"})

        def do_POST(self) -> None:
            if urllib.parse.urlsplit(self.path).path != "/token":
                self._json(404, {"error": "not_found"})
                return
            length = int(self.headers.get("Content-Length") or 0)
            if length > 65536:
                self._json(400, {"error": "invalid_request"})
                return
            body = self.rfile.read(length).decode(errors="replace")
            form = {k: v[-1] for k, v in urllib.parse.parse_qs(body).items()}
            candidates = _basic_credentials(self.headers.get("Authorization"))
            if "client_id" in form:
                candidates.append((form["client_id"], form.get("client_secret", "")))
            client_id = issuer.authenticated(candidates)
            if client_id is None:
                # Which client was refused goes to the log; its secret never does.
                asked = [c for c, _ in candidates]
                self.log_message("refused client(s) %s", asked or "(none given)")
                refusal = {"error": "invalid_client", "error_description": "bad client credentials"}
                self._json(401, refusal)
                return
            if form.get("grant_type") != "client_credentials":
                self._json(400, {"error": "unsupported_grant_type"})
                return
            self._json(200, issuer.token(client_id, form.get("scope")))

    return Handler


def serve(base_dir: Path) -> None:
    issuer = _Issuer(base_dir)
    server = ThreadingHTTPServer((issuer.state.host, issuer.state.port), _handler(issuer))
    server.daemon_threads = True
    print(f"OIDC issuer {issuer.issuer} serving", flush=True)
    server.serve_forever()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="the local stack's OIDC issuer (serves)")
    parser.add_argument("base_dir", type=Path)
    serve(parser.parse_args(argv).base_dir.resolve())


if __name__ == "__main__":
    main()
