"""Where the libraries' own output goes while the demo runs.

librdkafka (the confluent-kafka clients in this process and in Spark's
Python workers) and the Spark JVM write their logs straight to file
descriptor 2, not through Python's ``sys.stderr``: during the leader kill
that is dozens of "Connect to ... failed" lines in the middle of the demo's
own output. Inside ``LibraryOutput(path)`` descriptor 2 is the log file, so
those lines, and those of every process started from then on (the JVM, its
workers), go there; ``sys.stderr`` is rebound to the terminal the demo was
started on, so the demo's own messages and progress bars stay where they
were. The file is kept after the demo and its summary names it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TextIO


class LibraryOutput:
    """A context manager: see the module docstring."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._saved_fd = -1
        self._saved_stderr: TextIO | None = None
        self._terminal: TextIO | None = None

    def __enter__(self) -> LibraryOutput:
        sys.stderr.flush()
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self._saved_fd = os.dup(2)
        try:
            os.dup2(fd, 2)
        finally:
            os.close(fd)
        self._saved_stderr = sys.stderr
        self._terminal = open(self._saved_fd, "w", buffering=1, errors="backslashreplace",  # noqa: SIM115 - closed in __exit__
                              closefd=False)
        sys.stderr = self._terminal
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._terminal is not None and self._saved_stderr is not None
        self._terminal.flush()
        sys.stderr = self._saved_stderr
        os.dup2(self._saved_fd, 2)
        os.close(self._saved_fd)
        self._terminal.close()
