"""pipelines.library_output: what librdkafka and child processes write to
file descriptor 2 goes to the log file; the demo's own ``sys.stderr`` lines
stay on the stream the process was started with. Run in a child process
(pytest captures descriptor 2 of its own process)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

SCRIPT = textwrap.dedent("""
    import os, subprocess, sys, time
    from pathlib import Path
    from confluent_kafka import Producer
    from pipelines.library_output import LibraryOutput

    with LibraryOutput(Path(sys.argv[1])) as out:
        print("demo line", file=sys.stderr, flush=True)
        # librdkafka logs a refused connection straight to descriptor 2
        p = Producer({"bootstrap.servers": "127.0.0.1:9", "reconnect.backoff.ms": 10})
        p.poll(1.5)
        subprocess.run([sys.executable, "-c", "import os; os.write(2, b'child process line')"], check=True)
        del p
    print("after the block", file=sys.stderr, flush=True)
    os.write(2, b"descriptor 2 restored")
""")


def test_library_output_goes_to_the_file_and_the_demo_lines_stay(tmp_path: Path) -> None:
    log = tmp_path / "libraries.log"
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(log)], capture_output=True, text=True, timeout=60,
                          cwd=root)
    assert done.returncode == 0, done.stderr
    captured = log.read_text()
    assert "rdkafka" in captured and "127.0.0.1:9" in captured
    assert "child process line" in captured
    assert "demo line" in done.stderr and "after the block" in done.stderr
    assert "descriptor 2 restored" in done.stderr
    assert "rdkafka" not in done.stderr and "child process line" not in done.stderr
    assert "demo line" not in captured
