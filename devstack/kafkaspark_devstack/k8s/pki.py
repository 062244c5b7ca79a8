"""The cluster's certificates, made with `cryptography`: one CA signs the API server's
serving certificate and a client certificate per component, whose CN and O are the user and
group the API server's Node and RBAC authorizers know (system:node:<node> in system:nodes,
system:kube-scheduler, ...); plus the service-account signing key."""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from airflow_provider_kafkaspark.core.storage.private_file import write_private

VALID_DAYS = 365


@dataclass(frozen=True)
class KeyPair:
    cert: Path
    key: Path


def _name(common_name: str, organization: str | None = None) -> x509.Name:
    parts = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    if organization:
        parts.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
    return x509.Name(parts)


def _write_key(key: ec.EllipticCurvePrivateKey, path: Path) -> None:
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    write_private(path, pem.decode())


def _load(pair: KeyPair) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    cert = x509.load_pem_x509_certificate(pair.cert.read_bytes())
    key = serialization.load_pem_private_key(pair.key.read_bytes(), password=None)
    assert isinstance(key, ec.EllipticCurvePrivateKey)
    return cert, key


def _validity(builder: x509.CertificateBuilder) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.timezone.utc)
    # An hour back: a clock a little behind on another host still accepts it.
    return builder.not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(
        now + datetime.timedelta(days=VALID_DAYS)
    )


def make_ca(folder: Path) -> KeyPair:
    pair = KeyPair(folder / "ca.crt", folder / "ca.key")
    if pair.cert.is_file() and pair.key.is_file():
        return pair
    folder.mkdir(parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    name = _name("kafkaspark-local-kubernetes-ca")
    builder = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
    )
    cert = _validity(builder).sign(key, hashes.SHA256())
    _write_key(key, pair.key)
    pair.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return pair


def issue(
    ca: KeyPair,
    out: KeyPair,
    common_name: str,
    organization: str | None = None,
    *,
    server_names: tuple[str, ...] = (),
    server_ips: tuple[str, ...] = (),
) -> KeyPair:
    """A certificate signed by `ca`: a client one, and a serving one too when it has names."""
    if out.cert.is_file() and out.key.is_file():
        return out
    ca_cert, ca_key = _load(ca)
    key = ec.generate_private_key(ec.SECP256R1())
    usages = [ExtendedKeyUsageOID.CLIENT_AUTH]
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name, organization))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
    )
    if server_names or server_ips:
        usages.append(ExtendedKeyUsageOID.SERVER_AUTH)
        names: list[x509.GeneralName] = [x509.DNSName(n) for n in server_names]
        names += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in server_ips]
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    builder = builder.add_extension(x509.ExtendedKeyUsage(usages), critical=False)
    cert = _validity(builder).sign(ca_key, hashes.SHA256())
    out.cert.parent.mkdir(parents=True, exist_ok=True)
    _write_key(key, out.key)
    out.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return out


def service_account_key(folder: Path) -> KeyPair:
    """The key the API server signs service-account tokens with (`cert` holds its public half)."""
    pair = KeyPair(folder / "sa.pub", folder / "sa.key")
    if pair.cert.is_file() and pair.key.is_file():
        return pair
    key = ec.generate_private_key(ec.SECP256R1())
    _write_key(key, pair.key)
    pair.cert.write_bytes(
        key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return pair


def kubeconfig(path: Path, server: str, ca: KeyPair, client: KeyPair, user: str) -> Path:
    """A kubeconfig naming the files (not embedding them): one cluster, one user, one context."""
    text = f"""apiVersion: v1
kind: Config
clusters:
- name: local
  cluster:
    server: {server}
    certificate-authority: {ca.cert}
users:
- name: {user}
  user:
    client-certificate: {client.cert}
    client-key: {client.key}
contexts:
- name: local
  context:
    cluster: local
    user: {user}
current-context: local
"""
    write_private(path, text)
    return path
