"""``kavka console``: the web console, a separate process that is a Kafka
client of the cluster (like Redpanda Console or AKHQ), served by uvicorn
on 127.0.0.1 unless ``--host`` says otherwise.

Options: ``--bootstrap-server``, ``--command-config`` (the client
properties of ``kavka topics``: security, client.id, request.timeout.ms),
``--port``, ``--host``, and ``--metrics-url`` (repeatable: a broker's
Prometheus endpoint for the Metrics page). Bad options exit 2 with one
line naming the option.
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import sys
from urllib.parse import urlparse

from kavka.tools.client_cli import (
    EXIT_USAGE,
    CliError,
    add_bootstrap_argument,
    add_command_config_argument,
    check_bootstrap,
    load_command_config,
    usage,
)

DESCRIPTION = ("Serve the web console: brokers, topics, messages, consumer groups, reassignment, leader "
               "election, ACLs, SCRAM users and broker metrics of a Kafka-compatible cluster.")


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_bootstrap_argument(p)
    add_command_config_argument(p)
    p.add_argument("--port", type=int, default=8080, help="HTTP port to serve the console on (default 8080; 0: any)")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1; the console has no login of its own)")
    p.add_argument("--metrics-url", action="append", default=[], metavar="URL",
                   help="a broker's Prometheus /metrics URL for the Metrics page; repeat for each broker")
    p.add_argument("--metrics-interval", type=float, default=5.0, metavar="SECONDS",
                   help="how often the metrics URLs are scraped (default 5)")


def check_url(url: str) -> str:
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise usage(f"--metrics-url {url!r} is not an http(s) URL such as http://127.0.0.1:9404/metrics")
    return url


def settings_from(args: argparse.Namespace):
    from kavka.console.app import ConsoleSettings

    if not 0 <= args.port <= 65535:
        raise usage(f"--port {args.port} is not a TCP port")
    if not 0.5 <= args.metrics_interval <= 3600:
        raise usage(f"--metrics-interval {args.metrics_interval} must be between 0.5 and 3600 seconds")
    config = load_command_config(args.command_config)
    timeout = int(config.get("request.timeout.ms", "10000"))
    return ConsoleSettings(check_bootstrap(args.bootstrap_server), config.security,
                           config.get("client.id", "kavka-console"), timeout,
                           tuple(check_url(u) for u in args.metrics_url), args.metrics_interval)


def run(args: argparse.Namespace) -> int:
    try:
        settings = settings_from(args)
    except CliError as e:
        print(f"Error: {e}", file=sys.stderr)
        return e.exit_code
    try:
        import uvicorn

        from kavka.console.app import build_app
    except ImportError as e:
        print(f"Error: the console needs its extra: pip install 'kavka[console]' ({e})", file=sys.stderr)
        return EXIT_USAGE
    app = build_app(settings)
    # Bind first, so that --port 0 can print the port it got and a port in
    # use is one line naming it.
    try:
        sock = socket.create_server((args.host, args.port), reuse_port=False)
    except OSError as e:
        print(f"Error: cannot listen on {args.host}:{args.port}: {e.strerror or e}", file=sys.stderr)
        return 1
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    print(f"Kavka console on http://{args.host}:{port}/ (cluster {settings.bootstrap})", flush=True)
    try:
        asyncio.run(server.serve(sockets=[sock]))
    except KeyboardInterrupt:
        return 130
    finally:
        sock.close()
    return 0 if server.started else 1
