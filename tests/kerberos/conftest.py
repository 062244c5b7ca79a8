"""The Kerberos tier (`make e2e-kerberos`): one MIT KDC for the session, its realm's krb5.conf
in this process's environment (Python's gssapi reads `KRB5_CONFIG`), and the principals the
tests share. Needs `make setup-kerberos`; a missing tool fails the tier, never skips it."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from kafkaspark_devstack.kdc import LocalKdc

# The client the provider logs in as, the ResourceManager's web principal (SPNEGO) and the
# broker's: service principals for `localhost`, the name every client here uses.
CLIENT = "kafkaspark"
HTTP_SERVICE = "HTTP/localhost"
KAFKA_SERVICE = "kafka/localhost"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/kerberos/" in str(item.fspath):
            item.add_marker(pytest.mark.kerberos)


@pytest.fixture(scope="session")
def kdc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalKdc]:
    saved = {k: os.environ.get(k) for k in ("KRB5_CONFIG", "KRB5_KDC_PROFILE", "KRB5CCNAME")}
    with LocalKdc(tmp_path_factory.mktemp("kdc")) as realm:
        os.environ.update(realm.environment())
        # No ticket cache of the person running the tests may stand in for a missing login.
        os.environ["KRB5CCNAME"] = f"FILE:{realm.base_dir / 'no-such-ccache'}"
        try:
            yield realm
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
