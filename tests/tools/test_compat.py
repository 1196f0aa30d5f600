"""The pure parts of the librdkafka suite driver (kavka.tools.compat and
its secured scenario, kavka.tools.compat_secure): the test list read from
the suite's test.c, which tests are broker tests and which cluster each runs
on, skip reasons, the runner's summary table and failure lines, the
combination of full-mode sub-test runs, the secured test.conf and SSL_*
files, and the allowlist check."""

from __future__ import annotations

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12

from kavka.tools import compat_build
from kavka.tools.compat import (
    FAIL,
    FULL_MODE_SUBTESTS,
    PASS,
    SECURED_SCENARIO,
    SKIP,
    Result,
    SuiteTest,
    check_allowlist,
    combine_subtest_runs,
    failure_hint,
    is_broker_test,
    not_run_notes,
    parse_summary,
    read_allowlist,
    results_of,
    scenario_of,
    skip_reason,
    subtests_passed,
    suite_tests,
)
from kavka.tools.compat_build import built_with
from kavka.tools.compat_secure import ClientFiles, secured_test_conf, ssl_environment, write_client_files
from kavka.tools.local_pki import create_local_pki

TEST_C = """
#define _TEST(NAME, FLAGS, ...) { .name = #NAME, .flags = FLAGS, __VA_ARGS__ }
struct test tests[] = {
    {.name = "<MAIN>", .flags = TEST_F_LOCAL},
    _TEST(0000_unittests,
          TEST_F_LOCAL,
          _THRES(.ucpu = 100.0, .scpu = 20.0, .rss = 900.0)),
    _TEST(0001_multiobj, 0),
    _TEST(0031_get_offsets_mock, TEST_F_LOCAL),
    _TEST(0045_subscribe_update_topic_remove,
          0,
          TEST_BRKVER(0, 9, 0, 0),
          .scenario = "noautocreate"),
    _TEST(0049_consume_conn_close, TEST_F_SOCKEM, TEST_BRKVER(0, 9, 0, 0)),
    _TEST(0052_msg_timestamps, 0, TEST_BRKVER(0, 10, 0, 0)),
    _TEST(0072_headers_ut, TEST_F_LOCAL),
    _TEST(0103_transactions, 0, TEST_BRKVER(0, 11, 0, 0), .scenario = "default,ak23"),
    _TEST(0139_offset_validation_mock, 0),
    _TEST(8000_idle, TEST_F_MANUAL),
    {NULL}};
"""


@pytest.fixture
def tests_dir(tmp_path):
    (tmp_path / "test.c").write_text(TEST_C)
    return tmp_path


def test_suite_tests_and_broker_selection(tests_dir):
    tests = suite_tests(tests_dir)
    assert [t.name for t in tests] == ["0000_unittests", "0001_multiobj", "0031_get_offsets_mock",
                                       "0045_subscribe_update_topic_remove", "0049_consume_conn_close",
                                       "0052_msg_timestamps", "0072_headers_ut", "0103_transactions",
                                       "0139_offset_validation_mock", "8000_idle"]
    broker = [t for t in tests if is_broker_test(t)]
    assert [t.name for t in broker] == ["0001_multiobj", "0045_subscribe_update_topic_remove",
                                        "0049_consume_conn_close", "0052_msg_timestamps", "0103_transactions"]
    by = {t.name: t for t in broker}
    assert by["0045_subscribe_update_topic_remove"].scenario == "noautocreate"
    assert by["0103_transactions"].scenario == "default"
    assert skip_reason(by["0001_multiobj"]) is None
    assert "KAFKA_PATH" in (skip_reason(by["0052_msg_timestamps"]) or "")
    assert "sockem" in (skip_reason(by["0049_consume_conn_close"]) or "")


RUNNER_OUTPUT = """\
\x1b[36m[0045_subscribe_update      /  1.000s] \x1b[35m[ do_test_regex:123: PASS (0.50s) ]
\x1b[0mTEST 20261126 (bare, scenario default) SUMMARY
#==================================================================#
|\x1b[32m <MAIN>                                   |     PASSED |   9.000s \x1b[0m|
|\x1b[32m 0045_subscribe_update                    |     PASSED |   1.000s \x1b[0m|
|\x1b[31m 0045_resubscribe_with_regex              |     FAILED |   2.500s \x1b[0m|\x1b[31m boom at x.c:9\x1b[0m
|\x1b[36m 0045_subscribe_many_updates              |    SKIPPED |   0.000s \x1b[0m|\x1b[36m quick mode\x1b[0m
#==================================================================#
"""


def test_parse_summary_and_subtests():
    assert parse_summary(RUNNER_OUTPUT) == {
        "0045_subscribe_update": (PASS, 1.0, ""),
        "0045_resubscribe_with_regex": (FAIL, 2.5, "boom at x.c:9"),
        "0045_subscribe_many_updates": (SKIP, 0.0, "quick mode"),
    }
    assert subtests_passed(RUNNER_OUTPUT) == {"0045_subscribe_update": 1}


def test_failure_hint_names_the_assertion():
    out = ('[0030_offset_commit / 3.5s] TEST FAILURE\n'
           '### Test "0030_offset_commit (do_nonexist_commit:497)" failed at 0030-offset_commit.c:479:cb() at Thu: ###\n'
           'Test assertion failed: "err == X": expected unknown, not Success\n')
    assert failure_hint(out) == ('0030_offset_commit (do_nonexist_commit:497) at 0030-offset_commit.c:479:cb(): '
                                 'Test assertion failed: "err == X": expected unknown, not Success')
    assert failure_hint("a\nlast line\n") == "last line"


def test_allowlist_parse_and_check(tmp_path):
    p = tmp_path / "allow.txt"
    p.write_text("# comment\n0001_multiobj both produce\n0030_offset_commit classic commits  # note\n")
    entries = read_allowlist(p)
    assert [(e.test, e.protocol) for e in entries] == [("0001_multiobj", "classic"), ("0001_multiobj", "consumer"),
                                                       ("0030_offset_commit", "classic")]
    results = [Result("0001_multiobj", "classic", PASS, 1.0), Result("0001_multiobj", "consumer", PASS, 1.0),
               Result("0030_offset_commit", "classic", FAIL, 3.0, "boom")]
    assert check_allowlist(entries, results) == ["0030_offset_commit (classic): FAIL boom"]
    assert check_allowlist(entries, results[:2]) == ["0030_offset_commit (classic): allowlisted but not run"]
    p.write_text("0001_multiobj sometimes why\n")
    with pytest.raises(ValueError, match="allow.txt:1: expected 'TEST PROTOCOL WHY'"):
        read_allowlist(p)


def test_secured_tests_run_on_the_secured_cluster_and_need_the_build_features():
    ssl_test = SuiteTest("0097_ssl_verify", "0")
    sasl_test = SuiteTest("0142_reauthentication", "0")
    plain = SuiteTest("0064_interceptors", "0")
    assert scenario_of(ssl_test) == scenario_of(sasl_test) == SECURED_SCENARIO
    assert scenario_of(plain) == "default"
    assert scenario_of(SuiteTest("0045_x", "0", "noautocreate")) == "noautocreate"
    full = frozenset({"SSL", "SASL_SCRAM", "ZLIB"})
    assert skip_reason(ssl_test, full) is None and skip_reason(sasl_test, full) is None
    assert skip_reason(ssl_test) is None  # features unknown: run it, the runner says if it cannot
    assert skip_reason(sasl_test, frozenset({"SSL"})) == (
        "needs a librdkafka built with SASL_SCRAM (not in this build's BUILT_WITH)")
    assert skip_reason(plain, frozenset()) == "needs a librdkafka built with SSL (not in this build's BUILT_WITH)"
    assert skip_reason(SuiteTest("0001_multiobj", "0"), frozenset()) is None


def test_built_with_reads_the_configured_features(tmp_path):
    conf = tmp_path / "Makefile.config"
    conf.write_text("WITH_SSL=\ty\nBUILT_WITH=\tGCC SSL SASL_SCRAM SASL_OAUTHBEARER\nLIBS=-lssl\n")
    assert built_with(conf) == {"GCC", "SSL", "SASL_SCRAM", "SASL_OAUTHBEARER"}
    conf.write_text("LIBS=-lz\n")
    assert built_with(conf) is None
    assert built_with(tmp_path / "absent") is None


def test_full_mode_subtests_leave_out_the_share_consumer_ones():
    # SUBTESTS= is a substring of "function:line: title": none of the
    # chosen names may match a share-consumer sub-test's function.
    share = ("do_test_share_consumer", "do_test_share_oauthbearer", "do_test_share_reauth_failure")
    for sub in FULL_MODE_SUBTESTS["0142"]:
        assert not any(sub in f"{fn}:1: title" for fn in share), sub


def _run(result, reason="", seconds=1.0):
    return Result("0142_reauthentication", "classic", result, seconds, reason)


def test_combine_subtest_runs():
    ok = combine_subtest_runs("0142_reauthentication", "classic",
                              [("a", _run(PASS)), ("b", _run(PASS, seconds=2.0))], "share ones not run")
    assert (ok.result, ok.seconds, ok.reason) == (PASS, 3.0, "full mode, sub-tests a, b; share ones not run")
    bad = combine_subtest_runs("0142_reauthentication", "classic",
                               [("a", _run(PASS)), ("b", _run(FAIL, "boom")), ("c", _run(FAIL, "later"))], "")
    assert (bad.result, bad.reason) == (FAIL, "sub-test b: boom")
    skipped = combine_subtest_runs("0142_reauthentication", "classic",
                                   [("a", _run(SKIP, "needs non-zero connections.max.reauth.ms"))], "")
    assert (skipped.result, skipped.reason) == (SKIP, "needs non-zero connections.max.reauth.ms")
    vacuous = combine_subtest_runs("0142_reauthentication", "classic",
                                   [("a", _run(PASS, "vacuous: no sub-test of it runs in full mode as a"))], "")
    assert (vacuous.result, vacuous.reason) == (PASS, "vacuous: sub-test(s) a ran nothing")


def test_results_of_a_run_that_ran_no_subtest_is_vacuous():
    t = SuiteTest("0045_subscribe_update", "0")
    [r] = results_of([t], "classic", RUNNER_OUTPUT.replace("PASS (0.50s)", "SKIP: x"), 0, 9.0, 60.0, True,
                     "full mode as do_x")
    assert (r.result, r.reason) == (PASS, "vacuous: no sub-test of it runs in full mode as do_x")
    [r] = results_of([t], "classic", "aborted\n", None, 60.0, 60.0, True)
    assert (r.result, r.reason) == (FAIL, "timed out after 60 s (aborted)")


def test_secured_test_conf_is_trivups(tmp_path):
    files = ClientFiles(tmp_path)
    conf = secured_test_conf("127.0.0.1:1,127.0.0.1:2", "admin", "pw", files, keystore_password="ks")
    lines = dict(line.split("=", 1) for line in conf.splitlines())
    assert lines == {
        "bootstrap.servers": "127.0.0.1:1,127.0.0.1:2", "test.timeout.multiplier": "3",
        "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "admin",
        "sasl.password": "pw", "ssl.ca.location": str(files.ca_pem),
        "ssl.certificate.location": str(files.cert_pem), "ssl.key.location": str(files.key_pem),
        "ssl.key.password": "ks"}
    with pytest.raises(ValueError, match="sasl.password must be one line"):
        secured_test_conf("127.0.0.1:1", "admin", "pw\nsecurity.protocol=PLAINTEXT", files)


def test_client_files_in_every_encoding_0097_reads(tmp_path):
    pki = create_local_pki(tmp_path / "pki", [0], "client")
    files = write_client_files(pki, tmp_path / "client", password="pw")
    env = ssl_environment(files, password="pw")
    assert set(env) == {"SSL_pkcs", "SSL_pub_der", "SSL_pub_pem", "SSL_priv_der", "SSL_priv_pem", "SSL_ca_der",
                        "SSL_all_cas_pem", "SSL_password", "SSL_client_auth"}
    assert env["SSL_client_auth"] == "required" and env["SSL_password"] == "pw"
    [ca] = x509.load_pem_x509_certificates(pki.ca.read_bytes())
    leaf = x509.load_pem_x509_certificates(pki.client_certificate.read_bytes())[0]
    key, cert, extra = pkcs12.load_key_and_certificates(files.pkcs12.read_bytes(), b"pw")
    assert cert == leaf and extra == [ca] and key is not None
    assert x509.load_der_x509_certificate(files.cert_der.read_bytes()) == leaf
    assert x509.load_pem_x509_certificate(files.cert_pem.read_bytes()) == leaf
    assert x509.load_der_x509_certificate(files.ca_der.read_bytes()) == ca
    with pytest.raises(TypeError):  # the PEM key is encrypted with the keystore password
        serialization.load_pem_private_key(files.key_pem.read_bytes(), password=None)
    pem_key = serialization.load_pem_private_key(files.key_pem.read_bytes(), password=b"pw")
    der_key = serialization.load_der_private_key(files.key_der.read_bytes(), password=None)
    assert pem_key.public_key() == der_key.public_key() == leaf.public_key()
    assert all(p.stat().st_mode & 0o077 == 0 for p in tmp_path.joinpath("client").iterdir())


def test_asked_for_tests_that_are_not_broker_tests_are_named(tests_dir):
    tests = suite_tests(tests_dir)
    assert not_run_notes(["0001", "0031_get_offsets_mock", "0072", "9999"], tests) == [
        "0031_get_offsets_mock: 0031_get_offsets_mock needs no broker (local, mock or unit test: TEST_F_LOCAL), "
        "not run here",
        "0072: 0072_headers_ut needs no broker (local, mock or unit test: TEST_F_LOCAL), not run here",
        "9999: no such test in this librdkafka's tests/test.c"]


def test_a_build_without_openssl_gets_its_own_cache_key(tmp_path, monkeypatch):
    tarball = tmp_path / "src.tar.gz"
    tarball.write_bytes(b"not really a tarball")
    header = tmp_path / "ssl.h"
    header.write_text("")
    monkeypatch.setattr(compat_build, "OPENSSL_HEADER", header)
    with_ssl = compat_build.cache_key(tarball)
    header.unlink()
    assert compat_build.cache_key(tarball) != with_ssl
