"""What one state-change line costs the event loop: a partition's line as
``Partition.make_leader`` writes it, to a file handler with the broker's
format, under the broker's logging setup (``kavka.server.main``: records
gather no caller, thread or process) against Python's defaults, the two
alternating round by round (a failover writes one such line per partition,
tens of thousands at 10,000 partitions).

    .venv/bin/python bench/log_lines.py [--lines 20000] [--rounds 5]

Prints the best microseconds per line of each side and the ratio.
"""

from __future__ import annotations

import argparse
import logging
import tempfile
import time
from pathlib import Path

KNOBS = ("_srcfile", "logThreads", "logProcesses", "logMultiprocessing")
FORMAT = "%(asctime)s %(levelname)s [%(name)s] %(message)s"  # kavka.server.main's


def per_line_us(logger: logging.Logger, lines: int) -> float:
    started = time.perf_counter()
    for _ in range(lines):
        logger.info("broker %d leads %s: epoch %d, isr %s, replicas %s, zk version %d, hw %d, leo %d",
                    1, "failover-0001-17", 3, [1, 2], [1, 2, 0], 5, 10, 10)
    return (time.perf_counter() - started) / lines * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lines", type=int, default=20_000, help="lines per round (default 20,000)")
    ap.add_argument("--rounds", type=int, default=5, help="rounds per side, alternating (default 5)")
    args = ap.parse_args()
    defaults = {k: getattr(logging, k) for k in KNOBS}
    broker = {"_srcfile": None, "logThreads": False, "logProcesses": False, "logMultiprocessing": False}
    with tempfile.TemporaryDirectory(prefix="kavka-log-lines-") as d:
        logger = logging.getLogger("bench.state.change")
        logger.propagate = False
        logger.setLevel(logging.INFO)
        handler = logging.FileHandler(Path(d) / "state-change.log")
        handler.setFormatter(logging.Formatter(FORMAT))
        logger.addHandler(handler)
        best = {"python defaults": float("inf"), "broker setup": float("inf")}
        try:
            for r in range(args.rounds):
                for side, knobs in (("python defaults", defaults), ("broker setup", broker)):
                    for k, v in knobs.items():
                        setattr(logging, k, v)
                    best[side] = min(best[side], per_line_us(logger, args.lines))
                print(f"round {r + 1}/{args.rounds}: " + ", ".join(f"{s} {v:.1f} us" for s, v in best.items()))
        finally:
            for k, v in defaults.items():
                setattr(logging, k, v)
            handler.close()
    ref, new = best["python defaults"], best["broker setup"]
    print(f"\none state-change line, best of {args.rounds} rounds of {args.lines:,}: python defaults {ref:.1f} us, "
          f"broker setup {new:.1f} us ({new / ref:.2f}x)")


if __name__ == "__main__":
    main()
