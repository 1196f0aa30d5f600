"""A size-capped tmpfs for tests that need a really full disk (ENOSPC from
the kernel, not an injected error): storage tests and the KIP-112 cluster
tests mount one as a log directory."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


@contextlib.contextmanager
def capped_tmpfs(mnt: Path, size_bytes: int) -> Iterator[Path]:
    """A tmpfs of ``size_bytes`` mounted at ``mnt``, unmounted afterwards;
    skips the test, saying why, where it cannot be mounted (not root, no
    mount rights)."""
    mnt.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        pytest.skip("mounting a size-capped tmpfs needs root (mount -t tmpfs)")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_bytes}", "tmpfs", str(mnt)], capture_output=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.decode().strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)
