"""What the console's browser tests share: Debian's headless chromium
driven by Playwright (never a downloaded browser), the console as its own
process (``kavka console --port 0``), and screenshots.

Screenshots go under the test's tmp dir and, for a person to look at after
``make test``, into ``.cache/console-screenshots``. Synchronous: the
test's thread.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
REPO = Path(__file__).resolve().parents[2]
SHOTS = REPO / ".cache" / "console-screenshots"


class ConsoleProcess:
    """``kavka console`` in a subprocess; ``url`` once it listens."""

    def __init__(self, bootstrap: str, *extra: str, log_dir: Path) -> None:
        self.log_path = log_dir / "console.log"
        self._log = open(self.log_path, "w")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "kavka.cli", "console", "--bootstrap-server", bootstrap, "--port", "0", *extra],
            stdout=subprocess.PIPE, stderr=self._log, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()  # the console prints its URL once it listens
        m = re.search(r"(http://\S+/)", line)
        if m is None:
            self.stop()
            raise AssertionError(f"kavka console did not start: {line!r}; log: {self.log_path.read_text()[-2000:]}")
        self.url = m.group(1).rstrip("/")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self._log.close()


class Browser:
    """One headless chromium with a fresh profile, one page."""

    def __init__(self, shots_dir: Path) -> None:
        from playwright.sync_api import sync_playwright

        self.shots_dir = shots_dir
        self.profile = tempfile.mkdtemp(prefix="kavka-chromium-")
        self._pw = sync_playwright().start()
        self.context = self._pw.chromium.launch_persistent_context(
            self.profile, executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True,
            viewport={"width": 1280, "height": 900})
        self.context.set_default_timeout(30_000)
        self.page = self.context.pages[0] if self.context.pages else self.context.new_page()

    def shot(self, name: str) -> Path:
        path = self.shots_dir / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=True)
        SHOTS.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, SHOTS / path.name)
        return path

    def close(self) -> None:
        try:
            self.context.close()
        finally:
            self._pw.stop()
            shutil.rmtree(self.profile, ignore_errors=True)


def wait_for(probe, timeout: float, what: str, interval: float = 0.25):
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)
