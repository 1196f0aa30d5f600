"""Child process for the crash tests: opens a log (recovering it), appends
deterministic batches, and dies by SIGKILL — either in the middle of the
write of batch ``kill_at`` (after writing ``partial`` of its bytes) or when
the parent kills it at a random moment.

Usage: python crash_writer.py DIR CONFIG_JSON RECOVERY_POINT SEED COUNT KILL_AT PARTIAL

Prints ``appended <first offset> <index>`` after each acknowledged append
(flushed to the pipe), so the parent knows what was acknowledged.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sys

from kavka.protocol.records.builder import build_batch
from kavka.protocol.records.record import SimpleRecord

T0 = 1_700_000_000_000


def child_batch(seed: int, i: int) -> bytes:
    rng = random.Random(seed * 1_000_003 + i)
    count = rng.randint(1, 4)
    return build_batch(
        [SimpleRecord(b"c%d-%d" % (i, j), rng.randbytes(rng.randint(0, 150)), T0 + i) for j in range(count)]
    )


def main(argv: list[str]) -> None:
    from kavka.storage.log import Log
    from kavka.storage.log_config import LogConfig

    directory, config_json, recovery_point, seed, count, kill_at, partial = argv
    cfg = LogConfig.from_props(json.loads(config_json))
    log = Log(directory, cfg, recovery_point=int(recovery_point))
    kill_at, partial = int(kill_at), float(partial)
    real = os.pwritev

    def dying_pwritev(fd, buffers, offset):
        data = b"".join(bytes(b) for b in buffers)
        os.pwrite(fd, data[: int(len(data) * partial)], offset)
        os.kill(os.getpid(), signal.SIGKILL)

    for i in range(int(count)):
        if i == kill_at:
            os.pwritev = dying_pwritev
        info = log.append_as_leader(child_batch(int(seed), i), 9)
        os.pwritev = real
        sys.stdout.write(f"appended {info.first_offset} {i}\n")
        sys.stdout.flush()
    while True:  # wait for the parent's SIGKILL
        signal.pause()


if __name__ == "__main__":
    main(sys.argv[1:])
