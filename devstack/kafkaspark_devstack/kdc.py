"""A real MIT Kerberos KDC on loopback, for the Kerberos tests (`make e2e-kerberos`).

Debian's `krb5-kdc` (krb5kdc, kdb5_util), `krb5-admin-server` (kadmin.local) and `krb5-user`
(kinit, klist) do the work; `scripts/setup_kerberos.sh` installs them. Everything lives in one
folder: the KDC's database, its kdc.conf, the clients' krb5.conf (point `KRB5_CONFIG` and
Java's `java.security.krb5.conf` at it), keytabs and logs; nothing in /etc is read or written.

    with LocalKdc(tmp_path / "kdc") as kdc:
        keytab = kdc.add_principal("HTTP/localhost")     # a keytab with its keys
        kdc.environment()                                 # KRB5_CONFIG, KRB5_KDC_PROFILE

Host names: service principals are made for `localhost`, and the clients' krb5.conf turns off
host name canonicalization (`dns_canonicalize_hostname`, `rdns`), so that a client asking for
`HTTP@localhost` asks for `HTTP/localhost@REALM` whatever the resolver says of 127.0.0.1.
TCP only (`udp_preference_limit = 1`): one port to find free, and no UDP size fallbacks.
"""

from __future__ import annotations

import logging
import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

from airflow_provider_kafkaspark.errors import LocalStackError
from kafkaspark_devstack.ports import free_port

log = logging.getLogger(__name__)

REALM = "KAFKASPARK.TEST"
# The KDC listens on loopback only; the clients name it by this address.
KDC_HOST = "127.0.0.1"
TOOLS = ("krb5kdc", "kdb5_util", "kadmin.local", "kinit", "klist")
# Debian installs the KDC's tools in /usr/sbin, which a non-login PATH may lack.
SBIN = ("/usr/sbin", "/usr/local/sbin")
ENCTYPES = "aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal"


class KdcStartError(LocalStackError):
    """The KDC's tools are missing, its database could not be made, or it did not answer."""


def find_tool(name: str) -> str:
    """The path of one of the KDC's tools, or a KdcStartError saying how to install it."""
    path = shutil.which(name) or shutil.which(name, path=os.pathsep.join(SBIN))
    if not path:
        raise KdcStartError(
            f"{name} not found: the Kerberos tests need MIT Kerberos' KDC and client tools "
            f"(Debian: krb5-kdc krb5-admin-server krb5-user; `make setup-kerberos` installs them)"
        )
    return path


def krb5_conf(realm: str, kdc_port: int) -> str:
    """The clients' krb5.conf (Python's gssapi, kinit, Java's Krb5LoginModule)."""
    return (
        "[libdefaults]\n"
        f"  default_realm = {realm}\n"
        "  dns_lookup_kdc = false\n"
        "  dns_lookup_realm = false\n"
        "  dns_canonicalize_hostname = false\n"
        "  rdns = false\n"
        "  udp_preference_limit = 1\n"
        "  ticket_lifetime = 10h\n"
        "  renew_lifetime = 7d\n"
        "  forwardable = true\n"
        f"  default_tkt_enctypes = {ENCTYPES.replace(':normal', '')}\n"
        f"  default_tgs_enctypes = {ENCTYPES.replace(':normal', '')}\n"
        f"  permitted_enctypes = {ENCTYPES.replace(':normal', '')}\n"
        "\n[realms]\n"
        f"  {realm} = {{\n"
        f"    kdc = {KDC_HOST}:{kdc_port}\n"
        "  }\n"
        "\n[domain_realm]\n"
        f"  localhost = {realm}\n"
        f"  127.0.0.1 = {realm}\n"
    )


def kdc_conf(realm: str, kdc_port: int, folder: Path) -> str:
    """The KDC's own kdc.conf: its database, stash and log in `folder`, TCP on `kdc_port`.
    (kdc_ports also takes the port: an empty value would mean UDP on 88.)"""
    return (
        "[kdcdefaults]\n"
        f"  kdc_ports = {kdc_port}\n"
        f"  kdc_tcp_ports = {kdc_port}\n"
        "\n[realms]\n"
        f"  {realm} = {{\n"
        f"    database_name = {folder / 'db' / 'principal'}\n"
        f"    key_stash_file = {folder / 'db' / 'stash'}\n"
        f"    acl_file = {folder / 'kadm5.acl'}\n"
        f"    kdc_ports = {kdc_port}\n"
        f"    kdc_tcp_ports = {kdc_port}\n"
        "    max_life = 10h 0m 0s\n"
        "    max_renewable_life = 7d 0h 0m 0s\n"
        f"    supported_enctypes = {ENCTYPES}\n"
        "  }\n"
        "\n[logging]\n"
        f"  kdc = FILE:{folder / 'kdc.log'}\n"
        f"  default = FILE:{folder / 'kdc.log'}\n"
    )


def keytab_name(principal: str) -> str:
    """A file name for a principal's keytab: `HTTP/localhost` -> `HTTP_localhost.keytab`."""
    return principal.split("@")[0].replace("/", "_") + ".keytab"


class LocalKdc:
    """One MIT KDC with a fresh realm database in `base_dir`. A context manager, or
    start()/stop(); stop() is safe to call twice and after a failed start."""

    def __init__(self, base_dir: str | os.PathLike[str], realm: str = REALM) -> None:
        self.base_dir = Path(base_dir).resolve()
        self.realm = realm
        self.port = 0
        self._proc: subprocess.Popen[bytes] | None = None

    # -- what clients need ----------------------------------------------------------------

    @property
    def krb5_conf_path(self) -> Path:
        return self.base_dir / "krb5.conf"

    @property
    def kdc_conf_path(self) -> Path:
        return self.base_dir / "kdc.conf"

    def principal(self, name: str) -> str:
        """`name` with this realm: `client` -> `client@KAFKASPARK.TEST`."""
        return name if "@" in name else f"{name}@{self.realm}"

    def environment(self) -> dict[str, str]:
        """What MIT Kerberos' tools and libraries (kinit, gssapi) need to use this realm."""
        return {
            "KRB5_CONFIG": str(self.krb5_conf_path),
            "KRB5_KDC_PROFILE": str(self.kdc_conf_path),
        }

    def java_options(self) -> list[str]:
        """What a JVM (a Kafka broker or client, a ResourceManager) needs for this realm."""
        return [f"-Djava.security.krb5.conf={self.krb5_conf_path}"]

    # -- principals -------------------------------------------------------------------------

    def add_principal(self, name: str, keytab: Path | None = None) -> Path:
        """Make principal `name` with random keys and write them to a keytab only this user
        reads (`base_dir/keytabs/<name>.keytab` unless given); returns the keytab's path.
        Asking again for the same principal only writes another keytab of the same keys."""
        principal = self.principal(name)
        target = keytab or self.base_dir / "keytabs" / keytab_name(principal)
        target.parent.mkdir(parents=True, exist_ok=True)
        existing = self._kadmin(f"getprinc {principal}", check=False)
        if existing.returncode != 0 or "Principal:" not in existing.stdout:
            self._kadmin(f"addprinc -randkey {principal}")
        # -norandkey (kadmin.local only): keep the keys, so that keytabs written earlier for
        # the same principal stay valid.
        self._kadmin(f"ktadd -k {target} -norandkey {principal}")
        target.chmod(0o600)
        return target

    def kinit(self, principal: str, keytab: Path, ccache: str) -> subprocess.CompletedProcess[str]:
        """`kinit -kt` into `ccache` (e.g. FILE:/tmp/x); the completed process, not checked."""
        env = {**os.environ, **self.environment(), "KRB5CCNAME": ccache}
        return subprocess.run(
            [find_tool("kinit"), "-kt", str(keytab), self.principal(principal)],
            env=env,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )

    def klist(self, ccache: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, **self.environment(), "KRB5CCNAME": ccache}
        return subprocess.run(
            [find_tool("klist")], env=env, capture_output=True, text=True, timeout=30, check=False
        )

    # -- lifecycle ------------------------------------------------------------------------

    def start(self, timeout: float = 30.0) -> LocalKdc:
        """Make the realm's database (once per folder) and start krb5kdc; wait (bounded)
        until it accepts connections. A failed start stops what it started."""
        if self._proc is not None and self._proc.poll() is None:
            return self
        kdc = find_tool("krb5kdc")
        self.base_dir.mkdir(parents=True, exist_ok=True)
        self.port = free_port(KDC_HOST)
        self.kdc_conf_path.write_text(kdc_conf(self.realm, self.port, self.base_dir))
        self.krb5_conf_path.write_text(krb5_conf(self.realm, self.port))
        (self.base_dir / "kadm5.acl").write_text(f"*/admin@{self.realm} *\n")
        if not (self.base_dir / "db" / "principal").exists():
            (self.base_dir / "db").mkdir(parents=True, exist_ok=True)
            # The master key protects the database at rest; a fresh random one per test realm
            # (stashed with -s, so krb5kdc starts without asking for it).
            master = secrets.token_urlsafe(24)
            self._run(
                [find_tool("kdb5_util"), "-r", self.realm, "create", "-s", "-P", master],
                "creating the realm's database",
            )
        try:
            with open(self.base_dir / "krb5kdc.out", "ab") as out:
                self._proc = subprocess.Popen(
                    # -n: stay in the foreground, so that this object owns the process.
                    [kdc, "-n", "-r", self.realm, "-P", str(self.base_dir / "krb5kdc.pid")],
                    env={**os.environ, **self.environment()},
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,
                )
            self._wait_listening(timeout)
        except BaseException:
            self.stop()
            raise
        log.info("started the KDC of %s (pid %s) on port %s", self.realm, self._proc.pid, self.port)
        return self

    def stop(self, timeout: float = 10.0) -> None:
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)

    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def __enter__(self) -> LocalKdc:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def log_tail(self, lines: int = 20) -> str:
        found = []
        for name in ("krb5kdc.out", "kdc.log"):
            try:
                text = (self.base_dir / name).read_text(errors="replace")
            except OSError:
                continue
            found += text.splitlines()[-lines:]
        return "\n".join(found) or "(no log)"

    # -- internals ------------------------------------------------------------------------

    def _wait_listening(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        for _ in range(int(timeout / 0.1) + 1):
            if self._proc is None or self._proc.poll() is not None:
                raise KdcStartError(f"krb5kdc exited during start-up:\n{self.log_tail()}")
            try:
                with socket.create_connection((KDC_HOST, self.port), 1):
                    return
            except OSError:
                pass
            if time.monotonic() > deadline:
                break
            time.sleep(0.1)
        raise KdcStartError(f"krb5kdc did not listen on port {self.port} in {timeout:g}s")

    def _kadmin(self, query: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        command = [find_tool("kadmin.local"), "-r", self.realm, "-q", query]
        if check:
            return self._run(command, f"kadmin.local {query.split()[0]}")
        return subprocess.run(
            command,
            env={**os.environ, **self.environment()},
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )

    def _run(self, command: list[str], what: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            command,
            env={**os.environ, **self.environment()},
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        # kadmin.local reports some failures on stderr with exit status 0.
        failed = done.returncode != 0 or "error" in done.stderr.lower()
        if failed:
            raise KdcStartError(f"{what} failed ({done.returncode}): {done.stderr.strip()[-1000:]}")
        return done
