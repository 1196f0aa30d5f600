"""Per-append cost of ``Log.append_as_leader`` in CPU instructions, a figure
that does not depend on the machine's load (unlike bench/storage.py's
wall-clock ratios).

Runs itself under ``valgrind --tool=callgrind`` twice per case, appending
``--small`` and then ``--large`` batches after a warm-up, and prints the
difference of the two instruction counts divided by the difference of the
append counts: the instructions one more append costs, with the interpreter's
start-up and the imports cancelled out. The reference, measured the same
way in the same run: ``os.write`` of the same bytes to one file (callgrind
counts user space only: the kernel's copy is not in it, so that column is
the interpreter's side of a bare call, and the ratio how many such calls
one append costs).

Cases: a 16 KiB batch of one record (bench/storage.py's small batch, the
size Java producers default to) and a 100 B record in its own batch (what
a ``linger.ms=0`` producer sends, bench/latency.py's case).

Run: ``.venv/bin/python bench/append_cost.py [--small 200] [--large 1200]``.
Needs valgrind (Debian's ``valgrind`` package).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

CASES = {"16 KiB batch": (16 * 1024, 16 * 1024), "100 B record": (100 + 64, 100 + 64)}


def make_batch(batch_bytes: int, record_bytes: int) -> bytes:
    from kavka.protocol.records.builder import build_batch
    from kavka.protocol.records.record import SimpleRecord

    count = max(1, batch_bytes // record_bytes)
    value = os.urandom(min(record_bytes, batch_bytes) - 64)
    return build_batch([SimpleRecord(b"key-%d" % i, value, 1_700_000_000_000 + i) for i in range(count)])


def child(side: str, case: str, n: int, directory: str) -> None:
    """Warm up, then ``n`` appends (run under callgrind by ``measure``)."""
    batch = make_batch(*CASES[case])
    if side == "write":
        fd = os.open(Path(directory) / "plain", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        for _ in range(20):
            os.write(fd, batch)
        for _ in range(n):
            os.write(fd, batch)
        os.close(fd)
        return
    from kavka.storage.log import Log
    from kavka.storage.log_config import LogConfig

    log = Log(Path(directory) / "t-0", LogConfig())
    for _ in range(20):  # the first append of an epoch writes leader-epoch-checkpoint; caches fill
        log.append_as_leader(batch, 1)
    for _ in range(n):
        log.append_as_leader(batch, 1)
    log.close()


def instructions(side: str, case: str, n: int) -> int:
    with tempfile.TemporaryDirectory(prefix="kavka-append-cost-") as d:
        out = Path(d) / "callgrind.out"
        proc = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, __file__,
             "--child", side, case, str(n), d],
            capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            sys.exit(f"callgrind run of {side} {case} x{n} failed:\n{proc.stderr[-2000:]}")
        m = re.search(r"Collected : (\d+)", proc.stderr)
        if m is None:
            sys.exit(f"no instruction count in callgrind's output:\n{proc.stderr[-2000:]}")
        return int(m.group(1))


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        side, case, n, directory = sys.argv[2:6]
        child(side, case, int(n), directory)
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--small", type=int, default=200, help="appends of the first run")
    parser.add_argument("--large", type=int, default=1200, help="appends of the second run")
    args = parser.parse_args()
    if args.large <= args.small or args.small < 0:
        parser.error("--large must exceed --small (and --small be at least 0)")
    if shutil.which("valgrind") is None:
        sys.exit("valgrind is not installed (Debian: apt-get install valgrind)")
    print(f"instructions per append (callgrind; ({args.large} - {args.small}) appends; load-independent)")
    print(f"{'case':<14} {'append_as_leader':>17} {'os.write':>10} {'ratio':>7}")
    for case in CASES:
        per = {}
        for side in ("log", "write"):
            per[side] = (instructions(side, case, args.large) - instructions(side, case, args.small)) \
                / (args.large - args.small)
        print(f"{case:<14} {per['log']:17,.0f} {per['write']:10,.0f} {per['log'] / per['write']:6.1f}x")


if __name__ == "__main__":
    main()
