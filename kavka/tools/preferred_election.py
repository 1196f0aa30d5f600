"""``kavka preferred-replica-election``: make each partition's preferred
replica (the first of its assigned replicas) its leader again (seed 000
§Preferred Replica Leader Election Tool; kafka-preferred-replica-election.sh).

The tool sends ElectLeaders (type 0, preferred) to the controller for the
partitions of ``--path-to-json-file`` — ``{"partitions":[{"topic":"t",
"partition":0}]}`` — or for every partition when no file is given. The
controller elects the preferred replica only when it is alive and in the
ISR (seed 000 §原理 3), so no committed message is lost.

With ``--zookeeper`` instead the tool does what the seed's does (原理 1):
it creates ``/admin/preferred_replica_election`` with the partitions (all
partitions of all topics when no file is given) and exits; the controller
elects and deletes the znode. It refuses while an earlier one is pending.

Output: one line per partition — elected, already led by its preferred
replica, or failed with the error. Exit codes: 0 when every partition is
led by its preferred replica, 1 when any election failed, 2 bad input.
Runs in a command-line process.
"""

from __future__ import annotations

import argparse
import json

from kavka.common.errors import ErrorCode
from kavka.protocol.messages import ElectLeadersRequest as Elect
from kavka.tools.client_cli import CliError, open_cluster, run_main, usage
from kavka.tools.controller_calls import controller_request, partition_codes
from kavka.tools.reassign_partitions import add_connection_arguments, command_config
from kavka.tools.zk_admin import ZkAdmin

DESCRIPTION = ("Move leadership back to each partition's preferred replica (the options and JSON of "
               "kafka-preferred-replica-election.sh).")
PREFERRED = 0
MAX_FILE_BYTES = 64 << 20


class ElectionFileError(ValueError):
    """The --path-to-json-file document is not valid."""


def parse_partitions(text: str) -> tuple[tuple[str, int], ...]:
    """``{"partitions":[{"topic":"t","partition":0}]}`` -> ((t, 0),), in
    document order; duplicates and malformed entries are refused."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise ElectionFileError(f"the election JSON is not valid JSON: {e}") from None
    entries = doc.get("partitions") if isinstance(doc, dict) else None
    if not isinstance(entries, list) or not entries:
        raise ElectionFileError('the election JSON needs a non-empty "partitions" list '
                                '(leave out --path-to-json-file to elect for every partition)')
    out: list[tuple[str, int]] = []
    for i, entry in enumerate(entries):
        topic = entry.get("topic") if isinstance(entry, dict) else None
        partition = entry.get("partition") if isinstance(entry, dict) else None
        if not isinstance(topic, str) or not topic:
            raise ElectionFileError(f"partitions[{i}].topic must be a non-empty topic name, got {topic!r}")
        if isinstance(partition, bool) or not isinstance(partition, int) or not 0 <= partition < 1 << 31:
            raise ElectionFileError(f"partitions[{i}].partition must be a partition number, got {partition!r}")
        if (topic, partition) in out:
            raise ElectionFileError(f"partition {topic}-{partition} appears more than once in the election JSON")
        out.append((topic, partition))
    return tuple(out)


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_connection_arguments(p)
    p.add_argument("--path-to-json-file", metavar="FILE",
                   help='the partitions to elect for: {"partitions":[{"topic":"t","partition":0}]} '
                        "(default: every partition)")
    p.add_argument("--timeout-ms", type=int, default=30_000,
                   help="how long the election may take before it fails (default 30000)")


def run(args: argparse.Namespace) -> int:
    async def main() -> int:
        if args.timeout_ms <= 0:
            raise usage(f"--timeout-ms must be positive, got {args.timeout_ms}")
        properties = command_config(args)
        wanted = None
        if args.path_to_json_file is not None:
            try:
                # Blocking is harmless: nothing else runs on this command's loop yet.
                with open(args.path_to_json_file, encoding="utf-8") as f:  # noqa: ASYNC230
                    text = f.read(MAX_FILE_BYTES + 1)
            except OSError as e:
                raise usage(f"--path-to-json-file: cannot read {args.path_to_json_file}: {e.strerror or e}") from None
            if len(text) > MAX_FILE_BYTES:
                raise usage(f"--path-to-json-file: {args.path_to_json_file} is larger than {MAX_FILE_BYTES} bytes")
            try:
                wanted = parse_partitions(text)
            except ElectionFileError as e:
                raise usage(str(e)) from None
        if args.zookeeper:
            with ZkAdmin(args.zookeeper) as zk:
                return _elect_zk(zk, wanted)
        cluster = await open_cluster(args.bootstrap_server, request_timeout_ms=args.timeout_ms + 10_000,
                                     properties=properties)
        try:
            return await _elect(cluster, wanted, args.timeout_ms)
        finally:
            await cluster.close()
    return run_main(main)


async def _elect(cluster, wanted, timeout_ms: int) -> int:
    tps = None
    if wanted is not None:
        by_topic: dict[str, list[int]] = {}
        for t, p in wanted:
            by_topic.setdefault(t, []).append(p)
        tps = [Elect.TopicPartitions(topic=t, partitions=ps) for t, ps in by_topic.items()]
    body = Elect(election_type=PREFERRED, topic_partitions=tps, timeout_ms=timeout_ms)
    # The controller waits up to timeout_ms for its metadata to show the
    # new leaders; give the connection that long plus its own timeout.
    resp = await controller_request(cluster, body, 2 * timeout_ms, "ElectLeaders")
    codes = partition_codes((r.topic, p.partition_id, p.error_code, p.error_message)
                            for r in resp.replica_election_results for p in r.partition_result)
    failed = False
    for (topic, partition), (code, message) in sorted(codes.items()):
        name = f"{topic}-{partition}"
        if code is ErrorCode.NONE:
            print(f"Successfully elected the preferred replica as leader of partition {name}")
        elif code is ErrorCode.ELECTION_NOT_NEEDED:
            print(f"Partition {name} is already led by its preferred replica")
        else:
            failed = True
            print(f"Failed to elect the preferred replica of partition {name}: {code.name}: "
                  f"{message or code.message}")
    return 1 if failed else 0


def _elect_zk(zk: ZkAdmin, wanted) -> int:
    if wanted is None:
        wanted = tuple(sorted(zk.assignment(zk.topics())))
        if not wanted:
            raise CliError("the cluster has no partitions")
    names = ",".join(f"{t}-{p}" for t, p in wanted)
    zk.create_preferred_election(wanted)
    print(f"Created preferred replica election path with {names}")
    print(f"Successfully started preferred replica election for partitions {names}")
    return 0
