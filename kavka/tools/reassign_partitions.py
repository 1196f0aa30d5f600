"""``kavka reassign-partitions``: move partition replicas between brokers
(seed 000 §Kafka Reassign Partitions Tool; kafka-reassign-partitions.sh).

Modes (exactly one):

- ``--generate --topics-to-move-json-file F --broker-list 4,5,6``: print the
  topics' current assignment and a proposed plan placing them on those
  brokers (the placement of new topics, ``kavka.controller.assignment``:
  rack-aware when the brokers have a ``broker.rack``, refused when only
  some have one unless ``--disable-rack-aware``, which ignores the racks;
  each topic keeps its replication factor). Nothing is changed.
- ``--execute --reassignment-json-file F``: print the current assignment of
  the plan's partitions (save it to roll back), then submit the plan with
  AlterPartitionReassignments; the controller runs seed 000 §Partition 重新分配
  steps 1-11 and the tool returns once it accepted the plan. A plan
  touching partitions already being moved is refused unless
  ``--additional``.
- ``--verify --reassignment-json-file F``: per partition, ``completed
  successfully`` (replicas equal the plan's, in order), ``is still in
  progress`` (ListPartitionReassignments lists it) or ``failed``.
- ``--cancel --reassignment-json-file F``: cancel the plan's pending moves
  (AlterPartitionReassignments with null replicas, KIP-455).

With ``--zookeeper`` instead of ``--bootstrap-server`` the tool works as the
seed's does: it reads assignments from ZooKeeper and --execute creates
``/admin/reassign_partitions`` for the controller (``kavka.tools.zk_admin``);
--verify reads that znode for moves in progress; --cancel and --additional
need the API.

JSON formats: ``kavka.tools.reassign_plan``. Exit codes: 0 success (verify:
nothing failed), 1 a partition was refused or failed, 2 bad input. Runs in
a command-line process.
"""

from __future__ import annotations

import argparse
import random

from kavka.client.cluster import Cluster
from kavka.common.errors import ErrorCode
from kavka.protocol.messages import AlterPartitionReassignmentsRequest as Alter
from kavka.protocol.messages import ListPartitionReassignmentsRequest as ListReq
from kavka.tools import reassign_plan as plan
from kavka.tools.client_cli import (
    CliError,
    CommandConfig,
    add_command_config_argument,
    load_command_config,
    open_cluster,
    run_main,
    usage,
)
from kavka.tools.controller_calls import Assignment, controller_request, current_assignment, partition_codes
from kavka.tools.zk_admin import ZkAdmin

DESCRIPTION = ("Generate, execute, verify or cancel a partition reassignment plan (the options, JSON "
               "and output of kafka-reassign-partitions.sh).")
MAX_PLAN_FILE_BYTES = 64 << 20  # a plan for 100k partitions is a few MB; more is a mistake


def add_connection_arguments(p: argparse.ArgumentParser) -> None:
    """--bootstrap-server (the Kafka APIs) or --zookeeper (the seed's znodes)."""
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--bootstrap-server", metavar="HOST:PORT[,HOST:PORT...]",
                       help="brokers to bootstrap from, e.g. 127.0.0.1:9092 (requests go to the controller)")
    where.add_argument("--zookeeper", metavar="HOST:PORT[/CHROOT]",
                       help="the cluster's ZooKeeper: write the request znode for the controller instead")
    add_command_config_argument(p)


def command_config(args: argparse.Namespace) -> CommandConfig:
    """The --command-config of a command that takes --bootstrap-server or
    --zookeeper: client settings apply to the brokers only."""
    if args.zookeeper and args.command_config:
        raise usage("--command-config gives client settings for --bootstrap-server; with --zookeeper it does not "
                    "apply")
    return load_command_config(args.command_config)


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_connection_arguments(p)
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument("--generate", action="store_true",
                      help="propose a plan moving the topics of --topics-to-move-json-file to --broker-list")
    mode.add_argument("--execute", action="store_true", help="start the plan of --reassignment-json-file")
    mode.add_argument("--verify", action="store_true",
                      help="report whether each move of --reassignment-json-file completed")
    mode.add_argument("--cancel", action="store_true",
                      help="cancel the pending moves of --reassignment-json-file")
    p.add_argument("--topics-to-move-json-file", metavar="FILE",
                   help='generate: {"topics":[{"topic":"t"}],"version":1}')
    p.add_argument("--broker-list", metavar="ID,ID,...", help="generate: the brokers to place replicas on")
    p.add_argument("--disable-rack-aware", action="store_true",
                   help="generate: ignore the brokers' racks (broker.rack) when placing replicas")
    p.add_argument("--reassignment-json-file", metavar="FILE",
                   help='execute/verify/cancel: {"version":1,"partitions":[{"topic":"t","partition":0,'
                        '"replicas":[4,5,6]}]}')
    p.add_argument("--additional", action="store_true",
                   help="execute even though other reassignments are in progress")
    p.add_argument("--timeout-ms", type=int, default=30_000,
                   help="how long a request may retry before it fails (default 30000)")


def _read(path: str | None, option: str) -> str:
    if not path:
        raise usage(f"{option} is required for this mode")
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read(MAX_PLAN_FILE_BYTES + 1)
    except OSError as e:
        raise usage(f"{option}: cannot read {path}: {e.strerror or e}") from None
    if len(text) > MAX_PLAN_FILE_BYTES:
        raise usage(f"{option}: {path} is larger than {MAX_PLAN_FILE_BYTES} bytes")
    return text


def _check(args: argparse.Namespace) -> None:
    if args.timeout_ms <= 0:
        raise usage(f"--timeout-ms must be positive, got {args.timeout_ms}")
    if args.generate:
        if args.reassignment_json_file or args.additional:
            raise usage("--generate takes --topics-to-move-json-file, --broker-list and --disable-rack-aware only")
        if not args.broker_list:
            raise usage("--generate needs --broker-list")
    else:
        if args.topics_to_move_json_file or args.broker_list or args.disable_rack_aware:
            raise usage("--topics-to-move-json-file, --broker-list and --disable-rack-aware belong to --generate")
        if args.additional and not args.execute:
            raise usage("--additional belongs to --execute")
        if args.zookeeper and (args.cancel or args.additional):
            raise usage("--cancel and --additional need --bootstrap-server (the ZooKeeper path cannot replace "
                        "or cancel a running reassignment)")


def run(args: argparse.Namespace) -> int:
    async def main() -> int:
        _check(args)
        properties = command_config(args)
        try:
            if args.generate:
                topics = plan.parse_topics_to_move(_read(args.topics_to_move_json_file, "--topics-to-move-json-file"))
                brokers = plan.parse_broker_list(args.broker_list)
            else:
                moves = plan.parse_reassignment(_read(args.reassignment_json_file, "--reassignment-json-file"))
        except plan.PlanError as e:
            raise usage(str(e)) from None
        if args.zookeeper:
            with ZkAdmin(args.zookeeper) as zk:
                if args.generate:
                    return _generate(zk.assignment(topics), zk.broker_racks(), topics, brokers,
                                     args.disable_rack_aware)
                if args.execute:
                    return _execute_zk(zk, moves)
                return _verify(moves, zk.assignment({m.topic for m in moves}, missing_ok=True),
                               set(zk.pending_reassignment()))
        cluster = await open_cluster(args.bootstrap_server, request_timeout_ms=args.timeout_ms,
                                     properties=properties)
        try:
            if args.generate:
                assignment = await current_assignment(cluster, topics)
                racks = {b.node_id: b.rack for b in cluster.metadata.brokers.values()}
                return _generate(assignment, racks, topics, brokers, args.disable_rack_aware)
            if args.execute:
                return await _execute(cluster, moves, args)
            if args.verify:
                ongoing = await _ongoing(cluster, moves, args.timeout_ms)
                return _verify(moves, await _replicas(cluster, moves), ongoing)
            return await _cancel(cluster, moves, args.timeout_ms)
        finally:
            await cluster.close()
    return run_main(main)


def _generate(assignment: Assignment, live: dict[int, str | None], topics: tuple[str, ...],
              brokers: tuple[int, ...], disable_rack_aware: bool) -> int:
    """``live``: each live broker's rack."""
    missing = sorted(set(brokers) - set(live))
    if missing:
        raise CliError(f"brokers {missing} of --broker-list are not in the cluster (live brokers: {sorted(live)})")
    racks = None if disable_rack_aware else {b: live[b] for b in brokers}
    try:
        proposed = plan.generate(assignment, topics, brokers, random.Random(), racks)
    except plan.PlanError as e:
        raise CliError(str(e)) from None
    print("Current partition replica assignment")
    print(plan.format_plan(plan.current_moves(assignment, sorted(assignment))))
    print()
    print("Proposed partition reassignment configuration")
    print(plan.format_plan(proposed))
    return 0


async def _ongoing(cluster: Cluster, moves, timeout_ms: int) -> set[tuple[str, int]]:
    """Partitions of ``moves``' topics the controller is moving now."""
    by_topic: dict[str, list[int]] = {}
    for m in moves:
        by_topic.setdefault(m.topic, []).append(m.partition)
    body = ListReq(timeout_ms=timeout_ms,
                   topics=[ListReq.Topics(name=t, partition_indexes=ps) for t, ps in sorted(by_topic.items())])
    resp = await controller_request(cluster, body, timeout_ms, "ListPartitionReassignments")
    return {(t.name, p.partition_index) for t in resp.topics for p in t.partitions}


async def _alter(cluster: Cluster, moves, timeout_ms: int, cancel: bool) -> dict:
    by_topic: dict[str, list] = {}
    for m in moves:
        by_topic.setdefault(m.topic, []).append(
            Alter.Topics.Partitions(partition_index=m.partition, replicas=None if cancel else list(m.replicas)))
    body = Alter(timeout_ms=timeout_ms, topics=[Alter.Topics(name=t, partitions=ps) for t, ps in by_topic.items()])
    resp = await controller_request(cluster, body, timeout_ms, "AlterPartitionReassignments")
    return partition_codes((t.name, p.partition_index, p.error_code, p.error_message)
                           for t in resp.responses for p in t.partitions)


def _report_failures(codes: dict, verb: str) -> bool:
    failed = {k: v for k, v in codes.items() if v[0] is not ErrorCode.NONE}
    for (topic, partition), (code, message) in sorted(failed.items()):
        print(f"Failed to {verb} the reassignment of partition {topic}-{partition}: {code.name}: "
              f"{message or code.message}")
    return bool(failed)


async def _execute(cluster: Cluster, moves, args: argparse.Namespace) -> int:
    assignment = await current_assignment(cluster, {m.topic for m in moves})
    unknown = [m.name for m in moves if (m.topic, m.partition) not in assignment]
    if unknown:
        raise CliError(f"partitions {', '.join(unknown)} do not exist")
    ongoing = await _ongoing(cluster, moves, args.timeout_ms)
    if ongoing and not args.additional:
        names = ", ".join(f"{t}-{p}" for t, p in sorted(ongoing))
        raise CliError(f"a reassignment is already in progress for {names}; wait for it (--verify), "
                       f"cancel it (--cancel) or pass --additional to replace it")
    _print_rollback(assignment, moves)
    codes = await _alter(cluster, moves, args.timeout_ms, cancel=False)
    if _report_failures(codes, "start"):
        return 1
    print("Successfully started partition reassignments for "
          + ",".join(m.name for m in sorted(moves, key=lambda m: (m.topic, m.partition))))
    return 0


def _print_rollback(assignment: Assignment, moves) -> None:
    print("Current partition replica assignment")
    print()
    print(plan.format_plan(plan.current_moves(assignment, [(m.topic, m.partition) for m in moves])))
    print()
    print("Save this to use as the --reassignment-json-file option during rollback")


def _execute_zk(zk: ZkAdmin, moves) -> int:
    """Seed 000 原理 1: the plan becomes /admin/reassign_partitions."""
    assignment = zk.assignment({m.topic for m in moves})
    unknown = [m.name for m in moves if (m.topic, m.partition) not in assignment]
    if unknown:
        raise CliError(f"partitions {', '.join(unknown)} do not exist")
    dead = sorted({r for m in moves for r in m.replicas} - zk.live_brokers())
    if dead:
        raise CliError(f"the plan names brokers {dead}, which are not registered in ZooKeeper")
    _print_rollback(assignment, moves)
    zk.create_reassignment((m.topic, m.partition, m.replicas) for m in moves)
    print("Successfully started partition reassignments for "
          + ",".join(m.name for m in sorted(moves, key=lambda m: (m.topic, m.partition))))
    return 0


async def _replicas(cluster: Cluster, moves) -> Assignment:
    md = await cluster.refresh_metadata(sorted({m.topic for m in moves}))
    return {(t, p.partition): tuple(p.replicas) for t in {m.topic for m in moves} if t in md.topics
            for p in md.partitions_of(t)}


def _verify(moves, replicas_now: Assignment, ongoing: set[tuple[str, int]]) -> int:
    print("Status of partition reassignment:")
    failed = False
    for m in moves:
        replicas = replicas_now.get((m.topic, m.partition))
        status = plan.move_status(m, replicas, (m.topic, m.partition) in ongoing)
        line = f"Reassignment of partition {m.name} {status.value}"
        if status is plan.MoveStatus.FAILED:
            failed = True
            line += (": the partition does not exist" if replicas is None
                     else f": its replicas are {list(replicas)}, the plan asks for {list(m.replicas)}")
        print(line)
    return 1 if failed else 0


async def _cancel(cluster: Cluster, moves, timeout_ms: int) -> int:
    codes = await _alter(cluster, moves, timeout_ms, cancel=True)
    pending = {k: v for k, v in codes.items() if v[0] is not ErrorCode.NO_REASSIGNMENT_IN_PROGRESS}
    for (topic, partition), (code, _) in sorted(codes.items()):
        if code is ErrorCode.NO_REASSIGNMENT_IN_PROGRESS:
            print(f"No reassignment of partition {topic}-{partition} was in progress")
    if _report_failures(pending, "cancel"):
        return 1
    if pending:
        print("Successfully cancelled partition reassignments for "
              + ",".join(f"{t}-{p}" for t, p in sorted(pending)))
    return 0
