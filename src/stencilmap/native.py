"""Native code: the one module that runs the system's C and C++ compilers, caches what they build, and loads
or runs it. A leaf: it imports the standard library and ``errors`` only.

- **Building** (``library``, ``executable``): a ``Unit`` (files written to a private build folder, the
  compiler, its flags) is compiled once and cached under a key of everything that decides the bytes: the
  files, the flags, the compiler's identity (its path and ``--version``) and the CPU's feature flags (code may
  be built with ``-march=native``). An entry is built in a temporary folder beside it and renamed into place,
  so a concurrent process never sees half a file; its name ends with the SHA-256 of its bytes, which are
  hashed again before every load or run.
- **The cache** (``cache_dir``): ``$STENCILMAP_CACHE_DIR``, else ``$XDG_CACHE_HOME/stencilmap`` or
  ``~/.cache/stencilmap``. Its folders are created 0700; a folder or entry owned by another user or writable
  by group or others is refused (loading it would run whatever its writer put there). Clearing the cache costs
  only recompilation.
- **Running** (``run``): every child starts in a process group of its own and is registered while it runs.
  ``isolate`` runs it in a fresh scratch folder (removed after) and, where ``unshare`` allows, with no
  network.
- **Cleaning up** (``clean_up``): kills the registered children's process groups and removes the registered
  temporaries (``temporary_folder``); the command line's interrupt handler calls it, and so does ``atexit``.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import functools
import hashlib
import os
import shutil
import signal
import stat
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from stencilmap.errors import StencilmapError

#: Where the cache is, when set.
CACHE_ENV = "STENCILMAP_CACHE_DIR"
#: Part of every key: a change of how entries are built or named makes older entries unreachable.
_RECIPE = "stencilmap-native-1"
#: How long a signalled child's group has to exit (compilers delete their temporary files on SIGTERM)
#: before it is sent SIGKILL.
GRACE_S = 2.0
#: The prefix that runs a command in a new network namespace (no interface but a loopback that is down).
NO_NETWORK = ("--net", "--map-root-user", "--")


# ------------------------------------------------------------------------------------------- cleaning up


class _Registry:
    """The children running and the temporaries not yet removed (what an interrupt must clean up)."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.children: dict[int, subprocess.Popen[str]] = {}
        self.temporaries: set[Path] = set()
        self.closing = False

    def check_open(self) -> None:
        if self.closing:
            raise Closing


class Closing(BaseException):
    """Raised in a thread that asks for a child or a temporary, or whose child was killed, once ``clean_up``
    has begun: the process is ending (a BaseException, so that no error is reported for it)."""


def closing() -> bool:
    """Whether ``clean_up`` has begun (the process is ending: errors seen now are its consequences)."""
    return _REGISTRY.closing


_REGISTRY = _Registry()


def temporary_folder(prefix: str, parent: Path | None = None, suffix: str = "") -> Path:
    """A new private folder (``tempfile.mkdtemp``; in ``$TMPDIR`` without ``parent``), registered: it is
    removed by ``clean_up`` unless ``remove``d or ``release``d first."""
    with _REGISTRY.lock:
        _REGISTRY.check_open()
        path = Path(tempfile.mkdtemp(prefix=prefix, suffix=suffix, dir=parent))
        _REGISTRY.temporaries.add(path)
    return path


def temporary_file(prefix: str, parent: Path, suffix: str = "") -> Path:
    """A new empty private file (``tempfile.mkstemp``), registered as ``temporary_folder``'s folders are."""
    with _REGISTRY.lock:
        _REGISTRY.check_open()
        fd, name = tempfile.mkstemp(prefix=prefix, suffix=suffix, dir=parent)
        _REGISTRY.temporaries.add(Path(name))
    os.close(fd)
    return Path(name)


def release(path: Path) -> None:
    """Stop tracking ``path`` (it was renamed into place: it is no longer a temporary)."""
    with _REGISTRY.lock:
        _REGISTRY.temporaries.discard(path)


def remove(path: Path) -> None:
    """Remove a registered temporary now."""
    _delete(path)
    release(path)


def _delete(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(OSError):
            path.unlink()


@contextlib.contextmanager
def scratch(prefix: str = "stencilmap-") -> Iterator[Path]:
    """A registered temporary folder for the duration of the block."""
    path = temporary_folder(prefix)
    try:
        yield path
    finally:
        remove(path)


def clean_up() -> None:
    """Kill every registered child's process group and remove every registered temporary. Called when the
    process ends: children and temporaries asked for afterwards are refused."""
    with _REGISTRY.lock:
        _REGISTRY.closing = True
        children = list(_REGISTRY.children.values())
        temporaries = sorted(_REGISTRY.temporaries, key=lambda p: len(p.parts), reverse=True)
        _REGISTRY.temporaries.clear()
    _stop(children)
    for path in temporaries:
        _delete(path)


atexit.register(clean_up)


def _stop(children: Sequence[subprocess.Popen[str]]) -> None:
    """SIGTERM to each child's group; SIGKILL to the groups whose leader has not exited within ``GRACE_S``."""
    for child in children:
        _signal_group(child, signal.SIGTERM)
    deadline = time.monotonic() + GRACE_S
    for child in children:
        try:
            child.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            _signal_group(child, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.wait(GRACE_S)


def _signal_group(child: subprocess.Popen[str], signum: int) -> None:
    if child.returncode is None:  # not reaped: its pid still names its group
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(child.pid, signum)


# --------------------------------------------------------------------------------------------- running


@dataclass(frozen=True, slots=True)
class Finished:
    """How a child ended: its exit status (negative: the signal that killed it) and its output."""

    returncode: int
    stdout: str
    stderr: str
    timed_out: bool = False
    isolated: bool = False  # ran with no network

    @property
    def ending(self) -> str:
        """``exit status N`` or ``killed by SIGSEGV``."""
        return ending(self.returncode)


def ending(returncode: int) -> str:
    """An exit status in words: ``exit status N``, or ``killed by SIGSEGV`` for a negative one."""
    if returncode >= 0:
        return f"exit status {returncode}"
    try:
        return f"killed by {signal.Signals(-returncode).name}"
    except ValueError:
        return f"killed by signal {-returncode}"


def run(
    argv: Sequence[str],
    *,
    cwd: Path | None = None,
    stdin: str | None = None,
    timeout: float | None = None,
    isolate: bool = False,
) -> Finished:
    """Run ``argv`` in a process group of its own, registered while it runs (an interrupt kills the group);
    past ``timeout`` seconds the group is killed and ``timed_out`` set. With ``isolate`` it runs in a fresh
    scratch folder, removed after, with no network where ``network_isolation()`` (else with the network:
    ``isolated`` says which)."""
    if not isolate:
        return _run(list(argv), cwd, stdin, timeout, isolated=False)
    prefix = [shutil.which("unshare") or "unshare", *NO_NETWORK] if network_isolation() else []
    with scratch("stencilmap-run-") as work:
        return _run([*prefix, *argv], work, stdin, timeout, isolated=bool(prefix))


def _run(
    argv: list[str], cwd: Path | None, stdin: str | None, timeout: float | None, isolated: bool
) -> Finished:
    with _REGISTRY.lock:
        _REGISTRY.check_open()
        child = subprocess.Popen(
            argv,
            cwd=cwd,
            stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
            start_new_session=True,
        )
        _REGISTRY.children[child.pid] = child
    try:
        try:
            out, err = child.communicate(stdin, timeout)
            _REGISTRY.check_open()  # killed by clean_up: not a result
        except subprocess.TimeoutExpired:
            _stop([child])
            out, err = child.communicate()
            return Finished(child.returncode, out, err, timed_out=True, isolated=isolated)
        return Finished(child.returncode, out, err, isolated=isolated)
    except BaseException:
        _stop([child])
        raise
    finally:
        with _REGISTRY.lock:
            _REGISTRY.children.pop(child.pid, None)


@functools.cache
def network_isolation() -> bool:
    """Whether ``unshare --net --map-root-user`` works here (tried once per process)."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return False
    try:
        return _run([unshare, *NO_NETWORK, "true"], None, None, 30.0, isolated=False).returncode == 0
    except OSError:
        return False


# ---------------------------------------------------------------------------------------------- the cache


def cache_root() -> Path:
    """``$STENCILMAP_CACHE_DIR``, else ``$XDG_CACHE_HOME/stencilmap``, else ``~/.cache/stencilmap``."""
    root = os.environ.get(CACHE_ENV)
    if root:
        return Path(root).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "stencilmap"


def cache_dir(*parts: str) -> Path:
    """``<cache>/<parts...>``: each folder from the root down created 0700 if missing, and refused unless it
    belongs to this user and only they can write it."""
    path = private_folder(cache_root())
    for part in parts:
        path = private_folder(path / part)
    return path


def private_folder(path: Path) -> Path:
    """``path``, created 0700 if missing (its parents as ``mkdir -p`` does); refused (StencilmapError naming
    it) when it is not a folder owned by this user and writable by nobody else."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.mkdir(mode=0o700, exist_ok=True)
        info = path.stat()
    except OSError as exc:
        raise StencilmapError(f"cannot use the compile cache {path}: {exc.strerror or exc}") from None
    if not stat.S_ISDIR(info.st_mode):
        _refuse(path, "it is not a folder")
    _check_owner(path, info, "it")
    return path


def _check_owner(folder: Path, info: os.stat_result, what: str) -> None:
    if info.st_uid != os.geteuid():
        _refuse(
            folder, f"{what} is owned by another user (uid {info.st_uid}), so loading it would run their code"
        )
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        _refuse(
            folder, f"{what} is writable by other users (mode {stat.S_IMODE(info.st_mode):o}); chmod go-w it"
        )


def _refuse(folder: Path, why: str) -> NoReturn:
    raise StencilmapError(f"refusing the compile cache {folder}: {why}")


def _verify(folder: Path, entry: Path) -> None:
    """Check an entry before it is loaded or run: a regular file of this user's that nobody else can write,
    whose bytes hash to the digest its name ends with."""
    try:
        fd = os.open(entry, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as exc:
        _refuse(folder, f"{entry.name} cannot be read ({exc.strerror or exc})")
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode):
            _refuse(folder, f"{entry.name} is not a regular file")
        _check_owner(folder, info, entry.name)
        digest = hashlib.file_digest(f, "sha256").hexdigest()
    if digest != _digest_of(entry):
        _refuse(folder, f"{entry.name} does not hash to its name (altered after it was built); delete it")


def _digest_of(entry: Path) -> str:
    return entry.name.removesuffix(".so").rsplit("-", 1)[-1]


# ------------------------------------------------------------------------------------------------ building


def find_compiler(names: Sequence[str]) -> str | None:
    """The first of ``names`` (commands or paths) that can be run, as a full path; None if none can."""
    for name in names:
        found = shutil.which(name)
        if found is not None:
            return found
    return None


@functools.cache
def compiler_identity(compiler: str) -> str:
    """What a compiled entry depends on besides its sources and flags: the compiler (path and ``--version``)
    and this CPU's feature flags."""
    version = _run([compiler, "--version"], None, None, 60.0, isolated=False).stdout
    return f"{compiler}\n{version}\n{_cpu_flags()}"


def _cpu_flags() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            return next((line for line in f if line.startswith("flags")), "")
    except OSError:
        return ""


class CompileError(Exception):
    """The compiler rejected a unit; ``stderr`` is what it said."""

    def __init__(self, stderr: str, how: str = "") -> None:
        super().__init__(stderr)
        self.stderr = stderr
        self.how = how  # how the compiler ended: ``exit status 1``, ``killed by SIGKILL``

    @property
    def first_line(self) -> str:
        return (self.stderr.strip().splitlines() or ["no message"])[0]

    @property
    def first_error(self) -> str:
        """The first line that says ``error`` (else the first line)."""
        lines = self.stderr.splitlines()
        return next((ln for ln in lines if "error" in ln), self.first_line).strip()


@dataclass(frozen=True, slots=True)
class Unit:
    """One compiler run: ``files`` (relative name, text) are written to a build folder and ``sources`` among
    them compiled by ``compiler`` with ``flags``, ``-I`` each of ``includes`` (relative to the build folder,
    or absolute), then ``libs``. A shared library when ``flags`` hold ``-shared``, else an executable;
    ``name`` starts its cache entry's name. With ``parts`` (each a tuple of extra flags, such as ``-D``s that
    select a share of its functions), the one source is compiled once per part to an object, the parts in
    parallel, and the objects linked: one build on several cores."""

    name: str
    compiler: str
    files: tuple[tuple[str, str], ...]
    sources: tuple[str, ...]
    flags: tuple[str, ...]
    libs: tuple[str, ...] = ()
    includes: tuple[str, ...] = ()
    parts: tuple[tuple[str, ...], ...] = ()

    @property
    def suffix(self) -> str:
        return ".so" if "-shared" in self.flags else ""

    def key(self) -> str:
        """The hash of everything that decides the compiled bytes."""
        h = hashlib.sha256()
        parts = (
            _RECIPE,
            compiler_identity(self.compiler),
            *self.flags,
            "|libs",
            *self.libs,
            "|includes",
            *self.includes,
            "|sources",
            *self.sources,
            "|parts",
            *(" ".join(part) for part in self.parts),
        )
        for part in parts:
            h.update(part.encode() + b"\0")
        for name, text in self.files:
            h.update(name.encode() + b"\0" + text.encode() + b"\0")
        return h.hexdigest()[:32]

    def command(self, build: Path, out: Path) -> list[str]:
        return [
            self.compiler,
            *self.flags,
            *(f"-I{build / d}" for d in self.includes),
            *(str(build / s) for s in self.sources),
            "-o",
            str(out),
            *self.libs,
        ]

    def part_commands(self, build: Path, out: Path) -> tuple[list[list[str]], list[str]]:
        """With ``parts``: the compiler run of each part (to ``part<i>.o``), and the link of their objects."""
        if len(self.sources) != 1:
            raise ValueError(f"a unit in parts compiles one source, not {len(self.sources)}")
        objects = [build / f"part{i}.o" for i in range(len(self.parts))]
        compiles = [
            [
                self.compiler,
                *self.flags,
                *part,
                *(f"-I{build / d}" for d in self.includes),
                "-c",
                str(build / self.sources[0]),
                "-o",
                str(obj),
            ]
            for part, obj in zip(self.parts, objects, strict=True)
        ]
        return compiles, [self.compiler, *self.flags, *map(str, objects), "-o", str(out), *self.libs]


_LOADED: dict[tuple[Path, str], ctypes.CDLL] = {}


def library(
    unit: Unit, where: Sequence[str], announce: Callable[[], None] | None = None
) -> tuple[ctypes.CDLL, bool]:
    """The loaded shared library of ``unit``, cached in ``cache_dir(*where)``, and whether it was compiled now
    (``announce`` is called first). Loaded once per process."""
    key = unit.key()
    folder = cache_dir(*where)
    if (folder, key) in _LOADED:
        return _LOADED[folder, key], False
    entry = _cached(folder, unit, key)
    fresh = entry is None
    if entry is None:
        if announce is not None:
            announce()
        entry = _build(unit, folder, key)
    _verify(folder, entry)
    loaded = _LOADED[folder, key] = ctypes.CDLL(str(entry))
    return loaded, fresh


@contextlib.contextmanager
def executable(unit: Unit, cache: Path | None) -> Iterator[tuple[Path, float]]:
    """The executable of ``unit`` and the seconds spent compiling it (0: it came from the cache), for the
    block. Cached in the folder ``cache`` (checked as the cache is); without one it is built in a temporary
    folder that the block's end removes."""
    key = unit.key()
    if cache is None:
        folder = temporary_folder(f"stencilmap-{unit.name}-")
        try:
            start = time.perf_counter()
            entry = _build(unit, folder, key)
            yield entry, time.perf_counter() - start
        finally:
            remove(folder)
        return
    folder = private_folder(cache.absolute())
    seconds = 0.0
    found = _cached(folder, unit, key)
    if found is None:
        start = time.perf_counter()
        found = _build(unit, folder, key)
        seconds = time.perf_counter() - start
    _verify(folder, found)
    yield found, seconds


def _cached(folder: Path, unit: Unit, key: str) -> Path | None:
    """An entry of ``unit`` in ``folder`` (concurrent builds may have left several: any will do)."""
    return next(iter(sorted(folder.glob(f"{unit.name}-{key}-*{unit.suffix}"))), None)


def _build(unit: Unit, folder: Path, key: str) -> Path:
    """Compile ``unit`` in a temporary folder inside ``folder`` and rename the result into place."""
    build = temporary_folder(f".{unit.name}-{key}.", folder)
    try:
        for name, text in unit.files:
            path = build / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        out = build / f"out{unit.suffix}"
        if unit.parts:
            from concurrent.futures import ThreadPoolExecutor

            compiles, link = unit.part_commands(build, out)
            with ThreadPoolExecutor(len(compiles)) as pool:
                runs = list(pool.map(lambda argv: _run(argv, build, None, None, isolated=False), compiles))
            failed = next((done for done in runs if done.returncode != 0), None)
            done = failed or _run(link, build, None, None, isolated=False)
        else:
            done = _run(unit.command(build, out), build, None, None, isolated=False)
        if done.returncode != 0:
            raise CompileError(done.stderr or done.ending, how=done.ending)
        with open(out, "rb") as f:
            digest = hashlib.file_digest(f, "sha256").hexdigest()
        out.chmod(0o700)
        entry = folder / f"{unit.name}-{key}-{digest}{unit.suffix}"
        os.replace(out, entry)
        return entry
    finally:
        remove(build)
