#!/usr/bin/env bash
# The Kerberos test tier's extras (`make setup-kerberos`), idempotently, on top of setup-cluster:
#   Debian: krb5-kdc, krb5-admin-server (the KDC and kadmin.local, for the local realm),
#           krb5-user (kinit, klist), libkrb5-dev (headers: gssapi builds from its sdist here)
#   PyPI:   gssapi (the provider's SPNEGO client for the ResourceManager's REST API)
# Nothing is configured system-wide: the tests' KDC keeps its krb5.conf in its own folder.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV="${VENV:-.venv}"
missing=()
for pkg in krb5-kdc krb5-admin-server krb5-user libkrb5-dev; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if [ "${#missing[@]}" -gt 0 ]; then
  command -v apt-get >/dev/null 2>&1 || {
    echo "setup-kerberos: install ${missing[*]} (MIT Kerberos) with your package manager" >&2
    exit 1
  }
  echo "setup-kerberos: apt-get install ${missing[*]}"
  # Non-interactive: krb5-config would otherwise ask for a default realm (unused here).
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/dev/null
fi

if ! "$VENV/bin/python" -c 'import gssapi' 2>/dev/null; then
  echo "setup-kerberos: pip install gssapi (built from source against libkrb5-dev, ~1 min)"
  "$VENV/bin/python" -m pip install -q "gssapi>=1.8"
fi
"$VENV/bin/python" -c 'import gssapi, gssapi.raw; print("setup-kerberos: gssapi ok")'
