"""What every command shares (``stencilmap.cli.common``): the one console, which never cuts a value;
``--format table|json|csv`` with ``--json`` as its alias; CSV output."""

from __future__ import annotations

import csv
import io
import subprocess
import sys

import pytest
from click.testing import CliRunner
from rich.table import Table

from stencilmap.cli import main
from stencilmap.cli.common import PIPE_WIDTH, ReportConsole, flat, make_console, output_format
from stencilmap.errors import StencilmapError

runner = CliRunner()
LONG = "stage12.w.v.c0.fifo[-1024,0]->stage12.w.v.c0.tap[-1024]"


def _table() -> Table:
    table = Table(title="t")
    for col in ("channel", "peak", "depth"):
        table.add_column(col)
    table.add_row(LONG, "2", "2")
    return table


def test_a_narrow_terminal_folds_a_value_instead_of_cutting_it() -> None:
    out = io.StringIO()
    console = ReportConsole(file=out, width=30, force_terminal=True, color_system=None)
    console.print(_table())
    text = out.getvalue()
    assert "…" not in text
    cells = "".join(line.strip("│ ").split("│")[0].strip() for line in text.splitlines() if "│" in line)
    assert LONG in cells


def test_output_that_is_not_a_terminal_is_as_wide_as_the_values() -> None:
    console = make_console()  # pytest captures stdout: not a terminal
    assert not console.is_terminal and console.width == PIPE_WIDTH


def test_json_is_an_alias_of_format_json() -> None:
    assert output_format("table", True) == "json" and output_format("json", True) == "json"
    assert output_format("csv", False) == "csv"
    with pytest.raises(StencilmapError, match="--json contradicts --format csv"):
        output_format("csv", True)


def test_flat_spells_nested_values_as_dotted_keys() -> None:
    assert flat({"a": 1, "b": {"c": [1, 2], "d": None}}) == [("a", 1), ("b.c", "1;2"), ("b.d", None)]


def test_devices_through_a_pipe_shows_every_value_whole() -> None:
    """Issue 13 §3: ``stencilmap devices | cat`` showed ``xeon-…`` three times."""
    from stencilmap.device.catalog import device_names

    result = runner.invoke(main, ["devices"])
    assert result.exit_code == 0 and "…" not in result.stdout
    for name in device_names():
        assert f"│ {name} " in result.stdout


@pytest.mark.parametrize("fmt", ["csv", "json", "table"])
def test_devices_in_every_format(fmt: str) -> None:
    from stencilmap.device.catalog import device_names

    result = runner.invoke(main, ["devices", "--format", fmt])
    assert result.exit_code == 0, result.output
    if fmt == "csv":
        rows = list(csv.reader(io.StringIO(result.stdout)))
        assert rows[0][0] == "device" and [r[0] for r in rows[1:]] == list(device_names())
        assert all(len(r) == len(rows[0]) for r in rows)
    elif fmt == "json":
        assert result.stdout == runner.invoke(main, ["devices", "--json"]).stdout


def test_json_and_another_format_is_a_usage_error() -> None:
    result = runner.invoke(main, ["devices", "--json", "--format", "csv"])
    assert (
        result.exit_code == 2
        and result.output == "error: --json contradicts --format csv: give one of them\n"
    )


def test_the_real_executable_prints_a_usage_error_as_one_line() -> None:
    """Issue 13 §3: click's usage errors were three lines with "Error:"."""
    result = subprocess.run(
        [sys.executable, "-m", "stencilmap", "simulate", "--bogus"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith("error: No such option '--bogus'") and result.stderr.count("\n") == 1


def test_library_warnings_and_logs_stay_out_of_a_command(caplog: pytest.LogCaptureFixture) -> None:
    """matplotlib's and Dask's own warnings and log lines do not leak to stderr (issue 25); stencilmap's
    warnings still do."""
    import logging
    import warnings

    from stencilmap.cli.common import user_errors

    @user_errors
    def command() -> None:
        warnings.warn_explicit("font cache", UserWarning, "x.py", 1, module="matplotlib.font_manager")
        warnings.warn_explicit("large graph", UserWarning, "x.py", 1, module="distributed.client")
        logging.getLogger("distributed.scheduler").warning("port 8787 in use")
        warnings.warn_explicit("ours", UserWarning, "x.py", 1, module="stencilmap.jobs.run")

    with warnings.catch_warnings(record=True) as caught, caplog.at_level(logging.WARNING):
        warnings.simplefilter("always")
        command()
    shown = [str(w.message) for w in caught]
    assert shown == ["ours"]
    assert "8787" not in caplog.text
