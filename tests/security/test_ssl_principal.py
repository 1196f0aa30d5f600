"""The SSL principal: a certificate's subject in Java's RFC 2253 form
(``kavka.security.x500``) mapped by ``ssl.principal.mapping.rules``
(``kavka.security.ssl_principal_mapper``), with the cases of Kafka's
SslPrincipalMapperTest."""

from __future__ import annotations

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding
from cryptography.x509.oid import NameOID
from hypothesis import given
from hypothesis import strategies as st

from kavka.security.ssl_principal_mapper import NoMatchingRule, SslPrincipalMapper
from kavka.security.x500 import rfc2253, subject_dn

from .certs import Ca


def attr(oid, value, tag=None) -> x509.NameAttribute:
    return x509.NameAttribute(oid, value, _type=tag) if tag is not None else x509.NameAttribute(oid, value)


def dn(*attrs: x509.NameAttribute) -> str:
    return rfc2253(x509.Name(list(attrs)).public_bytes())


def test_rdns_last_first_with_rfc2253_keywords():
    assert dn(attr(NameOID.COUNTRY_NAME, "US"), attr(NameOID.STATE_OR_PROVINCE_NAME, "MD"),
              attr(NameOID.LOCALITY_NAME, "Fulton"), attr(NameOID.ORGANIZATION_NAME, "mycp"),
              attr(NameOID.ORGANIZATIONAL_UNIT_NAME, "SME"), attr(NameOID.COMMON_NAME, "Duke")) \
        == "CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US"
    assert dn(attr(NameOID.DOMAIN_COMPONENT, "com"), attr(NameOID.DOMAIN_COMPONENT, "example"),
              attr(NameOID.USER_ID, "jdoe"), attr(NameOID.STREET_ADDRESS, "Main St 1")) \
        == "STREET=Main St 1,UID=jdoe,DC=example,DC=com"


def test_types_without_rfc2253_keyword_are_oid_and_hex_der():
    # Java: 1.2.840.113549.1.9.1=#16<len><ascii> for an IA5String e-mail address
    assert dn(attr(NameOID.EMAIL_ADDRESS, "alice@example.com"), attr(NameOID.COMMON_NAME, "alice")) \
        == "CN=alice,1.2.840.113549.1.9.1=#1611" + b"alice@example.com".hex()
    assert dn(attr(NameOID.SERIAL_NUMBER, "123")) == "2.5.4.5=#1303313233"


def test_escaping_as_java_does():
    assert dn(attr(NameOID.COMMON_NAME, "Smith, John")) == "CN=Smith\\, John"
    assert dn(attr(NameOID.COMMON_NAME, 'a=b#c+d<e>f;g"h\\i')) == 'CN=a\\=b\\#c\\+d\\<e\\>f\\;g\\"h\\\\i'
    assert dn(attr(NameOID.COMMON_NAME, "  padded ")) == "CN=\\ \\ padded\\ "
    assert dn(attr(NameOID.COMMON_NAME, "Žluťoučký kůň")) == "CN=Žluťoučký kůň"


def test_multi_valued_rdn_joined_by_plus():
    name = x509.Name([x509.RelativeDistinguishedName([attr(NameOID.COMMON_NAME, "x"),
                                                      attr(NameOID.USER_ID, "y")]),
                      x509.RelativeDistinguishedName([attr(NameOID.ORGANIZATION_NAME, "o")])])
    text = rfc2253(name.public_bytes())
    head, _, tail = text.partition(",")
    assert tail == "CN=x+UID=y" or tail == "UID=y+CN=x"
    assert head == "O=o"


def test_a_certificate_subject():
    issued = Ca("ca").issue("alice")
    assert subject_dn(issued.cert.public_bytes(Encoding.DER)) == "CN=alice,O=Kavka Tests,C=CZ"


@pytest.mark.parametrize("bad", [b"", b"\x31\x00", b"\x30\x05\x31\x03\x30\x01", b"\x30\x81"])
def test_malformed_names_raise_value_error(bad):
    with pytest.raises(ValueError):
        rfc2253(bad)


_plain = st.text(st.sampled_from("abcXYZ019 .-_@"), min_size=1, max_size=20).filter(lambda s: s.strip() == s)


@given(st.lists(st.tuples(st.sampled_from([NameOID.COMMON_NAME, NameOID.ORGANIZATION_NAME,
                                           NameOID.ORGANIZATIONAL_UNIT_NAME, NameOID.LOCALITY_NAME]), _plain),
                min_size=1, max_size=6))
def test_names_without_special_characters_read_as_rfc4514_says(parts):
    name = x509.Name([attr(oid, value) for oid, value in parts])
    assert rfc2253(name.public_bytes()) == name.rfc4514_string()


# -- ssl.principal.mapping.rules (Kafka's SslPrincipalMapperTest) -------------------

KAFKA_RULES = ", ".join([
    "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L",
    "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L",
    "RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U",
    "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U",
    "DEFAULT",
])


@pytest.mark.parametrize("dn_text, name", [
    ("CN=Duke,OU=ServiceUsers,O=Org,C=US", "duke"),
    ("CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US", "duke@sme"),
    ("cn=duke,ou=sme,dc=mycp,dc=com", "DUKE@SME"),
    ("cN=duke,OU=JavaSoft,O=Sun Microsystems", "DUKE"),
    ("OU=JavaSoft,O=Sun Microsystems,C=US", "OU=JavaSoft,O=Sun Microsystems,C=US"),
])
def test_kafka_mapper_examples(dn_text, name):
    assert SslPrincipalMapper.from_rules(KAFKA_RULES).name(dn_text) == name


def test_comma_inside_a_pattern_and_an_escaped_comma_in_the_dn():
    mapper = SslPrincipalMapper.from_rules("RULE:^CN=((\\\\, *|\\w)+)(,.*|$)/$1/,DEFAULT")
    assert mapper.name("CN=Tkac\\, Adam,OU=ITZ,DC=geodis,DC=cz") == "Tkac\\, Adam"


@pytest.mark.parametrize("rules", [
    "DEFAULT", "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/", "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT",
    "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/", "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L",
    "RULE:^cn=(.?),ou=(.?),dc=(.?),dc=(.?)$/$1@$2/U", "RULE:^CN=([^,ADEFLTU,]+)(,.*|$)/$1/",
    ",,RULE://,,,DEFAULT,,", "RULE:^CN=(?<user>[a-z]+),.*$/${user}/",
])
def test_valid_rules(rules):
    SslPrincipalMapper.from_rules(rules)


@pytest.mark.parametrize("rules", [
    "default", "DEFAUL", "DEFAULT/L", "DEFAULT/U", "RULE:CN=(.*?),OU=ServiceUsers.*/$1",
    "rule:^CN=(.*?),OU=ServiceUsers.*$/$1/", "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L/U",
    "RULE:^CN=(.*?),OU=ServiceUsers.*$/L", "RULE:^CN=(.*?),OU=ServiceUsers.*$/LU",
    "RULE:^CN=(.*$/$1/", "RULE:^CN=(.*)$/$2/", "RULE:^CN=(.*)$/$x/",
])
def test_invalid_rules_are_refused_naming_the_key(rules):
    with pytest.raises(ValueError, match="ssl.principal.mapping.rules"):
        SslPrincipalMapper.from_rules(rules)


def test_rules_split_on_commas_outside_patterns():
    mapper = SslPrincipalMapper.from_rules("  RULE:([A-Z]*)/$1/U   ,RULE:([a-z]+)/$1/,   DEFAULT  ")
    assert [r.text for r in mapper.rules] == ["RULE:([A-Z]*)/$1/U", "RULE:([a-z]+)/$1/", "DEFAULT"]
    assert SslPrincipalMapper.from_rules(",   , , ,      , , ,   ").rules == []


def test_no_rule_applies():
    mapper = SslPrincipalMapper.from_rules("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/")
    with pytest.raises(NoMatchingRule, match="no rule of ssl.principal.mapping.rules applies to 'CN=x,O=y'"):
        mapper.name("CN=x,O=y")


def test_backslashes_in_the_replacement_are_literal_and_named_groups_work():
    assert SslPrincipalMapper.from_rules("RULE:^CN=(.*)$/a\\\\b$1/").name("CN=z") == "a\\\\bz"
    assert SslPrincipalMapper.from_rules("RULE:^CN=(?<user>[a-z]+),.*$/${user}/U").name("CN=bob,O=x") == "BOB"
