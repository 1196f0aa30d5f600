"""Longer fuzzing of the wire codec than ``make test`` runs.

For a bounded time (``--seconds``, default 60) it cycles over every API,
side and version in the schema registry: draws a random valid message from
the schema (hypothesis), encodes it, then decodes many mutations of the
encoding (truncations, overwritten bytes, inserted huge lengths, random
bytes), whole request frames through ``decode_request`` and byte streams
through ``FrameDecoder``. Anything other than success or a ``DecodeError``
is a bug: it is printed with the API, version and the bytes (hex) that
caused it, and the exit status is 1. The largest memory peak of a single
decode (tracemalloc, sampled every --memory-every-th input) is reported
against the input size.

Run: ``.venv/bin/python bench/fuzz_protocol.py --seconds 60 [--seed N]``.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
import tracemalloc
from pathlib import Path

from hypothesis import HealthCheck, given, settings

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "protocol"))
import schema_strategies as ss  # noqa: E402
from kavka.protocol.codec import decode_body, encode_body, plan_for  # noqa: E402
from kavka.protocol.errors import DecodeError  # noqa: E402
from kavka.protocol.framing import FrameDecoder  # noqa: E402
from kavka.protocol.headers import RequestHeader, decode_request, encode_request  # noqa: E402

HUGE = [b"\x7f\xff\xff\xff", b"\x7f\xff", b"\xff\xff\xff\xff\x0f", b"\xff\xff\xff\xfe",
        b"\x80\x80\x80\x80\x80\x80", b"\x00\x00\x00\x00"]


def mutations(data: bytes, rng: random.Random, count: int):
    for _ in range(count):
        kind = rng.randrange(5)
        pos = rng.randrange(len(data) + 1)
        if kind == 0:
            yield data[:pos]
        elif kind == 1:
            blob = rng.choice(HUGE)
            yield data[:pos] + blob + data[pos + len(blob):]
        elif kind == 2:
            yield data[:pos] + rng.choice(HUGE) + data[pos:]
        elif kind == 3:
            flips = bytearray(data)
            for _ in range(rng.randrange(1, 4)):
                if flips:
                    flips[rng.randrange(len(flips))] = rng.randrange(256)
            yield bytes(flips)
        else:
            yield rng.randbytes(rng.randrange(64))


class Stats:
    def __init__(self) -> None:
        self.inputs = self.ok = self.rejected = 0
        self.failures: list[str] = []
        self.peak_ratio = 0.0
        self.peak_bytes = 0


def fuzz_case(case, stats: Stats, rng: random.Random, deadline: float, per_message: int, memory_every: int):
    key, side, version = case

    @settings(max_examples=3, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(ss.message(key, side, version))
    def run(msg):
        if time.monotonic() > deadline:
            return
        body = encode_body(msg, version)
        inputs = list(mutations(body, rng, per_message))
        if side == "request":
            frame = encode_request(RequestHeader(key, version, 1, "fuzz"), msg)
            inputs += [("frame", m) for m in mutations(frame, rng, per_message // 4)]
        for item in inputs:
            stats.inputs += 1
            as_frame = isinstance(item, tuple)
            data = item[1] if as_frame else item
            sample = stats.inputs % memory_every == 0
            if sample:
                tracemalloc.start()
            try:
                if as_frame:
                    decode_request(data)
                else:
                    decode_body(key, side, version, memoryview(data))
                stats.ok += 1
            except DecodeError:
                stats.rejected += 1
            except Exception as e:  # a bug: report it, keep going
                stats.failures.append(f"{ss.case_id(case)} {'frame' if as_frame else 'body'}: "
                                      f"{type(e).__name__}: {e}\n    input: {data.hex()}")
            finally:
                if sample:
                    _, peak = tracemalloc.get_traced_memory()
                    tracemalloc.stop()
                    stats.peak_bytes = max(stats.peak_bytes, peak)
                    if len(data) >= 256:  # below that, fixed overheads dominate
                        stats.peak_ratio = max(stats.peak_ratio, peak / len(data))

    run()


def fuzz_frames(stats: Stats, rng: random.Random, rounds: int) -> None:
    for _ in range(rounds):
        dec = FrameDecoder(max_frame_size=rng.choice([0, 16, 1024]))
        try:
            for _ in range(rng.randrange(1, 8)):
                dec.feed(rng.randbytes(rng.randrange(32)))
            stats.ok += 1
        except DecodeError:
            stats.rejected += 1
        except Exception as e:
            stats.failures.append(f"FrameDecoder: {type(e).__name__}: {e}")
        stats.inputs += 1
        if dec.buffered > dec.max_frame_size + 4 + 32:
            stats.failures.append(f"FrameDecoder buffered {dec.buffered} > max {dec.max_frame_size}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=60.0, help="time budget (default 60)")
    parser.add_argument("--seed", type=int, default=None, help="mutation seed (default: random)")
    parser.add_argument("--per-message", type=int, default=40, help="mutations per drawn message")
    parser.add_argument("--memory-every", type=int, default=25, help="trace memory of every Nth input")
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    deadline = time.monotonic() + args.seconds
    stats = Stats()
    cases = ss.all_versions()
    for case in cases:  # compile every plan first: only decoding is traced
        plan_for(*case)
    rounds = 0
    while time.monotonic() < deadline:
        rng.shuffle(cases)
        for case in cases:
            if time.monotonic() > deadline:
                break
            fuzz_case(case, stats, rng, deadline, args.per_message, args.memory_every)
        fuzz_frames(stats, rng, 200)
        rounds += 1
    print(f"seed {seed}: {stats.inputs} inputs over {len(cases)} API/side/version cases, "
          f"{rounds} round(s) in {args.seconds:.0f} s")
    print(f"  decoded {stats.ok}, rejected with DecodeError {stats.rejected}, other exceptions "
          f"{len(stats.failures)}")
    print(f"  largest traced decode peak {stats.peak_bytes} bytes "
          f"(at most {stats.peak_ratio:.1f}x the input for inputs >= 256 bytes)")
    for f in stats.failures[:20]:
        print("FAIL", f)
    return 1 if stats.failures else 0


if __name__ == "__main__":
    sys.exit(main())
