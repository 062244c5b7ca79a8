"""Certificates and keys for the local broker's TLS listeners and for the clients that test
them, made with `cryptography` (no keytool, no JKS): Kafka 4.1 reads PEM stores, librdkafka
reads PEM files or inline PEM, so one set of files serves the broker, the Java clients and
librdkafka.

In the folder, each file named by `TlsMaterial`:

- `ca.pem`: the CA every good certificate is signed by (clients' trust, the broker's trust
  for client certificates);
- `server-keystore.pem`: the broker's PKCS#8 key and certificate chain in one file, as
  Kafka's `ssl.keystore.type=PEM` with `ssl.keystore.location` takes it; the certificate
  names `127.0.0.1`, `localhost` and the stack's host (SAN IP and DNS), so clients verify
  it with endpoint identification on;
- `client.pem`, `client.key` (PKCS#8, unencrypted), `client-encrypted.key` (PKCS#8 under
  `client-key-password.txt`): a client certificate the broker's mTLS listener accepts;
- `expired-client.pem`, `expired-client.key`: signed by the same CA, but its validity ended
  a day ago;
- `other-ca.pem`: an unrelated CA, the "wrong CA" a client may be given.

Keys and the password file are mode 0600. Certificates are valid for a year from now, so
material made once outlives any test run.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from airflow_provider_kafkaspark.core.storage.private_file import write_private
from kafkaspark_devstack.ports import HOST

CLIENT_CN = "kafkaspark-client"
VALID_DAYS = 365


@dataclass(frozen=True)
class TlsMaterial:
    """The files of one folder of TLS material (see the module's docstring)."""

    folder: Path

    @property
    def ca_cert(self) -> Path:
        return self.folder / "ca.pem"

    @property
    def server_keystore(self) -> Path:
        """Key, then certificate, then the CA's certificate: Kafka's PEM key store file."""
        return self.folder / "server-keystore.pem"

    @property
    def client_cert(self) -> Path:
        return self.folder / "client.pem"

    @property
    def client_key(self) -> Path:
        return self.folder / "client.key"

    @property
    def client_key_encrypted(self) -> Path:
        return self.folder / "client-encrypted.key"

    @property
    def client_key_password_file(self) -> Path:
        return self.folder / "client-key-password.txt"

    @property
    def client_key_password(self) -> str:
        return self.client_key_password_file.read_text().strip()

    @property
    def expired_client_cert(self) -> Path:
        return self.folder / "expired-client.pem"

    @property
    def expired_client_key(self) -> Path:
        return self.folder / "expired-client.key"

    @property
    def other_ca_cert(self) -> Path:
        return self.folder / "other-ca.pem"

    # PEM text, for the settings that take it inline (librdkafka's `ssl.ca.pem`,
    # `ssl.certificate.pem`, `ssl.key.pem`; Kafka's `ssl.truststore.certificates`,
    # `ssl.keystore.certificate.chain`, `ssl.keystore.key`).

    @property
    def ca_pem(self) -> str:
        return self.ca_cert.read_text()

    @property
    def other_ca_pem(self) -> str:
        return self.other_ca_cert.read_text()

    @property
    def client_cert_pem(self) -> str:
        return self.client_cert.read_text()

    @property
    def client_key_pem(self) -> str:
        return self.client_key.read_text()

    @property
    def client_key_encrypted_pem(self) -> str:
        return self.client_key_encrypted.read_text()

    @property
    def expired_client_cert_pem(self) -> str:
        return self.expired_client_cert.read_text()

    @property
    def expired_client_key_pem(self) -> str:
        return self.expired_client_key.read_text()

    def complete(self) -> bool:
        files = (
            self.ca_cert,
            self.server_keystore,
            self.client_cert,
            self.client_key,
            self.client_key_encrypted,
            self.client_key_password_file,
            self.expired_client_cert,
            self.expired_client_key,
            self.other_ca_cert,
        )
        return all(f.is_file() for f in files)


def _key() -> rsa.RSAPrivateKey:
    # RSA rather than EC: every consumer of these files (Kafka's PEM store tries RSA, DSA, EC;
    # OpenSSL; the JDK) reads it, and 2048 bits take a fraction of a second.
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _name(common_name: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "kafkaspark local stack"),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )


def _ca(common_name: str, now: datetime.datetime) -> tuple[rsa.RSAPrivateKey, x509.Certificate]:
    key = _key()
    name = _name(common_name)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
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
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return key, cert


def _leaf(
    common_name: str,
    ca_key: rsa.RSAPrivateKey,
    ca_cert: x509.Certificate,
    *,
    not_before: datetime.datetime,
    not_after: datetime.datetime,
    usage: x509.ObjectIdentifier,
    hosts: tuple[str, ...] = (),
) -> tuple[rsa.RSAPrivateKey, x509.Certificate]:
    key = _key()
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=True,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
    )
    if hosts:
        builder = builder.add_extension(
            x509.SubjectAlternativeName([_general_name(h) for h in hosts]), critical=False
        )
    return key, builder.sign(ca_key, hashes.SHA256())


def _general_name(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


def _cert_pem(*certs: x509.Certificate) -> str:
    return "".join(c.public_bytes(serialization.Encoding.PEM).decode() for c in certs)


def _key_pem(key: rsa.RSAPrivateKey, password: str | None = None) -> str:
    encryption: serialization.KeySerializationEncryption = (
        serialization.BestAvailableEncryption(password.encode())
        if password
        else serialization.NoEncryption()
    )
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption
    ).decode()


def make_tls_material(
    folder: str | os.PathLike[str], *, hosts: tuple[str, ...] = (), reuse: bool = True
) -> TlsMaterial:
    """The material in `folder`, made now unless `reuse` and a complete set is already there.

    The server certificate names `127.0.0.1`, `localhost`, the stack's host and `hosts`.
    """
    material = TlsMaterial(Path(folder).resolve())
    if reuse and material.complete():
        return material
    material.folder.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.timezone.utc)
    valid_until = now + datetime.timedelta(days=VALID_DAYS)
    ca_key, ca_cert = _ca("kafkaspark local CA", now)
    _, other_ca_cert = _ca("kafkaspark unrelated CA", now)
    names = tuple(dict.fromkeys(("127.0.0.1", "localhost", HOST, *hosts)))
    server_key, server_cert = _leaf(
        "localhost",
        ca_key,
        ca_cert,
        not_before=now - datetime.timedelta(days=1),
        not_after=valid_until,
        usage=ExtendedKeyUsageOID.SERVER_AUTH,
        hosts=names,
    )
    client_key, client_cert = _leaf(
        CLIENT_CN,
        ca_key,
        ca_cert,
        not_before=now - datetime.timedelta(days=1),
        not_after=valid_until,
        usage=ExtendedKeyUsageOID.CLIENT_AUTH,
    )
    expired_key, expired_cert = _leaf(
        CLIENT_CN,
        ca_key,
        ca_cert,
        not_before=now - datetime.timedelta(days=30),
        not_after=now - datetime.timedelta(days=1),
        usage=ExtendedKeyUsageOID.CLIENT_AUTH,
    )
    password = secrets.token_urlsafe(18)
    material.ca_cert.write_text(_cert_pem(ca_cert))
    material.other_ca_cert.write_text(_cert_pem(other_ca_cert))
    write_private(material.server_keystore, _key_pem(server_key) + _cert_pem(server_cert, ca_cert))
    material.client_cert.write_text(_cert_pem(client_cert))
    write_private(material.client_key, _key_pem(client_key))
    write_private(material.client_key_password_file, password + "\n")
    write_private(material.client_key_encrypted, _key_pem(client_key, password))
    material.expired_client_cert.write_text(_cert_pem(expired_cert))
    write_private(material.expired_client_key, _key_pem(expired_key))
    return material
