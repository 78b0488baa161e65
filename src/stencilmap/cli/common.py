"""What every command shares: one-line user errors (exit status 2), the command group that runs a command
on a deep stack and turns usage errors and interrupts into one line, and option parsers."""

from __future__ import annotations

import contextlib
import csv
import functools
import io
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping, Sequence
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, TypeVar

import click

from stencilmap.errors import StencilmapError
from stencilmap.io import PUBLISH_LOCK, discard_pending
from stencilmap.point import Option

if TYPE_CHECKING:  # Rich is imported when a command prints a table: `run --json` goes without it
    from rich.console import Console
    from rich.table import Table

F = TypeVar("F", bound=Callable[..., Any])

#: Stack of the thread a command runs on, and the Python recursion limit there: expression trees are
#: walked recursively, and a left-to-right sum of n terms nests n deep (front ends refuse expressions
#: deeper than ``program.expr.MAX_DEPTH``, well within these).
STACK_BYTES = 1024 * 2**20
RECURSION_LIMIT = 200_000


#: Width of output that is not a terminal (a pipe, a file): wide enough that no table cell is cut.
PIPE_WIDTH = 10_000


@functools.cache
def _report_console() -> type[Console]:
    from rich.console import Console
    from rich.table import Table

    class ReportConsole(Console):
        """A Rich console whose tables never cut a value: a cell too wide for a narrow terminal folds onto
        the next line instead of ending in "…"."""

        def print(self, *objects: Any, **options: Any) -> None:
            for obj in objects:
                if isinstance(obj, Table):
                    for column in obj.columns:
                        column.overflow = "fold"
            super().print(*objects, **options)

    return ReportConsole


def __getattr__(name: str) -> Any:
    """``ReportConsole``, the class of ``make_console``'s consoles, made when first asked for (with Rich)."""
    if name == "ReportConsole":
        return _report_console()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def make_console(stderr: bool = False) -> Console:
    """The one console commands print to: the terminal's width on a terminal (tables fold what does not
    fit); otherwise ``PIPE_WIDTH``, so that ``stencilmap devices | cat`` shows every value whole (Rich would
    assume 80 columns and cut)."""
    report_console = _report_console()
    console = report_console(stderr=stderr)
    return console if console.is_terminal else report_console(stderr=stderr, width=PIPE_WIDTH)


def dims(shape: tuple[object, ...] | list[int]) -> str:
    """A shape as ``64×128`` (``scalar`` when it has no axis)."""
    return "×".join(str(n) for n in shape) or "scalar"


def seconds(t: float) -> str:
    """A duration in s, ms or µs, four significant digits."""
    if t >= 1:
        return f"{t:.4g} s"
    if t >= 1e-3:
        return f"{t * 1e3:.4g} ms"
    return f"{t * 1e6:.4g} µs"


def rows_table(title: str, rows: list[tuple[str, str]]) -> Table:
    """A two-column table without header: what, value (right-aligned)."""
    from rich.table import Table

    table = Table(title=title, title_justify="left", show_header=False)
    table.add_column("what")
    table.add_column("value", justify="right")
    for what, value in rows:
        table.add_row(what, value)
    return table


def warn(warnings: tuple[str, ...]) -> None:
    """The program's warnings, one line each on stderr."""
    for w in warnings:
        click.echo(f"warning: {w}", err=True)


#: libraries whose own warnings and log lines are theirs to fix, not the user's: stencilmap says what it
#: skipped or degraded in its own words (issue 25)
QUIET_LIBRARIES = ("matplotlib", "dask", "distributed", "bokeh", "tornado")


@contextlib.contextmanager
def quiet_libraries() -> Iterator[None]:
    """Within a command: the warnings raised in matplotlib's, Dask's and their helpers' modules are not
    printed, and their loggers say only errors."""
    import logging
    import warnings

    pattern = "|".join(QUIET_LIBRARIES)
    loggers = [logging.getLogger(name) for name in QUIET_LIBRARIES]
    levels = [lg.level for lg in loggers]
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", module=rf"({pattern})(\.|$)")
        for lg in loggers:
            lg.setLevel(logging.ERROR)
        try:
            yield
        finally:
            for lg, level in zip(loggers, levels, strict=True):
                lg.setLevel(level)


def user_errors(fn: F) -> F:
    """Turn a StencilmapError into one line on stderr and exit status 2 (never a traceback); so too an
    error of the operating system on a file (a full disk, a read-only folder) and running out of memory."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            with quiet_libraries():
                return fn(*args, **kwargs)
        except StencilmapError as exc:
            fail(str(exc))
        except OSError as exc:
            where = f"{exc.filename}: " if exc.filename is not None else ""
            fail(f"{where}{exc.strerror or exc}")
        except MemoryError:
            fail("out of memory (try a smaller --shape)")

    return wrapper  # type: ignore[return-value]


def fail(message: str, status: int = 2) -> None:
    """Print ``error: message`` as one line on stderr and exit (silently once an interrupt is being handled:
    the error is its consequence, and the interrupt has its own line)."""
    from stencilmap import native
    from stencilmap.names import visible

    if not native.closing():
        click.echo("error: " + visible(message), err=True)
    sys.exit(status)


class Interrupted(BaseException):
    """SIGINT or SIGTERM arrived while a command ran."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


class StencilmapGroup(click.Group):
    """The ``stencilmap`` group: every command runs on a thread with a deep stack; a usage error is one
    line with exit status 2; an interrupt (SIGINT, SIGTERM) kills the process groups of the children running
    (``native``), removes unpublished and other registered temporary files, lets a publish in progress finish,
    and exits with 128 + the signal number."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        #: name → (module, attribute) of the commands imported when first asked for (``add_lazy_command``).
        self._lazy: dict[str, tuple[str, str]] = {}
        super().__init__(*args, **kwargs)

    @property
    def commands(self) -> MutableMapping[str, click.Command]:
        """Every command, the lazy ones imported (the help of all commands, "did you mean")."""
        for name in list(self._lazy):
            self._load(name)
        return self._commands

    @commands.setter
    def commands(self, value: MutableMapping[str, click.Command]) -> None:
        self._commands = value

    def add_lazy_command(self, name: str, module: str, attribute: str) -> None:
        """Register ``module.attribute`` as the command ``name``, imported when it is first asked for: a run of
        one command does not import the others' modules and libraries."""
        self._lazy[name] = (module, attribute)

    def _load(self, name: str) -> click.Command | None:
        if name in self._lazy:
            import importlib

            module, attribute = self._lazy.pop(name)
            command = getattr(importlib.import_module(module), attribute)
            assert isinstance(command, click.Command)
            self._commands[name] = command
        return self._commands.get(name)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        return self._load(cmd_name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self._commands, *self._lazy})

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        try:
            with _signals_raise():
                _on_deep_stack(
                    lambda: super(StencilmapGroup, self).main(
                        args, prog_name, complete_var, standalone_mode=False, **extra
                    )
                )
        except click.exceptions.Exit as exc:
            sys.exit(exc.exit_code)
        except click.exceptions.NoArgsIsHelpError as exc:  # bare `stencilmap`: the help is the answer
            click.echo(exc.ctx.get_help())
            sys.exit(0)
        except click.UsageError as exc:
            hint = f" (see '{exc.ctx.command_path} --help')" if exc.ctx is not None else ""
            fail(exc.format_message() + hint)
        except click.ClickException as exc:
            fail(exc.format_message(), exc.exit_code)
        except (click.exceptions.Abort, KeyboardInterrupt):
            _interrupted(signal.SIGINT)
        except Interrupted as exc:
            _interrupted(exc.signum)
        sys.exit(0)


def _interrupted(signum: int) -> None:
    """Clean up, then exit: the children's process groups are killed and every registered temporary is
    removed (staged outputs, staging folders, build and scratch folders; a publish in progress finishes
    first); one line says so; the exit status is 128 + the signal number."""
    from stencilmap import native

    for s in (signal.SIGINT, signal.SIGTERM):  # a second signal must not cut the cleanup short
        signal.signal(s, signal.SIG_IGN)
    with PUBLISH_LOCK:
        native.clean_up()
        discard_pending()
    click.echo(f"error: interrupted ({signal.Signals(signum).name})", err=True)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(128 + signum)  # the command's thread may still be running: everything is cleaned, do not wait


@contextlib.contextmanager
def _signals_raise() -> Iterator[None]:
    """While active (in the main thread only), SIGTERM raises ``Interrupted`` and SIGINT KeyboardInterrupt
    (replacing ``entry``'s handlers of the start-up, which stay until then)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {
        signal.SIGINT: signal.signal(signal.SIGINT, signal.default_int_handler),
        signal.SIGTERM: signal.signal(signal.SIGTERM, _raise_interrupted),
    }
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _raise_interrupted(signum: int, _frame: FrameType | None) -> None:
    raise Interrupted(signum)


def _on_deep_stack(fn: Callable[[], Any]) -> Any:
    """Run ``fn`` on a thread with ``STACK_BYTES`` of stack and ``RECURSION_LIMIT``; its exception (even
    SystemExit) is re-raised here. The calling thread waits in short joins, so signals reach it."""
    outcome: list[Any] = []

    def target() -> None:
        try:
            outcome.append((True, fn()))
        except BaseException as exc:  # handed to the calling thread
            outcome.append((False, exc))

    old_stack = threading.stack_size()
    old_limit = sys.getrecursionlimit()
    threading.stack_size(STACK_BYTES)
    sys.setrecursionlimit(max(old_limit, RECURSION_LIMIT))
    try:
        worker = threading.Thread(target=target, name="stencilmap", daemon=True)
        worker.start()
    finally:
        threading.stack_size(old_stack)
    try:
        while worker.is_alive():
            worker.join(0.05)
    finally:
        sys.setrecursionlimit(old_limit)
    ok, value = outcome[0]
    if not ok:
        raise value
    return value


#: What ``--format`` offers: a table for people, one JSON object, CSV (one row per item, raw numbers).
FORMATS = ("table", "json", "csv")


def format_options(fn: F) -> F:
    """``--format table|json|csv`` and ``--json``, the older spelling of ``--format json``; the command
    receives ``fmt`` and ``as_json`` and calls ``output_format`` on them."""
    fn = click.option("--json", "as_json", is_flag=True, help="Same as --format json.")(fn)
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(FORMATS),
        default="table",
        show_default=True,
        help="Print tables, one JSON object, or CSV (one row per item, numbers unformatted).",
    )(fn)


def output_format(fmt: str, as_json: bool) -> str:
    """The format asked for: ``--json`` means ``--format json`` and contradicts any other ``--format``."""
    if as_json and fmt not in ("table", "json"):
        raise StencilmapError(f"--json contradicts --format {fmt}: give one of them")
    return "json" if as_json else fmt


def echo_csv(header: Sequence[str], rows: Iterable[Sequence[object]]) -> None:
    """Print a CSV table on stdout: a header line, then one line per row (None as an empty cell)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    for row in rows:
        writer.writerow(["" if v is None else v for v in row])
    click.echo(buffer.getvalue(), nl=False)


def flat(values: Mapping[str, object], prefix: str = "") -> list[tuple[str, object]]:
    """A nested JSON-ready dict as ``(dotted.key, value)`` pairs; lists become ``a;b;c``."""
    out: list[tuple[str, object]] = []
    for key, value in values.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out += flat(value, name + ".")
        elif isinstance(value, list | tuple):
            out.append((name, ";".join(str(v) for v in value)))
        else:
            out.append((name, value))
    return out


#: ``--seed``: what ``numpy.random.default_rng`` accepts.
SEED = click.IntRange(0, 2**63 - 1)


def fused_line(pairs: tuple[tuple[str, str], ...]) -> str:
    """What ``--fuse`` fused, as the commands print it."""
    if not pairs:
        return "fused: nothing (no stencil has a single reader it can be fused into exactly)"
    return "fused: " + ", ".join(f"{p} into {c}" for p, c in pairs)


#: ``--data-dir``, shared by the commands that read a program's data files.
data_dir_option = click.option(
    "--data-dir",
    type=click.Path(path_type=Path, file_okay=False),
    metavar="DIR",
    help="Folder that data files named by the program may be read from  [default: the program's folder].",
)


def parse_shape(_ctx: click.Context, _param: click.Parameter, value: str | None) -> tuple[int, ...] | None:
    if value is None:
        return None
    try:
        dims = tuple(int(v) for v in value.split(","))
    except ValueError:
        raise click.BadParameter(f"expected sizes like 64,128, got '{value}'") from None
    if not dims or any(d < 1 for d in dims):
        raise click.BadParameter(f"sizes must be positive integers, got '{value}'")
    return dims


def input_option(help: str = "Use this .npy array for input NAME (C order).") -> Callable[[F], F]:
    """``--input NAME=FILE.npy`` (repeatable): the commands' one spelling of user-supplied arrays."""
    return click.option(
        "--input", "inputs", multiple=True, callback=parse_inputs, metavar="NAME=FILE.npy", help=help
    )


def parse_inputs(_ctx: click.Context, _param: click.Parameter, value: tuple[str, ...]) -> dict[str, Path]:
    out: dict[str, Path] = {}
    for item in value:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise click.BadParameter(f"expected NAME=FILE.npy, got '{item}'")
        out[name] = Path(path)
    return out


def design_options(
    *names: str,
    help: Mapping[str, str] | None = None,
    choices: Mapping[str, Sequence[str]] | None = None,
    required: Sequence[str] = (),
) -> Callable[[F], F]:
    """Add the command-line options of ``DesignPoint``'s fields ``names`` (``--unroll K``, ``--tile T1,...``,
    ... as each field's ``Option`` says) and pass the command one ``point``, the ``DesignPoint`` of their
    values, instead of the values; ``help`` / ``choices``: a command's own wording / architectures for a
    field, ``required``: the fields it must be given."""
    from stencilmap.point import DesignPoint, point_options

    offered = point_options()
    wording, allowed = dict(help or {}), dict(choices or {})

    def add(fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            given = {name: kwargs.pop(offered[name][0].dest or name) for name in names}
            return fn(*args, point=DesignPoint(**given), **kwargs)

        command: Any = wrapper
        for name in reversed(names):
            option, default = offered[name]
            command = _point_option(name, option, default, wording, allowed, name in required)(command)
        return command  # type: ignore[no-any-return]

    return add


def _point_option(
    name: str,
    option: Option,
    default: object,
    wording: Mapping[str, str],
    allowed: Mapping[str, Sequence[str]],
    required: bool,
) -> Callable[[F], F]:
    """The click option of one ``DesignPoint`` field."""
    flag = "--" + name.replace("_", "-")
    decls = [flag] if option.dest is None else [flag, option.dest]
    kw: dict[str, Any] = {"help": wording.get(name, option.help)}
    if option.metavar is not None:
        kw["metavar"] = option.metavar
    if option.kind == "int":
        kw["type"] = int
    elif option.kind == "sizes":
        kw["callback"] = parse_shape
    elif option.kind == "choice":
        kw["type"] = click.Choice(list(allowed.get(name, option.choices)))
    elif option.kind == "flag":
        kw["is_flag"] = True
    elif option.kind == "count":
        kw["type"] = click.IntRange(1, 64)
    elif option.kind == "file":
        kw["type"] = click.Path(path_type=Path, dir_okay=False)
    if default is not None and option.kind != "flag":
        kw.update(default=default, show_default=True)
    if required:
        kw["required"] = True
    return click.option(*decls, **kw)


def partition_table(partition: Any) -> Table:
    """A ``design.partition.Partition`` as a short table: per device its stencils, binding resource and
    what it sends over the network."""
    from rich.table import Table

    how = "min cut" if partition.chosen else "user's parts"
    title = f"partition over {len(partition.parts)} × {partition.device} ({how}; {partition.streams_cut} stream{'' if partition.streams_cut == 1 else 's'} cut)"
    table = Table(title=title, title_justify="left")
    for col in ("device", "stencils", "binding resource", "fits", "sends"):
        table.add_column(col, justify="right" if col == "device" else "left")
    for part in partition.parts:
        r = part.resources
        binding = f"{r.binding} {100 * r.utilization(r.binding):.1f}%" if r.binding else "-"
        sends = [
            f"{c.producer}→d{c.dst} ({c.rate:.3g} beat/cycle)"
            for c in partition.network_channels
            if c.src == part.device
        ]
        names = ", ".join(part.stencils)
        table.add_row(str(part.device), names, binding, "yes" if r.fits else "no", ", ".join(sends) or "-")
    return table
