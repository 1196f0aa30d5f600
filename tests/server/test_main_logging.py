"""The broker process' logging (``kavka.server.main``): the state-change
log goes only to ``state-change.log``, as Kafka's log4j.properties sends it
(additivity false), not to stderr as well; the rest goes to stderr."""

from __future__ import annotations

import logging

import pytest

from kavka.server.main import _setup_logging

NAMES = ("", "kavka.state.change", "state.change.logger", "kafka.authorizer.logger", "kazoo")


KNOBS = ("_srcfile", "logThreads", "logProcesses", "logMultiprocessing")


@pytest.fixture
def restored_logging():
    """_setup_logging configures the process' loggers: put them back."""
    saved = {n: (list(logging.getLogger(n).handlers), logging.getLogger(n).propagate, logging.getLogger(n).level)
             for n in NAMES}
    knobs = {k: getattr(logging, k) for k in KNOBS}
    for n in NAMES:
        logging.getLogger(n).handlers = []
    yield
    for n, (handlers, propagate, level) in saved.items():
        logger = logging.getLogger(n)
        for h in logger.handlers:
            if h not in handlers:
                h.close()
        logger.handlers, logger.propagate = handlers, propagate
        logger.setLevel(level)
    for k, v in knobs.items():
        setattr(logging, k, v)


def test_state_changes_go_to_their_own_file_only(tmp_path, caplog, restored_logging):
    path = tmp_path / "state-change.log"
    _setup_logging("INFO", str(path), str(tmp_path / "kafka-authorizer.log"))
    caplog.set_level(logging.INFO)  # the root's level; caplog's handler sits on the root, as stderr's does
    logging.getLogger("kavka.state.change").info("broker 1 leads t-0: epoch 3")
    logging.getLogger("kavka.server").info("broker 1 started")
    for h in logging.getLogger("kavka.state.change").handlers:
        h.flush()
    assert "broker 1 leads t-0" in path.read_text()
    assert [r.getMessage() for r in caplog.records] == ["broker 1 started"]
    assert "broker 1 started" not in path.read_text()


def test_records_gather_no_caller_thread_or_process(tmp_path, restored_logging):
    """No handler of the broker writes them; a failover writes thousands of
    lines on the event loop, so the records skip gathering them."""
    path = tmp_path / "state-change.log"
    _setup_logging("INFO", str(path))
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    logger = logging.getLogger("kavka.state.change")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.info("broker 1 leads t-0: epoch 3")
    (record,) = records
    assert (record.funcName, record.lineno, record.thread, record.process, record.processName) == (
        "(unknown function)", 0, None, None, None)
    for h in logger.handlers:
        h.flush()
    assert "broker 1 leads t-0: epoch 3" in path.read_text()
