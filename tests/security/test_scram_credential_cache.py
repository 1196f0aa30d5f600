"""The broker's SCRAM credential cache as the SASL servers read it."""

from __future__ import annotations

import logging

from kavka.security.sasl.credential_cache import ScramCredentialCache
from kavka.security.sasl.credentials import ScramFormatter, ScramMechanism
from kavka.security.sasl.factory import SaslServerFactory

SHA512 = ScramMechanism.SCRAM_SHA_512


def test_update_and_lookup():
    cache = ScramCredentialCache()
    cred = ScramFormatter(SHA512).generate_credential("secret", 4096)
    cache.update_user("alice", {"SCRAM-SHA-512": cred.to_config_value(), "producer_byte_rate": "100"})
    assert cache("SCRAM-SHA-512", "alice") == cred
    assert cache("SCRAM-SHA-256", "alice") is None
    assert cache("PLAIN", "alice") is None
    assert cache.mechanisms_of("alice") == ["SCRAM-SHA-512"]
    cache.update_user("alice", {"producer_byte_rate": "100"})  # credential deleted
    assert cache("SCRAM-SHA-512", "alice") is None


def test_a_bad_stored_value_leaves_no_credential_and_is_not_logged(caplog):
    cache = ScramCredentialCache()
    good = ScramFormatter(SHA512).generate_credential("secret", 4096).to_config_value()
    cache.update_user("alice", {"SCRAM-SHA-512": good})
    bad = good.replace("iterations=4096", "iterations=x")
    with caplog.at_level(logging.ERROR):
        cache.update_user("alice", {"SCRAM-SHA-512": bad})
    assert cache("SCRAM-SHA-512", "alice") is None
    assert "alice" in caplog.text and "iterations" in caplog.text
    stored_key = good.split("stored_key=")[1].split(",")[0]
    assert stored_key not in caplog.text


def test_the_cache_is_what_a_sasl_factory_takes():
    cache = ScramCredentialCache()
    factory = SaslServerFactory(["SCRAM-SHA-512"], scram_credentials=cache)
    assert factory.create("SCRAM-SHA-512") is not None
