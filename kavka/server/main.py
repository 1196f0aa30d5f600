"""``kavka server start PATH/server.properties [--override key=value ...]``:
run one broker in the foreground.

The configuration is read and validated before anything starts: an unknown
key or a bad value stops the broker with a message naming the key, where it
came from and what is allowed. SIGTERM or SIGINT shuts the broker down
cleanly (the log manager writes ``.kafka_cleanshutdown``); a second signal
exits at once. Logs go to stderr; the state-change log (logger
``kavka.state.change``: a line per partition and replica state change,
thousands at a failover) goes only to ``state-change.log`` in the first
log directory, as Kafka's log4j.properties sends it (additivity false). The authorizer's audit log (logger ``kafka.authorizer.logger``:
denied requests) goes only to ``kafka-authorizer.log`` there, as Kafka's
log4j.properties sends it (rotated at 10 MB, five files kept, so a client
hammering the broker with denied requests cannot fill the disk).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import logging
import logging.handlers
import os
import signal
import sys

from kavka.common.broker_config import from_properties_file
from kavka.common.config import ConfigError
from kavka.storage.broker_metadata import BrokerMetadataError
from kavka.storage.errors import KafkaStorageError
from kavka.zk.codec import ZnodeDataError
from kavka.zk.store_types import ZkError

_EXPECTED_STARTUP_ERRORS = (ConfigError, OSError, KafkaStorageError, BrokerMetadataError, ZkError, ZnodeDataError)

DESCRIPTION = "Run a Kavka broker in the foreground: kavka server start server.properties [--override k=v ...]"


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="action", metavar="ACTION")
    sub.required = True
    start = sub.add_parser("start", help="start a broker with this server.properties",
                           description="Start a broker in the foreground; SIGTERM/SIGINT shuts it down cleanly.")
    start.add_argument("properties", help="path of server.properties")
    start.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                       help="override one config key (repeatable), e.g. --override broker.id=1")
    start.add_argument("--log-level", default=os.environ.get("KAVKA_LOG_LEVEL", "INFO"),
                       choices=["DEBUG", "INFO", "WARNING", "ERROR"], help="log level (default INFO)")


AUTHORIZER_LOG_BYTES = 10 * 1024 * 1024
AUTHORIZER_LOG_BACKUPS = 5


def _setup_logging(level: str, state_change_path: str | None, authorizer_path: str | None = None) -> None:
    fmt = "%(asctime)s %(levelname)s [%(name)s] %(message)s"
    # No handler writes the caller, thread or process of a line, so the
    # records do not gather them (the knobs of the logging HOWTO's
    # "Optimization" section): a failover writes a state-change line per
    # partition on the event loop, and these lookups were a fifth of a
    # line's cost (bench/log_lines.py).
    logging._srcfile = None
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False
    logging.basicConfig(level=getattr(logging, level), format=fmt, stream=sys.stderr)
    logging.getLogger("kazoo").setLevel(logging.WARNING)
    if state_change_path:
        handler = logging.FileHandler(state_change_path)
        handler.setFormatter(logging.Formatter(fmt))
        for name in ("kavka.state.change", "state.change.logger"):
            state_change = logging.getLogger(name)
            state_change.addHandler(handler)
            state_change.propagate = False
    if authorizer_path:
        from kavka.security.acl_authorizer import AUDIT_LOGGER

        audit = logging.handlers.RotatingFileHandler(authorizer_path, maxBytes=AUTHORIZER_LOG_BYTES,
                                                     backupCount=AUTHORIZER_LOG_BACKUPS)
        audit.setFormatter(logging.Formatter(fmt))
        audit_logger = logging.getLogger(AUDIT_LOGGER)
        audit_logger.addHandler(audit)
        audit_logger.setLevel(logging.INFO)  # Kafka's default, whatever the broker's level
        audit_logger.propagate = False


def run(args: argparse.Namespace) -> int:
    try:
        config = from_properties_file(args.properties, args.override)
    except ConfigError as e:
        print(f"kavka server: {e}", file=sys.stderr)
        return 2
    os.makedirs(config.log_dirs[0], exist_ok=True)
    _setup_logging(args.log_level, os.path.join(config.log_dirs[0], "state-change.log"),
                   os.path.join(config.log_dirs[0], "kafka-authorizer.log"))
    try:
        import uvloop  # noqa: F401
    except ImportError:
        runner = asyncio.run
    else:
        runner = uvloop.run
    return runner(_serve(config))


async def _serve(config) -> int:
    from kavka.server.broker import KafkaServer

    server = KafkaServer(config)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    signals = 0

    def on_signal() -> None:
        nonlocal signals
        signals += 1
        if signals > 1:
            os._exit(130)
        stop.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, on_signal)
    # A broker holds a large, long-lived heap (metadata, controller context,
    # partitions) and makes few reference cycles; with Python's default
    # thresholds every full collection walks all of it, which was half of a
    # 10,000-partition controller failover (bench/failover.py). Collect the
    # young generation less often, and move what startup built out of the
    # collector's sight once it is up.
    gc.set_threshold(50_000, 20, 100)
    starting = asyncio.ensure_future(server.start())
    stopping = asyncio.ensure_future(stop.wait())
    # A signal during startup (say, while waiting out an old registration)
    # stops the broker then, not once startup is over.
    await asyncio.wait({starting, stopping}, return_when=asyncio.FIRST_COMPLETED)
    if not starting.done():
        logging.getLogger("kavka.server").info("broker %d: stop requested during startup", config.broker_id)
        starting.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):  # cancelled on purpose; what was started is shut down below
            await starting
        await server.shutdown()
        return 0
    stopping.cancel()
    try:
        starting.result()
    except Exception as e:
        # The operator's mistakes (a locked log dir, ZooKeeper down, a port
        # in use, a broker.id taken) get one line naming the cause; only
        # unexpected failures carry a traceback.
        logging.getLogger("kavka.server").error("broker %d failed to start: %s", config.broker_id, e,
                                                exc_info=not isinstance(e, _EXPECTED_STARTUP_ERRORS))
        await server.shutdown()
        return 1
    gc.freeze()
    await stop.wait()
    await server.shutdown()
    return 0
