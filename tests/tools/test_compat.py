"""The pure parts of the librdkafka suite driver (kavka.tools.compat): the
test list read from the suite's test.c, which tests are broker tests, the
runner's summary table and failure lines, and the allowlist check."""

from __future__ import annotations

import pytest

from kavka.tools.compat import (
    FAIL,
    PASS,
    SKIP,
    Result,
    check_allowlist,
    failure_hint,
    is_broker_test,
    parse_summary,
    read_allowlist,
    skip_reason,
    subtests_passed,
    suite_tests,
)

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
