"""Client security from client.properties in librdkafka's and Java's names
(kavka.security.client_properties): the ClientSecurity built, the TLS
context's checks, refused and conflicting keys named, secrets never echoed,
and the translation to librdkafka's keys."""

from __future__ import annotations

import ssl
import stat

import pytest
from cryptography import x509

from kavka.security.client_properties import (
    client_security_from_properties,
    librdkafka_security_config,
)
from kavka.security.client_security import ClientSecurity

SECRET = "pw-Secret-7"
JAAS = f'org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="{SECRET}";'


def build(**props: str) -> ClientSecurity:
    return client_security_from_properties({k.replace("_", "."): v for k, v in props.items()}, "client.properties")


def test_plaintext_by_default_and_in_any_case():
    assert client_security_from_properties({}).protocol == "PLAINTEXT"
    assert client_security_from_properties({"security.protocol": "plaintext"}).protocol == "PLAINTEXT"


def test_librdkafka_sasl_ssl_with_a_ca_file(pki):
    sec = client_security_from_properties({
        "security.protocol": "sasl_ssl", "sasl.mechanisms": "SCRAM-SHA-512", "sasl.username": "alice",
        "sasl.password": SECRET, "ssl.ca.location": str(pki.ca_file())}, "client.properties")
    assert (sec.protocol, sec.sasl_mechanism) == ("SASL_SSL", "SCRAM-SHA-512")
    ctx = sec.ssl_context
    assert ctx is not None and ctx.verify_mode == ssl.CERT_REQUIRED and ctx.check_hostname  # https by default
    assert [c["subject"] for c in ctx.get_ca_certs()] == [((("countryName", "CZ"),), (("organizationName", "Kavka Tests"),), (("commonName", "Kavka Test CA"),))]
    client = sec.new_sasl_client()
    assert client.mechanism == "SCRAM-SHA-512" and sec.new_sasl_client() is not client  # fresh per exchange
    assert SECRET not in repr(sec)


def test_java_sasl_jaas_config_with_a_pkcs12_truststore(pki):
    sec = client_security_from_properties({
        "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-256", "sasl.jaas.config": JAAS,
        "ssl.truststore.location": str(pki.truststore_p12("trust-pass")), "ssl.truststore.type": "PKCS12",
        "ssl.truststore.password": "trust-pass", "ssl.endpoint.identification.algorithm": ""}, "x")
    assert sec.sasl_mechanism == "SCRAM-SHA-256" and sec.ssl_context is not None
    assert not sec.ssl_context.check_hostname and sec.ssl_context.verify_mode == ssl.CERT_REQUIRED


def test_client_certificate_in_both_dialects(pki, tmp_path):
    key, cert = tmp_path / "client-key.pem", tmp_path / "client.pem"
    key.write_bytes(pki.client.key_pem("key-pass"))
    cert.write_bytes(pki.client.chain_pem())
    librdkafka = build(security_protocol="SSL", ssl_ca_location=str(pki.ca_file()),
                       ssl_certificate_location=str(cert), ssl_key_location=str(key), ssl_key_password="key-pass")
    p12 = pki.client.write_pkcs12(tmp_path / "client.p12", "store-pass")
    java = client_security_from_properties({
        "security.protocol": "SSL", "ssl.truststore.type": "PEM", "ssl.truststore.location": str(pki.ca_file()),
        "ssl.keystore.type": "PKCS12", "ssl.keystore.location": str(p12), "ssl.keystore.password": "store-pass"})
    assert librdkafka.ssl_context is not None and java.ssl_context is not None


@pytest.mark.parametrize("props, words", [
    ({"security.protocol": "TLS"}, "security.protocol='TLS' is not one of"),
    ({"ssl.ca.location": "/ca.pem"}, "ssl.ca.location is set but security.protocol is PLAINTEXT"),
    ({"security.protocol": "SSL", "sasl.username": "a"}, "sasl.username is set but security.protocol is SSL"),
    ({"security.protocol": "SSL", "ssl.ca.locaton": "/ca.pem"}, "'ssl.ca.locaton' is not a security setting"),
    ({"security.protocol": "SSL", "ssl.ca.location": "/nonexistent/ca.pem"}, "cannot read /nonexistent/ca.pem"),
    ({"security.protocol": "SSL", "ssl.ca.location": "/tmp"}, "is a directory"),
    ({"security.protocol": "SSL", "ssl.ca.location": "/x", "ssl.truststore.location": "/y"}, "both say which certificates"),
    ({"security.protocol": "SSL", "ssl.key.location": "/k.pem"}, "without ssl.certificate.location"),
    ({"security.protocol": "SSL", "ssl.endpoint.identification.algorithm": "dns"}, "use https"),
    ({"security.protocol": "SSL", "ssl.enabled.protocols": "TLSv1.1"}, "TLSv1.1 not allowed"),
    ({"security.protocol": "SASL_SSL"}, "sasl.mechanism is not set"),
    ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "GSSAPI"}, "GSSAPI is not supported"),
    ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.username": "a"}, "needs sasl.password"),
    ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.jaas.config": JAAS},
     "does not serve SASL mechanism PLAIN"),
])
def test_bad_settings_are_refused_naming_the_source_and_key(props, words):
    with pytest.raises(ValueError) as info:
        client_security_from_properties(props, "client.properties")
    assert "client.properties" in str(info.value) and words in str(info.value), str(info.value)
    assert SECRET not in str(info.value)


def test_a_wrong_keystore_password_is_named_but_not_shown(pki, tmp_path):
    p12 = pki.client.write_pkcs12(tmp_path / "client.p12", "store-pass")
    with pytest.raises(ValueError, match="ssl.keystore.password") as info:
        client_security_from_properties({"security.protocol": "SSL", "ssl.keystore.type": "PKCS12",
                                         "ssl.keystore.location": str(p12), "ssl.keystore.password": "Wr0ng-pass"})
    assert "Wr0ng-pass" not in str(info.value)


def test_librdkafka_keys_pass_as_they_are(pki):
    props = {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "alice",
             "sasl.password": SECRET, "ssl.ca.location": str(pki.ca_file())}
    assert librdkafka_security_config(props) == props


def test_java_keys_are_translated_for_librdkafka(pki, tmp_path):
    keystore = pki.client.write_pem(tmp_path / "client-keystore.pem")
    out = librdkafka_security_config({
        "security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN",
        "sasl.jaas.config": JAAS.replace("scram.ScramLoginModule", "plain.PlainLoginModule"),
        "ssl.truststore.location": str(pki.truststore_p12("tp")), "ssl.truststore.password": "tp",
        "ssl.keystore.type": "PEM", "ssl.keystore.location": str(keystore),
        "ssl.endpoint.identification.algorithm": ""})
    ca_file = out.pop("ssl.ca.location")
    assert out == {"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN", "sasl.username": "alice",
                   "sasl.password": SECRET, "ssl.certificate.location": str(keystore),
                   "ssl.key.location": str(keystore), "ssl.endpoint.identification.algorithm": "none"}
    # the PKCS12 truststore's CA, as the PEM librdkafka reads, in a private file
    with open(ca_file, "rb") as f:
        assert x509.load_pem_x509_certificate(f.read()).subject == pki.ca.cert.subject
    import os
    assert stat.S_IMODE(os.stat(ca_file).st_mode) == 0o600


def test_java_only_tls_settings_are_refused_for_librdkafka(pki):
    with pytest.raises(ValueError, match="ssl.enabled.protocols has no librdkafka equivalent"):
        librdkafka_security_config({"security.protocol": "SSL", "ssl.ca.location": str(pki.ca_file()),
                                    "ssl.enabled.protocols": "TLSv1.3"})
