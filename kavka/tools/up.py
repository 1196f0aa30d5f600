"""``kavka up``: a local cluster in the foreground.

Starts a standalone ZooKeeper (Debian's package) — or uses
``--zookeeper HOST:PORT[/chroot]`` — and N broker processes, prints
``bootstrap: 127.0.0.1:P,...`` once every broker is registered (and
``metrics:`` with each broker's Prometheus endpoint), and stays in
the foreground; SIGINT or SIGTERM stops the brokers (clean shutdown) and
ZooKeeper. A broker that dies is reported, and the rest keep running.

``--secure``: a secured cluster (``kavka.tools.secure_cluster``): a CA and
certificates, an admin super user and a SCRAM user, SASL_SSL for clients and
between brokers, mutual TLS on a second listener, the ACL authorizer; it
prints the paths of a ready ``client.properties`` (librdkafka's keys, for
confluent-kafka, ``kcat -F`` and ``kavka ... --command-config``) and of
``admin.properties``. Those files hold passwords; keep the data dir private.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading

from kavka.common.broker_config import parse_overrides
from kavka.common.config import ConfigError
from kavka.tools.cluster import ClusterError, LocalCluster
from kavka.tools.zookeeper import ZooKeeperNotInstalled, ZooKeeperStartError

DESCRIPTION = ("Run a local Kavka cluster (ZooKeeper + N brokers) in the foreground; "
               "prints 'bootstrap: ...' when ready; Ctrl-C stops it cleanly.")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--brokers", type=int, default=3, help="number of broker processes (default 3)")
    p.add_argument("--data-dir", help="where brokers keep their logs and config (default: a new temp dir, removed on exit)")
    p.add_argument("--base-port", type=int, default=9092, help="broker i listens on base-port + i (default 9092; 0 = any free port)")
    p.add_argument("--zookeeper-port", type=int, default=None, help="port of the ZooKeeper started here (default: a free port)")
    p.add_argument("--zookeeper", help="use an existing ZooKeeper HOST:PORT[/chroot] instead of starting one")
    p.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                   help="a broker config applied to every broker (repeatable), e.g. --config num.partitions=6")
    p.add_argument("--racks", metavar="RACK,RACK,...",
                   help="broker i's broker.rack is the i-th name (one per broker), e.g. --racks r1,r2,r3")
    p.add_argument("--no-metrics", action="store_true",
                   help="no Prometheus endpoints (default: each broker serves /metrics on a free loopback port)")
    p.add_argument("--secure", action="store_true",
                   help="TLS and SASL (SCRAM-SHA-512) for clients and between brokers, ACLs on: generates a CA "
                        "and certificates, an admin and a client user, and writes client.properties "
                        "(mutual TLS on base-port + 100 + i)")


def run(args: argparse.Namespace) -> int:
    if args.brokers < 1:
        print("kavka up: --brokers must be at least 1", file=sys.stderr)
        return 2
    try:
        config = parse_overrides(args.config)
    except ConfigError as e:
        print(f"kavka up: {e}", file=sys.stderr)
        return 2
    racks = args.racks.split(",") if args.racks else None
    if racks is not None and (len(racks) != args.brokers or not all(r.strip() for r in racks)):
        print(f"kavka up: --racks names {len(racks)} rack(s) for {args.brokers} broker(s); give one non-empty "
              "name per broker", file=sys.stderr)
        return 2
    cluster = LocalCluster(args.brokers, args.data_dir, args.base_port, args.zookeeper,
                           args.zookeeper_port, config, secure=args.secure, metrics=not args.no_metrics,
                           racks=[r.strip() for r in racks] if racks is not None else None)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    try:
        cluster.start(progress=lambda msg: print(msg, flush=True))
    except (ClusterError, ZooKeeperNotInstalled, ZooKeeperStartError) as e:
        print(f"kavka up: {e}", file=sys.stderr)
        cluster.cleanup() if args.data_dir is None else cluster.stop()
        return 1
    print(f"bootstrap: {cluster.bootstrap}", flush=True)
    print(f"zookeeper: {cluster.zk_connect}", flush=True)
    print(f"data: {cluster.data_dir}", flush=True)
    if cluster.metrics_urls:
        print(f"metrics: {' '.join(cluster.metrics_urls)}", flush=True)
    if cluster.secure is not None:
        s = cluster.secure
        print(f"client.properties: {s.client_properties_path}", flush=True)
        print(f"admin.properties: {s.admin_properties_path}", flush=True)
        print(f"mtls bootstrap: {cluster.mtls_bootstrap} (client-mtls.properties: {s.mtls_properties_path})",
              flush=True)
        print(f"  e.g. kcat -b {cluster.bootstrap} -F {s.client_properties_path} -L", flush=True)
        print(f"       kavka topics --bootstrap-server {cluster.bootstrap} --command-config "
              f"{s.admin_properties_path} --list", flush=True)
    config_option = f" --command-config {cluster.secure.admin_properties_path}" if cluster.secure is not None else ""
    metrics_options = "".join(f" --metrics-url {u}" for u in cluster.metrics_urls)
    print(f"console: kavka console --bootstrap-server {cluster.bootstrap}{config_option}{metrics_options}",
          flush=True)
    reported: set[int] = set()
    try:
        while not stop.wait(0.5):
            for b in cluster.brokers.values():
                if b.process is not None and b.process.poll() is not None and b.broker_id not in reported:
                    reported.add(b.broker_id)
                    print(f"broker {b.broker_id} exited with code {b.process.returncode}; see {b.log_path}",
                          file=sys.stderr, flush=True)
    finally:
        print("stopping", flush=True)
        if args.data_dir is None:
            cluster.cleanup()
        else:
            cluster.stop()
    return 0
