"""The local realm itself: principals with keytabs, and a ticket from one (kinit -kt)."""

from __future__ import annotations

from pathlib import Path

from kafkaspark_devstack.kdc import LocalKdc
from tests.kerberos.conftest import CLIENT


def test_the_kdc_issues_a_ticket_for_a_keytab(kdc: LocalKdc, tmp_path: Path) -> None:
    keytab = kdc.add_principal(CLIENT)
    assert keytab.stat().st_mode & 0o077 == 0, "a keytab is a secret: only its owner reads it"
    ccache = f"FILE:{tmp_path / 'ccache'}"
    done = kdc.kinit(CLIENT, keytab, ccache)
    assert done.returncode == 0, done.stderr
    listed = kdc.klist(ccache).stdout
    assert f"Default principal: {kdc.principal(CLIENT)}" in listed
    assert f"krbtgt/{kdc.realm}@{kdc.realm}" in listed


def test_a_wrong_keytab_gets_no_ticket(kdc: LocalKdc, tmp_path: Path) -> None:
    other = kdc.add_principal("someone-else")
    done = kdc.kinit(CLIENT, other, f"FILE:{tmp_path / 'ccache'}")
    assert done.returncode != 0
    assert "keytab" in done.stderr.lower()
