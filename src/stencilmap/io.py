"""Reading user arrays and writing results: checked up front, staged, then published together.

Every file a command writes is first written in full to a temporary file in its destination folder
(arrays: a hidden temporary folder inside ``--out``), flushed to disk, and only then renamed into place, all
of a command's files in one step under ``PUBLISH_LOCK``. An error or an interrupt before that step leaves
nothing behind (``discard_pending`` removes the temporary files); the step itself is a handful of renames
that an interrupt waits for. Output paths are checked before any work (``check_output_dir``,
``check_output_file``), and a name never makes a file land outside the folder it was meant for.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import shutil
import stat
import tempfile
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from types import TracebackType
from typing import IO, Any

import numpy as np
import numpy.typing as npt

from stencilmap.errors import StencilmapError, input_param

Array = npt.NDArray[Any]

#: Held while a command's files are renamed into place; an interrupt handler takes it before exiting.
PUBLISH_LOCK = threading.RLock()
#: Temporary files and folders not yet published or removed (what an interrupt must clean up).
_PENDING: set[Path] = set()
#: Folders made for outputs not yet published (``make_folders``): removed again, if still empty, when the
#: outputs are discarded — a failed or interrupted command leaves no empty ``--out`` behind.
_MADE: set[Path] = set()
#: Longest file name most file systems accept, in bytes.
NAME_MAX = 255
#: An output array's name: an identifier, so ``<name>.npy`` is a plain file name inside ``--out``.
_FIELD_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: Largest ``.npy`` array ``--input`` reads (its header is checked before the data is read).
MAX_INPUT_BYTES = 8 * 2**30


def _os_error(exc: OSError, path: Path | str) -> StencilmapError:
    return StencilmapError(exc.strerror or str(exc), str(path))


# ------------------------------------------------------------------------------------------------- reading


def open_user_file(path: str | Path, where: str) -> IO[bytes]:
    """Open a file the user named (a program, device, partition, reports CSV or ``.npy`` array) for
    reading: it must be a regular file — a FIFO is refused without blocking, a device such as
    ``/dev/zero`` without reading it (issue 19 §9). ``where`` names it in the one-line error."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        raise StencilmapError("no such file", where) from None
    except IsADirectoryError:
        raise StencilmapError("not a regular file", where) from None
    except OSError as exc:
        raise StencilmapError(f"cannot read: {exc.strerror or exc}", where) from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise StencilmapError("not a regular file", where)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_user_bytes(path: str | Path, where: str, limit: int, what: str = "this file") -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes (``open_user_file``)."""
    with open_user_file(path, where) as f:
        try:
            data = f.read(limit + 1)
        except OSError as exc:
            raise StencilmapError(f"cannot read: {exc.strerror or exc}", where) from None
    if len(data) > limit:
        raise StencilmapError(f"larger than the limit of {limit:,} bytes for {what}", where)
    return data


def read_user_text(path: str | Path, where: str, limit: int, what: str = "this file") -> str:
    """The UTF-8 text of a regular file of at most ``limit`` bytes; invalid UTF-8 is a one-line error."""
    data = read_user_bytes(path, where, limit, what)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise StencilmapError(f"not UTF-8 text (byte {exc.start})", where) from None


class JsonPathError(ValueError):
    """A problem of a user's JSON file that JSON's grammar lets through; ``path`` is where, as messages show it."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(message)
        self.path = path


def parse_user_json(text: str) -> Any:
    """``json.loads`` for the JSON files users give (programs, devices, partitions): an object giving a key twice
    (JSON leaves that undefined; Python would keep the last value silently) and ``NaN`` or ``Infinity`` (not
    JSON, though Python reads them) raise ``JsonPathError`` with their JSON path. Otherwise raises what
    ``json.loads`` raises."""
    import json

    raw = json.loads(text, parse_constant=_NotJsonNumber, object_pairs_hook=_JsonObject.of)
    stack: list[tuple[Any, str]] = [(raw, "")]
    while stack:
        value, path = stack.pop()
        if isinstance(value, _NotJsonNumber):
            raise JsonPathError(path or "(top level)", f"{value.name} is not a number JSON allows")
        if isinstance(value, _JsonObject) and value.repeated is not None:
            key = shown_json_key(value.repeated)
            where = f"{ascii(path)[1:-1]}.{key}" if path else key
            raise JsonPathError(where, f"key '{key}' is given twice in one object")
        if isinstance(value, dict):
            stack += [(item, f"{path}.{k}" if path else str(k)) for k, item in value.items()]
        elif isinstance(value, list):
            stack += [(item, f"{path}[{i}]") for i, item in enumerate(value)]
    return raw


def shown_json_key(key: str) -> str:
    """A JSON key as a message's path shows it: shortened, non-ASCII escaped."""
    return ascii(key if len(key) <= 40 else key[:37] + "...")[1:-1]


class _JsonObject(dict[str, Any]):
    """A JSON object as parsed, remembering the first key it held twice."""

    repeated: str | None = None

    @classmethod
    def of(cls, pairs: list[tuple[str, Any]]) -> _JsonObject:
        obj = cls()
        for key, value in pairs:
            if key in obj and obj.repeated is None:
                obj.repeated = key
            obj[key] = value
        return obj


class _NotJsonNumber:
    """``NaN``, ``Infinity`` or ``-Infinity`` where a value stands: refused, with its path, after parsing."""

    def __init__(self, name: str) -> None:
        self.name = name


def read_npy(name: str, path: str | Path) -> Array:
    """Load a ``.npy`` array given with ``--input name=path`` (a regular file; its header is checked
    against ``MAX_INPUT_BYTES`` and the file's real size before the data is read)."""
    p = Path(path)
    where = input_param(name, str(p))
    if not p.exists():
        raise StencilmapError("no such file", where)
    try:
        with open_user_file(p, where) as f:
            shape, dtype = _npy_header(f, where)
            need = int(np.prod(shape, dtype=object)) * dtype.itemsize
            if need > MAX_INPUT_BYTES:
                raise StencilmapError(
                    f"array of {need:,} bytes is larger than the limit of {MAX_INPUT_BYTES:,}", where
                )
            if need > os.fstat(f.fileno()).st_size:
                raise StencilmapError(
                    f"truncated .npy file: its header promises {need:,} bytes of data", where
                )
            f.seek(0)
            arr = np.load(f, allow_pickle=False)
    except OSError as exc:
        raise _os_error(exc, where) from None
    except (ValueError, EOFError) as exc:
        raise StencilmapError(f"not a readable .npy array ({exc})", where) from None
    if not isinstance(arr, np.ndarray):
        raise StencilmapError("expected a .npy array", where)
    return arr


def _npy_header(f: IO[bytes], where: str) -> tuple[tuple[int, ...], np.dtype[Any]]:
    try:
        major, _ = np.lib.format.read_magic(f)
        if major == 1:
            shape, _, dtype = np.lib.format.read_array_header_1_0(f)
        else:
            shape, _, dtype = np.lib.format.read_array_header_2_0(f)
    except (ValueError, EOFError, SyntaxError, TypeError) as exc:
        raise StencilmapError(f"not a .npy array ({exc})", where) from None
    if dtype.hasobject:
        raise StencilmapError("object arrays are not accepted", where)
    return tuple(int(n) for n in shape), dtype


# ------------------------------------------------------------------------------------------- output paths


def check_output_dir(directory: Path, what: str = "--out") -> None:
    """Raise a StencilmapError unless ``directory`` is, or can be created as, a folder we can write."""
    _check_names(directory, what)
    existing = directory
    while not existing.exists():
        if existing.is_symlink():
            raise StencilmapError("is a broken symbolic link", f"{what} {existing}")
        existing = existing.parent
    if not existing.is_dir():
        raise StencilmapError(f"'{existing}' is not a folder", f"{what} {directory}")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise StencilmapError(f"folder '{existing}' is not writable", f"{what} {directory}")


def check_output_file(path: Path, what: str) -> None:
    """Raise a StencilmapError unless ``path`` can be written (its folder writable, not a folder itself,
    and not an existing special file: see ``check_replaceable``)."""
    if path.is_dir():
        raise StencilmapError("is a folder", f"{what} {path}")
    if path.name in ("", ".", ".."):
        raise StencilmapError("is not a file name", f"{what} {path}")
    check_output_dir(path.parent, what)
    _check_names(path, what)
    check_replaceable(path, what)


def check_replaceable(path: Path, what: str) -> None:
    """Refuse an existing ``path`` that is not a regular file (``lstat``: a symbolic link, FIFO, socket or
    device such as ``/dev/null``): a file is published by renaming a temporary over it, which would replace
    the special file itself (issue 19 §2)."""
    try:
        mode = os.lstat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return
    except OSError as exc:
        raise _os_error(exc, f"{what} {path}") from None
    if not stat.S_ISREG(mode):
        kind = _KINDS.get(stat.S_IFMT(mode), "special file")
        raise StencilmapError(
            f"exists and is a {kind}, not a regular file (stencilmap replaces only regular files)",
            f"{what} {path}",
        )


_KINDS = {
    stat.S_IFLNK: "symbolic link",
    stat.S_IFIFO: "FIFO",
    stat.S_IFSOCK: "socket",
    stat.S_IFCHR: "character device",
    stat.S_IFBLK: "block device",
    stat.S_IFDIR: "folder",
}


def _check_names(path: Path, what: str) -> None:
    for part in path.parts:
        if len(os.fsencode(part)) > NAME_MAX - 32:  # room for the temporary names' prefix and suffix
            raise StencilmapError(f"a file name longer than {NAME_MAX - 32} bytes", f"{what} {path}")


def array_path(directory: Path, name: str) -> Path:
    """``directory/<name>.npy``; ``name`` must be an identifier, so the file is inside ``directory``."""
    if not _FIELD_NAME.fullmatch(name) or len(name) > NAME_MAX - 32:
        raise StencilmapError(f"cannot write an output named {name!r}: not an identifier", str(directory))
    return directory / f"{name}.npy"


# ------------------------------------------------------------------------------------------------ writing


def make_folders(directory: Path) -> None:
    """``mkdir -p directory``, remembering each folder it made (``remove_made_folders`` takes back the
    empty ones; ``publish`` keeps them)."""
    missing = []
    folder = directory
    while not folder.exists():
        missing.append(folder)
        folder = folder.parent
    directory.mkdir(parents=True, exist_ok=True)
    with PUBLISH_LOCK:
        _MADE.update(missing)


def keep_made_folders(directory: Path) -> None:
    """Outputs were published in ``directory``: it and the folders above it stay."""
    with PUBLISH_LOCK:
        for folder in (directory, *directory.parents):
            _MADE.discard(folder)


def remove_made_folders() -> None:
    """Remove the folders ``make_folders`` made that are still empty (deepest first)."""
    with PUBLISH_LOCK:
        for folder in sorted(_MADE, key=lambda p: len(p.parts), reverse=True):
            with contextlib.suppress(OSError):
                folder.rmdir()
        _MADE.clear()


class OutputSet:
    """The files one command writes: staged with ``add_*``, published together by ``publish``.

    Used as a context manager, an exception (or interrupt) before ``publish`` removes every staged file.
    """

    def __init__(self) -> None:
        self._staged: list[tuple[Path, Path]] = []  # (temporary, final)
        self._folders: list[Path] = []

    def __enter__(self) -> OutputSet:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.discard()

    def add_arrays(self, directory: Path, arrays: Mapping[str, Array]) -> dict[str, Path]:
        """Stage ``directory/<name>.npy`` for every array, in a temporary folder inside ``directory``."""
        finals = {name: array_path(directory, name) for name in arrays}
        check_output_dir(directory)
        for final in finals.values():
            check_replaceable(final, "cannot write")
        try:
            make_folders(directory)
            with PUBLISH_LOCK:
                folder = Path(tempfile.mkdtemp(prefix=".stencilmap-", dir=directory))
                _PENDING.add(folder)
            self._folders.append(folder)
        except OSError as exc:
            raise _os_error(exc, directory) from None
        for name, arr in arrays.items():
            self._stage(folder / f"{name}.npy", finals[name], functools.partial(_save_npy, arr=arr))
        return finals

    def add_text(self, path: Path, text: str) -> None:
        self.add_bytes(path, text.encode("utf-8"))

    def add_bytes(self, path: Path, data: bytes) -> None:
        """Stage ``path`` as a temporary file beside it."""
        check_output_file(path, "cannot write")
        try:
            make_folders(path.parent)
            with PUBLISH_LOCK:
                fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
                _PENDING.add(Path(tmp_name))
            os.close(fd)
        except OSError as exc:
            raise _os_error(exc, path) from None
        self._stage(Path(tmp_name), path, lambda f: f.write(data))

    def _stage(self, tmp: Path, final: Path, write: Callable[[IO[bytes]], object]) -> None:
        with PUBLISH_LOCK:
            _PENDING.add(tmp)
        self._staged.append((tmp, final))
        try:
            with open(tmp, "wb") as f:
                write(f)
                f.flush()
                os.fsync(f.fileno())
            _permissions(tmp)
        except OSError as exc:
            raise _os_error(exc, final) from None

    def publish(self) -> None:
        """Rename every staged file into place (an interrupt waits for this step to finish)."""
        with PUBLISH_LOCK:
            try:
                for _, final in self._staged:
                    check_replaceable(final, "cannot write")  # one may have appeared since it was checked
                for tmp, final in self._staged:
                    os.replace(tmp, final)
                    _PENDING.discard(tmp)
                    keep_made_folders(final.parent)
            except OSError as exc:
                raise _os_error(exc, final) from None
            finally:
                self.discard()

    def discard(self) -> None:
        """Remove what is staged and not yet published."""
        with PUBLISH_LOCK:
            for tmp, _ in self._staged:
                _remove(tmp)
            for folder in self._folders:
                _remove(folder)
            self._staged.clear()
            self._folders.clear()
            remove_made_folders()


def _save_npy(f: IO[bytes], arr: Array) -> None:
    np.save(f, arr, allow_pickle=False)


def _permissions(tmp: Path) -> None:
    """Give a temporary file the permissions a plain ``open`` would (mkstemp makes it private)."""
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)


def _remove(path: Path) -> None:
    with contextlib.suppress(OSError):
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
    _PENDING.discard(path)


def discard_pending() -> None:
    """Remove every temporary file and folder not yet published (on an interrupt); holds the publish lock,
    so a publish in progress completes first."""
    with PUBLISH_LOCK:
        for path in sorted(_PENDING, key=lambda p: len(p.parts), reverse=True):
            _remove(path)
        remove_made_folders()


def write_arrays_atomically(directory: Path, arrays: Mapping[str, Array]) -> dict[str, Path]:
    """Write ``directory/<name>.npy`` for every array; all files appear together or none does."""
    with OutputSet() as out:
        written = out.add_arrays(directory, arrays)
        out.publish()
    return written


def write_text_atomically(path: Path, text: str) -> None:
    """Write a text file through a temporary file in the same folder and a rename."""
    write_bytes_atomically(path, text.encode("utf-8"))


def write_bytes_atomically(path: Path, data: bytes) -> None:
    """Write a binary file through a temporary file in the same folder and a rename."""
    with OutputSet() as out:
        out.add_bytes(path, data)
        out.publish()
