"""Issue 19: output options never replace special files (§2), codegen/compile replace only a folder
stencilmap wrote (§3), the compile report escapes every value from the inputs (§4), user files are read
bounded (§9), and the remaining tracebacks are one-line errors (§9)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

import stencilmap as sm
from stencilmap.cli import main
from stencilmap.jobs.codegen import MARKER
from stencilmap.jobs.compile_report import md_code, md_text
from tests.cli.test_robust import one_line_error
from tests.conftest import EXAMPLES

JACOBI = str(EXAMPLES / "jacobi2d.soda")
DEVICE_FILES = Path(__file__).resolve().parents[2] / "src" / "stencilmap" / "device" / "files"


# --------------------------------------------------------------------------------------- §2 special files


@pytest.mark.parametrize("kind", ["fifo", "symlink", "device"])
def test_an_output_option_never_replaces_a_special_file(tmp_path: Path, kind: str) -> None:
    target = tmp_path / "precious.txt"
    target.write_text("keep me\n")
    path = tmp_path / "out.dot"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "symlink":
        path.symlink_to(target)
    else:
        path = Path("/dev/null")
    error = one_line_error(["analyze", JACOBI, "--dot", str(path)])
    assert "not a regular file" in error
    if kind == "fifo":
        assert path.is_fifo()
    elif kind == "symlink":
        assert path.is_symlink() and target.read_text() == "keep me\n"
    else:
        assert path.is_char_device()


def test_a_regular_file_is_still_replaced(tmp_path: Path) -> None:
    path = tmp_path / "out.dot"
    path.write_text("old")
    assert CliRunner().invoke(main, ["analyze", JACOBI, "--dot", str(path)]).exit_code == 0
    assert path.read_text().startswith("digraph")


def test_calibrate_out_refuses_a_symlink(tmp_path: Path) -> None:
    target = tmp_path / "t.json"
    target.write_text("{}")
    link = tmp_path / "fitted.json"
    link.symlink_to(target)
    reports = str(EXAMPLES / "calibration" / "de5_laplace_table2.csv")
    program = str(EXAMPLES / "laplace2d.soda")
    args = [
        "calibrate",
        program,
        "--device",
        "de5",
        "--arch",
        "pcm",
        "--reports",
        reports,
        "--shape",
        "32768,4096",
    ]
    assert "not a regular file" in one_line_error([*args, "--out", str(link)])
    assert link.is_symlink() and target.read_text() == "{}"


# ---------------------------------------------------------------------------------- §3 replaced folders


def _codegen(out: Path, *more: str) -> list[str]:
    return ["codegen", JACOBI, "--target", "hls", "--shape", "16,16", "--out", str(out), *more]


def test_codegen_refuses_a_folder_it_did_not_write(tmp_path: Path) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "thesis.tex").write_text("years of work")
    error = one_line_error(_codegen(out))
    assert "did not write" in error and "--force" in error
    assert (out / "thesis.tex").read_text() == "years of work"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine"]  # no stage left beside it


def test_codegen_replaces_its_own_folder_and_an_empty_one(tmp_path: Path) -> None:
    out = tmp_path / "code"
    out.mkdir()
    assert CliRunner().invoke(main, _codegen(out)).exit_code == 0  # empty: used
    assert (out / MARKER).is_file() and (out / "kernel.cpp").is_file()
    (out / "stale.txt").write_text("from before")
    assert CliRunner().invoke(main, _codegen(out)).exit_code == 0  # marked: replaced as a whole
    assert not (out / "stale.txt").exists() and (out / MARKER).is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["code"]


def test_force_replaces_any_folder(tmp_path: Path) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("x")
    assert CliRunner().invoke(main, _codegen(out, "--force")).exit_code == 0
    assert not (out / "notes.txt").exists() and (out / "kernel.cpp").is_file()


@pytest.mark.parametrize("out", [".", ".."])
def test_the_current_folder_and_those_above_it_are_never_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, out: str
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "prog.soda").write_text(Path(JACOBI).read_text())
    monkeypatch.chdir(work)
    error = one_line_error(["codegen", "prog.soda", "--target", "hls", "--out", out, "--force"])
    assert "current folder" in error
    assert sorted(p.name for p in work.iterdir()) == ["prog.soda"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["work"]


def test_compile_refuses_a_folder_it_did_not_write(tmp_path: Path) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "data.csv").write_text("1,2")
    error = one_line_error(["compile", JACOBI, "--device", "ku060", "--shape", "16,16", "--out", str(out)])
    assert "did not write" in error
    assert (out / "data.csv").read_text() == "1,2"


def test_codegen_refuses_a_symlinked_folder(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    assert "symbolic link" in one_line_error(_codegen(link, "--force"))
    assert link.is_symlink()


# ------------------------------------------------------------------------------------ §4 report escaping


def test_markdown_values_render_as_their_characters() -> None:
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    hostile = "a`b|c <script>alert(1)</script> *x* [l](javascript:alert(1)) _y_\nz"
    page = md.render(f"| h | i |\n|---|---|\n| {md_text(hostile)} | {md_code(hostile, in_table=True)} |\n")
    assert "<script>" not in page and "<a " not in page and "<em>" not in page
    assert page.count("<td>") == 2  # one row, two cells: the | did not split a cell
    assert "&lt;script&gt;" in page and "a`b|c" in page


def test_compile_report_escapes_file_and_device_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    doc = json.loads((DEVICE_FILES / "ku060.json").read_text())
    doc["name"] = (
        "dev-x"  # a device name is at most 64 of [A-Za-z0-9._+-] (test_injection); its prose is free
    )
    doc["description"] = "<img src=x onerror=alert(1)> | `x <script>alert(1)</script>"
    (tmp_path / "dev.json").write_text(json.dumps(doc))
    name = "we`ird|<img src=x onerror=alert(2)>.soda"
    (tmp_path / name).write_text(Path(JACOBI).read_text())
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(
        main, ["compile", name, "--device", "dev.json", "--shape", "16,16", "--out", "o"]
    )
    assert res.exit_code == 0, res.output
    page = (tmp_path / "o" / "report.html").read_text()
    body = page.split("<body>", 1)[1]
    assert "<script" not in body and "onerror=" not in re.sub(r"&lt;.*?&gt;", "", body)
    assert not re.search(r"<img[^>]*onerror", body)
    assert "we`ird|&lt;img src=x onerror=alert(2)&gt;.soda" in body  # the name, shown as it is
    tables = re.findall(r"<table>.*?</table>", body, re.S)
    summary_rows = re.findall(r"<tr>(.*?)</tr>", tables[0], re.S)
    assert all(row.count("<td>") in (0, 2) for row in summary_rows)


def test_graphviz_past_its_time_limit_is_a_note_not_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from stencilmap import native
    from stencilmap.jobs import compile_report

    (tmp_path / "design.dot").write_text("digraph { a -> b }\n")
    monkeypatch.setattr(compile_report.shutil, "which", lambda _: "/usr/bin/dot")

    def too_slow(*args: object, **kwargs: object) -> native.Finished:
        return native.Finished(-9, "", "", timed_out=True)

    monkeypatch.setattr(compile_report.native, "run", too_slow)
    small = sm.build(sm.load(EXAMPLES / "jacobi2d.soda", shape=(16, 16)), "stencilflow")
    notes = compile_report._render_svg(tmp_path, small)
    assert notes and notes[0].startswith("design.svg not rendered: Graphviz ran past")
    (tmp_path / "design.dot").write_text("x" * (compile_report.MAX_SVG_DOT_BYTES + 1))
    assert "bytes" in compile_report._render_svg(tmp_path, small)[0]  # too large: not even tried


def test_a_large_design_is_drawn_as_its_summary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past SUMMARY_PAST modules design.svg lays out the summary graph (stages, chains, PE groups):
    a bounded drawing, never minutes of Graphviz; design.dot keeps every module (issue 25)."""
    from stencilmap import native
    from stencilmap.jobs import compile_report

    big = sm.build(sm.load(EXAMPLES / "jacobi2d.soda", shape=(64, 64)), "soda", unroll=8, iterate=4)
    assert len(big.modules) > compile_report.SUMMARY_PAST
    laid_out: list[str] = []

    def dot(args: list[str], **kwargs: object) -> native.Finished:
        laid_out.append(args[2])
        return native.Finished(0, "", "", timed_out=False)

    monkeypatch.setattr(compile_report.shutil, "which", lambda _: "/usr/bin/dot")
    monkeypatch.setattr(compile_report.native, "run", dot)
    notes = compile_report._render_svg(tmp_path, big)
    assert laid_out == ["design_summary.dot"] and "summary" in notes[0]
    summary = (tmp_path / "design_summary.dot").read_text()
    assert summary.count(" [shape=") < 20 < len(big.modules) and "reuse chain" in summary


# ------------------------------------------------------------------------------------ §9 bounded inputs


PARTITIONED = ["analyze", str(EXAMPLES / "dag_listing1.json"), "--device", "stratix10", "--partition"]


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "utf8", "digits", "deep", "folder"])
def test_a_partition_file_is_read_bounded(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "part.json"
    if kind == "fifo":
        os.mkfifo(path)  # reading it would block forever
    elif kind == "dev-zero":
        path = Path("/dev/zero")  # reading it would run out of memory
    elif kind == "utf8":
        path.write_bytes(b'{"parts": [["\xff"]]}')
    elif kind == "digits":
        path.write_text('{"parts": [[' + "9" * 5000 + "]]}")
    elif kind == "deep":
        path.write_text('{"parts": ' + "[" * 100_000 + "]" * 100_000 + "}")
    else:
        path = tmp_path
    error = one_line_error([*PARTITIONED, str(path)])
    assert {"fifo": "not a regular file", "dev-zero": "not a regular file", "utf8": "not UTF-8",
            "digits": "not a partition file", "deep": "part.json",
            "folder": "is a directory"}[kind] in error  # fmt: skip


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "utf8", "large"])
def test_calibration_reports_are_read_bounded(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "r.csv"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev-zero":
        path = Path("/dev/zero")
    elif kind == "utf8":
        path.write_bytes(b"unroll,iterate,alm\n1,1,\xff\n")
    else:
        path.write_text("#" * (2 << 20))
    args = ["calibrate", str(EXAMPLES / "laplace2d.soda"), "--device", "de5", "--arch", "pcm", "--reports"]
    error = one_line_error([*args, str(path), "--shape", "32768,4096"])
    assert {"fifo": "not a regular file", "dev-zero": "not a regular file", "utf8": "not UTF-8",
            "large": "larger than the limit"}[kind] in error  # fmt: skip


def test_a_device_file_fifo_and_infinite_numbers(tmp_path: Path) -> None:
    fifo = tmp_path / "dev.json"
    os.mkfifo(fifo)
    assert "not a regular file" in one_line_error(["estimate", JACOBI, "--device", str(fifo)])
    doc = json.loads((DEVICE_FILES / "ku060.json").read_text())
    doc["clock_mhz"] = float("inf")
    path = tmp_path / "inf.json"
    path.write_text(json.dumps(doc))  # Python writes Infinity, which is not JSON
    assert "clock_mhz: Infinity is not a number" in one_line_error(
        ["estimate", JACOBI, "--device", str(path)]
    )
    path.write_text(json.dumps(doc).replace("Infinity", "1e400"))  # JSON, read as infinity
    assert "clock_mhz: must be a finite number" in one_line_error(["estimate", JACOBI, "--device", str(path)])


def test_an_input_array_fifo_is_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "v.npy"
    os.mkfifo(fifo)
    assert "not a regular file" in one_line_error(
        ["run", JACOBI, "--input", f"v={fifo}", "--out", str(tmp_path)]
    )


def test_a_constant_too_large_for_its_type(tmp_path: Path) -> None:
    program = tmp_path / "big.soda"
    program.write_text(Path(JACOBI).read_text().replace("0.2f", "9223372036854775808"))
    error = one_line_error(["run", str(program), "--shape", "16,16", "--out", str(tmp_path / "o")])
    assert "does not fit" in error


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (["codegen", JACOBI, "--target", "hls", "--out", "OUT", "--seed", "-1"], "--seed"),
        (
            ["explore", JACOBI, "--device", "ku060", "--iterations", str(10**23), "--no-simulate"],
            "--iterations",
        ),
        (["simulate", JACOBI, "--shape", "16,16", "--max-cycles", "-1", "--out", "OUT"], "--max-cycles"),
    ],
)
def test_out_of_range_options_are_one_line_errors(tmp_path: Path, args: list[str], reason: str) -> None:
    args = [str(tmp_path / "o") if a == "OUT" else a for a in args]
    assert reason in one_line_error(args)
    assert not (tmp_path / "o").exists()


def test_a_simulation_cut_short_publishes_no_outputs(tmp_path: Path) -> None:
    out = tmp_path / "sim"
    res = CliRunner().invoke(
        main, ["simulate", JACOBI, "--shape", "16,16", "--max-cycles", "10", "--out", str(out)]
    )
    assert res.exit_code == 1, res.output
    assert "outputs not written" in res.output
    assert not out.exists() or not list(out.iterdir())


# ----------------------------------------------------------------------------- §10 work, not wall clock


def test_the_fuzz_check_judges_behaviour_not_speed() -> None:
    from tests.fuzz import Outcome, check

    assert check(Outcome("slow", ["analyze"], 0, "", 1e9, None)) is None


def test_a_soda_field_named_like_a_function_is_refused(tmp_path: Path) -> None:
    program = tmp_path / "maxin.soda"
    program.write_text(re.sub(r"\bv\(", "max(", Path(JACOBI).read_text()))
    assert "function's name" in one_line_error(
        ["run", str(program), "--shape", "16,16", "--out", str(tmp_path)]
    )


def test_a_design_too_large_to_build_is_refused_at_once() -> None:
    args = ["--unroll", "1024", "--iterate", "1024"]
    assert "at most 4,096" in one_line_error(["estimate", JACOBI, "--device", "ku060", *args])
    assert "at most 4,096" in one_line_error(["analyze", JACOBI, *args])


@pytest.mark.parametrize("script", ["exit 1", "kill -9 $$"])
def test_a_failing_or_killed_c_compiler_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: str
) -> None:
    cc = tmp_path / "cc"
    cc.write_text(f"#!/bin/sh\n{script}\n")
    cc.chmod(0o755)
    monkeypatch.setenv("CC", str(cc))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("STENCILMAP_CACHE_DIR", str(tmp_path / "cache"))
    program = tmp_path / "p.soda"  # a kernel no other test built in this process
    program.write_text(Path(JACOBI).read_text().replace("0.2f", f"0.{len(script)}7f"))
    error = one_line_error(
        ["run", str(program), "--backend", "cpu", "--shape", "64,64", "--out", str(tmp_path / "o")]
    )
    assert "the C compiler" in error and ("killed by SIGKILL" in error or "exit status 1" in error)


def test_codegen_verify_leaves_no_temporaries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tempfile

    private = tmp_path / "tmp"
    private.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(private))
    program = tmp_path / "p.soda"  # a kernel no other test compiled in this process
    program.write_text(Path(JACOBI).read_text().replace("0.2f", "0.23f"))
    res = CliRunner().invoke(main, ["codegen", str(program), "--target", "hls", "--shape", "16,16", "--verify",
                                    "--out", str(tmp_path / "code")])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert list(private.iterdir()) == []
