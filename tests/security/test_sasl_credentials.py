"""SCRAM credentials in Kafka's stored form (``/config/users/<user>``)."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kavka.security.sasl.credentials import (
    MAX_ITERATIONS,
    ScramCredential,
    ScramFormatter,
    ScramMechanism,
    secure_random_string,
)

SHA256 = ScramMechanism.SCRAM_SHA_256
SHA512 = ScramMechanism.SCRAM_SHA_512


def test_kafkas_stored_form_round_trips() -> None:
    cred = ScramFormatter(SHA256).generate_credential("alice-secret", 8192)
    text = cred.to_config_value()
    assert text.startswith("salt=") and ",stored_key=" in text and ",server_key=" in text
    assert text.endswith(",iterations=8192")
    assert ScramCredential.parse(text, SHA256) == cred


def test_a_credential_written_by_kafka_parses() -> None:
    """What kafka-configs.sh stored for SCRAM-SHA-256=[iterations=4096,password=alice-secret]
    is reproducible from the salt: the keys follow from the password."""
    salt = b"1cpy7n0xayx3oiae4u8q0mkfmz"  # a base36 salt as Kafka makes them
    cred = ScramFormatter(SHA256).generate_credential("alice-secret", 4096, salt)
    text = (f"salt={base64.b64encode(salt).decode()},stored_key={base64.b64encode(cred.stored_key).decode()},"
            f"server_key={base64.b64encode(cred.server_key).decode()},iterations=4096")
    assert ScramCredential.parse(text, SHA256) == cred
    # Java's decoder takes unpadded base64 too
    unpadded = ",".join(p.rstrip("=") if not p.startswith("iterations") else p for p in text.split(","))
    assert ScramCredential.parse(unpadded, SHA256) == cred


@settings(max_examples=50, deadline=None)
@given(salt=st.binary(min_size=1, max_size=64), iterations=st.integers(1, 2**31 - 1),
       mech=st.sampled_from(list(ScramMechanism)), data=st.data())
def test_any_credential_round_trips(salt: bytes, iterations: int, mech: ScramMechanism, data: st.DataObject) -> None:
    key = st.binary(min_size=mech.digest_size, max_size=mech.digest_size)
    cred = ScramCredential(salt, data.draw(key), data.draw(key), iterations)
    assert ScramCredential.parse(cred.to_config_value(), mech) == cred


VALID = ScramFormatter(SHA256).generate_credential("pw").to_config_value()


@pytest.mark.parametrize("text, field", [
    (VALID.replace("salt=", "pepper="), "unknown field 'pepper'"),
    (VALID + ",iterations=4096", "'iterations' appears more than once"),
    (VALID.rsplit(",", 1)[0], "'iterations' is missing"),
    (VALID.replace("iterations=4096", "iterations=-1"), "'iterations' is not a positive"),
    (VALID.replace("iterations=4096", "iterations=0"), "'iterations' is not a positive"),
    (VALID.replace("iterations=4096", "iterations=4096x"), "'iterations' is not a positive"),
    (VALID.replace("iterations=4096", "iterations=99999999999"), "'iterations' is not a positive"),
    (VALID.replace("stored_key=", "stored_key=*"), "'stored_key' is not valid base64"),
    ("salt=,stored_key=AA==,server_key=AA==,iterations=1", "'salt' is empty"),
    ("", "element 1 is not name=value"),
    (VALID + ",", "is not name=value"),
    ("=x," + VALID, "element 1 is not name=value"),
    ("x" * 5000, "longer than 4096"),
])
def test_malformed_strings_are_refused_naming_the_field(text: str, field: str) -> None:
    with pytest.raises(ValueError, match=field) as e:
        ScramCredential.parse(text, SHA256)
    for part in VALID.split(","):
        value = part.split("=", 1)[1]
        if len(value) > 8:
            assert value not in str(e.value)


def test_keys_must_have_the_mechanisms_digest_size() -> None:
    with pytest.raises(ValueError, match="'stored_key' has 32 bytes; SCRAM-SHA-512 keys have 64"):
        ScramCredential.parse(VALID, SHA512)


def test_keys_are_not_in_the_repr() -> None:
    cred = ScramFormatter(SHA256).generate_credential("pw")
    assert base64.b64encode(cred.stored_key).decode() not in repr(cred)
    assert cred.stored_key.hex() not in repr(cred) and str(cred.stored_key) not in repr(cred)


@pytest.mark.parametrize("iterations, match", [(4095, "Too few iterations"), (MAX_ITERATIONS + 1, "Too many iterations")])
def test_generation_bounds_iterations_as_kafka(iterations: int, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        ScramFormatter(SHA512).generate_credential("pw", iterations)
    with pytest.raises(ValueError, match="empty"):
        ScramFormatter(SHA512).generate_credential("", 4096)


def test_fresh_salts_and_nonces_are_base36_of_130_bits() -> None:
    seen = {secure_random_string() for _ in range(200)}
    assert len(seen) == 200
    assert all(s.isalnum() and s == s.lower() and int(s, 36) < 2**130 for s in seen)
    a = ScramFormatter(SHA256).generate_credential("pw")
    b = ScramFormatter(SHA256).generate_credential("pw")
    assert a.salt != b.salt and a.stored_key != b.stored_key


def test_mechanism_lookup_and_type_ids() -> None:
    assert ScramMechanism.of("SCRAM-SHA-512") is SHA512
    assert ScramMechanism.of("scram-sha-512") is None and ScramMechanism.of("PLAIN") is None
    assert (SHA256.type_id, SHA512.type_id) == (1, 2)
    assert ScramMechanism.of_type_id(2) is SHA512 and ScramMechanism.of_type_id(0) is None
