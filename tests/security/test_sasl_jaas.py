"""``sasl.jaas.config`` values parsed as Kafka's JaasConfig (StreamTokenizer) does."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kavka.security.sasl.jaas import (
    OAUTHBEARER_LOGIN_MODULE,
    PLAIN_LOGIN_MODULE,
    SCRAM_LOGIN_MODULE,
    JaasConfigError,
    LoginModuleControlFlag,
    jaas_config_key,
    load_jaas_entry,
    login_credentials,
    parse_jaas_config,
)

PLAIN_CONFIG = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
                'password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";')


def test_kafkas_documented_plain_config() -> None:
    [entry] = parse_jaas_config(PLAIN_CONFIG)
    assert entry.login_module == PLAIN_LOGIN_MODULE
    assert entry.control_flag is LoginModuleControlFlag.REQUIRED
    assert dict(entry.options) == {"username": "admin", "password": "admin-secret",
                                   "user_admin": "admin-secret", "user_alice": "alice-secret"}
    assert entry.plain_users() == {"admin": "admin-secret", "alice": "alice-secret"}
    assert login_credentials(entry) == ("admin", "admin-secret")


def test_sensitive_values_are_masked_in_repr() -> None:
    [entry] = parse_jaas_config(PLAIN_CONFIG)
    text = repr(entry) + str(entry)
    assert "secret" not in text and "admin" in text and "[hidden]" in text


def test_scram_and_oauthbearer_configs_several_lines_comments_and_quotes() -> None:
    text = """
        // the broker's own login
        org.apache.kafka.common.security.scram.ScramLoginModule REQUISITE
            username='broker-1' /* inline */ password="p\\"w\\\\d\\n\\101";
        org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule optional
            unsecuredLoginStringClaim_sub="admin" unsecuredLoginListClaim_scope=",a,b" tokenauth=true
            word.with-chars_$ok=v.1-2;
    """
    scram, oauth = parse_jaas_config(text)
    assert scram.login_module == SCRAM_LOGIN_MODULE and scram.control_flag is LoginModuleControlFlag.REQUISITE
    assert dict(scram.options) == {"username": "broker-1", "password": 'p"w\\d\nA'}
    assert oauth.login_module == OAUTHBEARER_LOGIN_MODULE and oauth.control_flag is LoginModuleControlFlag.OPTIONAL
    assert oauth.options["unsecuredLoginListClaim_scope"] == ",a,b"
    assert oauth.options["tokenauth"] == "true" and oauth.options["word.with-chars_$ok"] == "v.1-2"


def test_escapes_as_java_stream_tokenizer() -> None:
    [e] = parse_jaas_config(r'M required a="\t\r\a\b\f\v\x\'\0\12\377\400";')
    assert e.options["a"] == "\t\r\x07\b\f\x0bx'\x00\n\xff\x200"


@pytest.mark.parametrize("text, message", [
    ("", "Login module not specified in JAAS config"),
    ("   // only a comment", "Login module not specified in JAAS config"),
    ("M", "Login module control flag not specified in JAAS config"),
    ("M mandatory;", "Invalid login module control flag 'mandatory' in JAAS config"),
    ('M "required";', "Invalid login module control flag in JAAS config"),
    ("M required a=b", "JAAS config entry not terminated by semi-colon"),
    ("M required a;", "Value not specified for key (the option after the control flag of the login module) in JAAS config"),
    ("M required a=b c;", "Value not specified for key (the option after option 'a') in JAAS config"),
    ("M required a=;", "Value not specified for key 'a' in JAAS config"),
    ("M required a=5;", "Value not specified for key 'a' in JAAS config"),
    ('M required a="unterminated;', "quoted value not closed"),
    ('M required a="cut\nhere";', "quoted value not closed"),
    ("M required a=b a=c;", "option 'a' given more than once"),
    ("M required =b;", "expected an option name or ';' after the control flag of the login module"),
    ("5 required;", "expected a login module class name"),
    ("M required a=/etc/x;", "Value not specified for key 'a'"),
])
def test_malformed_configs_are_refused_with_kafkas_message_and_the_key(text: str, message: str) -> None:
    with pytest.raises(JaasConfigError) as e:
        parse_jaas_config(text, "listener.name.sasl_ssl.plain.sasl.jaas.config")
    assert str(e.value).startswith("Invalid listener.name.sasl_ssl.plain.sasl.jaas.config: ")
    assert message in str(e.value)


@pytest.mark.parametrize("text", [
    'M required password="hunter2" "hunter3" x;',
    'M required password="hunter2"hunter3;',
    'M required user_bob="hunter2" hunter3',
    'M required password="hunter2\n',
    '"hunter2" required;',
])
def test_no_error_message_echoes_a_secret(text: str) -> None:
    with pytest.raises(JaasConfigError) as e:
        load_jaas_entry(text, "PLAIN")
    assert "hunter" not in str(e.value)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list('Mrequid aBcx=;"\'\\/*\n\t5.-_$é')), max_size=80))
def test_any_text_parses_or_is_refused_with_jaas_config_error(text: str) -> None:
    try:
        entries = parse_jaas_config(text)
    except JaasConfigError:
        return
    assert entries


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.from_regex(r"[A-Za-z_$][A-Za-z0-9_$.-]{0,10}", fullmatch=True),
                       st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n"), max_size=20),
                       min_size=1, max_size=5))
def test_quoted_values_round_trip(options: dict[str, str]) -> None:
    def quote(v: str) -> str:
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    text = "M required " + " ".join(f"{k}={quote(v)}" for k, v in options.items()) + ";"
    [entry] = parse_jaas_config(text)
    assert dict(entry.options) == options


def test_load_jaas_entry_checks_the_module_and_one_entry() -> None:
    assert load_jaas_entry(PLAIN_CONFIG, "PLAIN").plain_users()["alice"] == "alice-secret"
    with pytest.raises(JaasConfigError, match="does not serve SASL mechanism SCRAM-SHA-256"):
        load_jaas_entry(PLAIN_CONFIG, "SCRAM-SHA-256", "sasl.jaas.config")
    with pytest.raises(JaasConfigError, match="contains 2 login modules, should be 1 module"):
        load_jaas_entry(PLAIN_CONFIG + PLAIN_CONFIG, "PLAIN")
    with pytest.raises(JaasConfigError, match="GSSAPI is not supported"):
        load_jaas_entry(PLAIN_CONFIG, "GSSAPI")


def test_listener_config_key_is_lower_case() -> None:
    assert jaas_config_key("SASL_SSL", "SCRAM-SHA-512") == "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config"
    assert jaas_config_key(None, "PLAIN") == "sasl.jaas.config"


def test_login_credentials_name_what_is_missing() -> None:
    [entry] = parse_jaas_config(f"{SCRAM_LOGIN_MODULE} required username=alice;")
    with pytest.raises(JaasConfigError, match="option 'password' is missing"):
        login_credentials(entry, "sasl.jaas.config")
