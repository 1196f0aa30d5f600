"""Fixtures of the command-line tests: ``kavka`` runs ``python -m kavka
ARGS...`` as a real subprocess (bounded by a timeout) and returns the
CompletedProcess with text stdout/stderr."""

from __future__ import annotations

import subprocess
import sys

import pytest


def run_kavka(*args: str, input: str | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kavka", *args], input=input, capture_output=True,
                          text=True, timeout=timeout)


@pytest.fixture
def kavka():
    return run_kavka
