"""The Kerberos parts of the dev stack as text, without a KDC: the realm's files, the RM's
SPNEGO settings, the GSSAPI listener's broker settings."""

from __future__ import annotations

from pathlib import Path

from kafkaspark_devstack.kafka_security import GSSAPI, BrokerSecurity, KerberosService
from kafkaspark_devstack.kdc import kdc_conf, keytab_name, krb5_conf
from kafkaspark_devstack.yarn_config import AUTH_FILTER_INITIALIZER, WebAuth, web_spnego_site


def test_the_clients_krb5_conf_names_the_kdc_and_does_not_canonicalize() -> None:
    text = krb5_conf("R.TEST", 1234)
    assert "kdc = 127.0.0.1:1234" in text
    assert "default_realm = R.TEST" in text
    # localhost principals whatever the resolver says; TCP only.
    assert "dns_canonicalize_hostname = false" in text and "rdns = false" in text
    assert "udp_preference_limit = 1" in text


def test_the_kdc_keeps_everything_in_its_folder(tmp_path: Path) -> None:
    text = kdc_conf("R.TEST", 1234, tmp_path)
    assert f"database_name = {tmp_path / 'db' / 'principal'}" in text
    assert "kdc_tcp_ports = 1234" in text
    assert keytab_name("HTTP/localhost@R.TEST") == "HTTP_localhost.keytab"


def test_the_rm_web_filter_is_hadoops_kerberos_one() -> None:
    site = web_spnego_site(WebAuth("HTTP/localhost@R", "/k/http.keytab", "/k/krb5.conf", "p", "/p"))
    assert site["hadoop.http.filter.initializers"] == AUTH_FILTER_INITIALIZER
    assert site["hadoop.http.authentication.type"] == "kerberos"
    assert site["hadoop.http.authentication.kerberos.principal"] == "HTTP/localhost@R"


def test_the_gssapi_listener_logs_the_broker_in_with_its_keytab() -> None:
    security = BrokerSecurity(kerberos=KerberosService("kafka/localhost@R", "/k/kafka", "/k/c"))
    assert security.listeners() == {GSSAPI: "SASL_PLAINTEXT"}
    config = security.broker_config()
    assert config["listener.name.gssapi.sasl.enabled.mechanisms"] == "GSSAPI"
    assert config["listener.name.gssapi.sasl.kerberos.service.name"] == "kafka"
    jaas = config["listener.name.gssapi.gssapi.sasl.jaas.config"]
    assert 'keyTab="/k/kafka"' in jaas and 'principal="kafka/localhost@R"' in jaas
    assert security.system_properties() == {"java.security.krb5.conf": "/k/c"}
