"""Building librdkafka's test runner for the compatibility suite
(``python -m kavka.tools.compat``).

The source is librdkafka's release tarball, by default
``../shared/compat/librdkafka-src.tar.gz`` next to the repository, or
``LIBRDKAFKA_SRC`` (a tarball or an unpacked source tree). It is built
offline (``./configure --disable-curl --disable-sasl --disable-optimization``, ``make libs``,
``make -C tests build``) into ``.cache/librdkafka-<key>`` in the repository,
``<key>`` being the start of the SHA-256 of the tarball (or, for a tree, of
its path and its ``src/rdkafka.h``) and of the build options, so a second run reuses the build and a new
tarball gets a new directory. A ``.built`` stamp marks a finished build; an
exclusive lock on the cache directory lets parallel callers (pytest workers)
wait for one build rather than race.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import tarfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_TARBALL = REPO_ROOT.parent / "shared" / "compat" / "librdkafka-src.tar.gz"
CACHE_ROOT = REPO_ROOT / ".cache"
# --disable-sasl leaves out Cyrus libsasl2 only (GSSAPI/Kerberos, which no
# test here uses): PLAIN is built in, and SCRAM and OAUTHBEARER come with
# OpenSSL (Debian's libssl-dev), so the build's BUILT_WITH still has SSL,
# SASL_SCRAM and SASL_OAUTHBEARER for the suite's SSL and SASL tests. curl
# (OIDC token fetching) would download at build time and stays off.
# --disable-optimization (-O0): the runner's time goes to waiting on
# brokers, not to its own CPU, and the build without the optimiser is much
# quicker, which every clean clone's `make test` pays.
CONFIGURE_ARGS = ("--disable-curl", "--disable-sasl", "--disable-optimization")


class SourceMissing(RuntimeError):
    """No librdkafka source where it was looked for; the message says where to put it."""


class BuildFailed(RuntimeError):
    """A build step failed; the message names the step and its log."""


@dataclass(frozen=True, slots=True)
class Runner:
    """A built librdkafka tree: ``tests/test-runner`` and its libraries."""

    root: Path
    build_seconds: float  # 0.0 when the cached build was reused

    @property
    def tests_dir(self) -> Path:
        return self.root / "tests"

    @property
    def runner(self) -> Path:
        return self.tests_dir / "test-runner"

    @property
    def library_path(self) -> str:
        return f"{self.root / 'src'}:{self.root / 'src-cpp'}"

    def built_with(self) -> frozenset[str] | None:
        """The features configure enabled (``BUILT_WITH`` in
        ``Makefile.config``: SSL, SASL_SCRAM ...); None when it is not there."""
        return built_with(self.root / "Makefile.config")


def built_with(makefile_config: Path) -> frozenset[str] | None:
    """The ``BUILT_WITH=`` line of a configured librdkafka's ``Makefile.config``."""
    try:
        text = makefile_config.read_text(errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() == "BUILT_WITH":
            return frozenset(value.split())
    return None


def locate_source(given: str | None = None) -> Path:
    """The tarball or tree to build: ``given``, else ``LIBRDKAFKA_SRC``, else
    the shared tarball. Raises SourceMissing naming the places looked at."""
    candidate = given or os.environ.get("LIBRDKAFKA_SRC") or str(DEFAULT_TARBALL)
    path = Path(candidate).expanduser().resolve()
    if path.is_file() or (path.is_dir() and (path / "configure").is_file() and (path / "tests").is_dir()):
        return path
    raise SourceMissing(
        f"librdkafka source not found at {path}: put librdkafka's source tarball at {DEFAULT_TARBALL} "
        "(librdkafka v2.15, the one in the shared compat directory), or point LIBRDKAFKA_SRC= "
        "(or --src) at a librdkafka source tarball or unpacked tree")


# Debian's rapidjson-dev: configure enables the tests that need it (0053,
# 0098, 0101, 0110) only when present, so its presence is part of the key.
RAPIDJSON_HEADER = Path("/usr/include/rapidjson/rapidjson.h")


# Debian's libssl-dev: without it configure builds no SSL (nor SCRAM,
# OAUTHBEARER) and the suite's SSL and SASL tests are skipped; a build
# without it gets a key of its own (the key of a build with it is the one
# it always had, so existing caches stay valid).
OPENSSL_HEADER = Path("/usr/include/openssl/ssl.h")


def cache_key(source: Path) -> str:
    h = hashlib.sha256()
    h.update(f"{CONFIGURE_ARGS} rapidjson={RAPIDJSON_HEADER.is_file()}".encode())
    if not OPENSSL_HEADER.is_file():
        h.update(b" openssl=False")
    if source.is_file():
        with source.open("rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    else:
        h.update(str(source).encode())
        h.update((source / "src" / "rdkafka.h").read_bytes())
    return h.hexdigest()[:12]


def _version(tree: Path) -> str:
    for line in (tree / "src" / "rdkafka.h").read_text(errors="replace").splitlines():
        if line.startswith("#define RD_KAFKA_VERSION "):
            v = int(line.split()[2], 16)
            return f"{v >> 24}.{(v >> 16) & 0xFF}.{(v >> 8) & 0xFF}"
    return "unknown"


def _unpack(source: Path, dest: Path) -> None:
    """The source tree into ``dest`` (the tarball's single top directory stripped)."""
    staging = dest.with_name(dest.name + ".unpack")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    if source.is_file():
        with tarfile.open(source) as tar:
            tar.extractall(staging, filter="data")
        tops = list(staging.iterdir())
        top = tops[0] if len(tops) == 1 and tops[0].is_dir() else staging
    else:
        top = staging / "tree"
        shutil.copytree(source, top, symlinks=True)
    shutil.rmtree(dest, ignore_errors=True)
    top.rename(dest)
    shutil.rmtree(staging, ignore_errors=True)


def _step(cmd: list[str], cwd: Path, log: Path, say: Callable[[str], None]) -> None:
    say(f"build: {' '.join(cmd)} (log {log})")
    with log.open("w") as out:
        rc = subprocess.call(cmd, cwd=cwd, stdout=out, stderr=subprocess.STDOUT)
    if rc != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-15:])
        raise BuildFailed(f"'{' '.join(cmd)}' in {cwd} exited {rc}; see {log}:\n{tail}")


def build(source: Path, cache_root: Path = CACHE_ROOT, jobs: int = 2,
          say: Callable[[str], None] = lambda m: None) -> Runner:
    """The test runner built from ``source`` (cached). Raises BuildFailed."""
    cache_root.mkdir(parents=True, exist_ok=True)
    key = cache_key(source)
    with (cache_root / f"librdkafka-{key}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        root = cache_root / f"librdkafka-{key}"
        stamp = root / ".built"
        if stamp.is_file() and (root / "tests" / "test-runner").is_file():
            return Runner(root, 0.0)
        start = time.monotonic()
        say(f"build: unpacking {source} into {root}")
        _unpack(source, root)
        logs = root / "build-logs"
        logs.mkdir()
        _step(["./configure", *CONFIGURE_ARGS], root, logs / "configure.log", say)
        _step(["make", f"-j{jobs}", "libs"], root, logs / "libs.log", say)
        _step(["make", f"-j{jobs}", "-C", "tests", "build"], root, logs / "tests.log", say)
        seconds = time.monotonic() - start
        stamp.write_text(f"librdkafka {_version(root)} from {source}\nbuild seconds {seconds:.0f}\n")
        say(f"build: librdkafka {_version(root)} built in {seconds:.0f} s")
        return Runner(root, seconds)
