"""Hostile EMAX mnemonics read by ``simulate --from-asm`` (``design.emax.asm.read_mnemonics``): each is one
``error: FILE:LINE: ...`` line and exit status 2 — numbers of thousands of digits (Python's int() limit used to
raise a traceback), other scripts' digits, a FIFO or ``/dev/zero`` (never opened for reading), a file over the
size limit, binary, truncated and very long lines."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from stencilmap.cli.analyze import analyze_cmd
from stencilmap.cli.simulate import simulate_cmd
from stencilmap.design.emax import asm as emax_asm
from stencilmap.design.emax.asm import read_mnemonics
from stencilmap.errors import StencilmapError
from stencilmap.program import load_program
from stencilmap.program.data import bind_shape
from tests.conftest import EXAMPLES, special_files

runner = CliRunner()
JACOBI = EXAMPLES / "jacobi3d.soda"
SHAPE = ["--shape", "8,12,20"]
BIG = "9" * 5000


@pytest.fixture(scope="module")
def text(tmp_path_factory: pytest.TempPathFactory) -> str:
    asm = tmp_path_factory.mktemp("emax") / "e.asm"
    result = runner.invoke(analyze_cmd, [str(JACOBI), "--arch", "emax", *SHAPE, "--asm", str(asm)])
    assert result.exit_code == 0, result.output
    return asm.read_text()


def _simulate(path: Path, tmp_path: Path) -> tuple[int, str]:
    args = [str(JACOBI), "--arch", "emax", *SHAPE, "--from-asm", str(path), "--out", str(tmp_path / "out")]
    result = runner.invoke(simulate_cmd, args)
    return result.exit_code, result.output


def _edit(text: str, pattern: str, new: str) -> tuple[str, int]:
    """``text`` with the first match of ``pattern`` replaced, and the line it is on."""
    m = re.search(pattern, text, flags=re.M)
    assert m is not None, pattern
    return text[: m.start()] + m.expand(new) + text[m.end() :], text.count("\n", 0, m.start()) + 1


def _refused(text: str, tmp_path: Path, line: int, *words: str) -> None:
    asm = tmp_path / "e.asm"
    asm.write_text(text, encoding="utf-8")
    code, out = _simulate(asm, tmp_path)
    lines = out.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "Traceback" not in out, out
    assert lines[0].startswith(f"error: {asm}:{line}: "), out
    assert len(lines[0]) < 400, out  # a long token is quoted clipped
    for w in words:
        assert w in lines[0], out
    assert not (tmp_path / "out").exists()


def test_the_text_runs(text: str, tmp_path: Path) -> None:
    asm = tmp_path / "e.asm"
    asm.write_text(text)
    assert _simulate(asm, tmp_path)[0] == 0


@pytest.mark.parametrize(
    ("pattern", "new", "words"),
    [
        (r"p = 8", f"p = {BIG}", "p '999"),
        (r"p = 8", "p = 0", "p ≥ 1"),
        (r"p = 8", "p = 1000000000", "cannot serve"),
        (r"degree-1 ", f"degree-{BIG} ", "degree '999"),
        (r"1 X chunk", f"{BIG} X chunk", "X chunks '999"),
        (r"of 20 points", f"of {BIG} points", "chunk '999"),
        (r"20 rows", "1000000000 rows", "do not fit"),
        (r"8 columns", "0 columns", "do not fit"),
        (r"dist 1,", "dist 1000000000,", "the header says dist"),
        (r"lmm\[1:\+20\]", f"lmm[1:+{BIG}]", "word count '999"),
        (r"lmm\[1:\+20\] +1 ", f"lmm[{BIG}:+20] {BIG} ", "address '999"),
        (r"A\[z\]\[y-1\] <- lmm", f"A[z+{BIG}][y-1] <- lmm", "dz '+999"),
        (r"p0\.acc0a <-", f"p{BIG}.acc0a <-", "plane '999"),
        (r"@x-1", f"@x-{BIG}", "FIFO tap '-999"),
        (r"^    1   0 EAG", f"   {BIG}   0 EAG", "row '999"),
        (r"^    1   0 EAG", "    ١   0 EAG", "row '١' is not an integer"),  # other scripts' digits
        (r"^(    0   0 EAG .*)1$", r"\g<1>1_0", "dist '1_0' is not an integer"),
        (r"\* 0\.1 ", f"* {BIG} ", "not a finite number"),
        (r"\* 0\.1 ", "* ١.٥ ", "cannot read"),
        (r"A\[z\]\[y-1\] <- lmm", "A[z-1][\x00\xff\x01y] <- lmm", "cannot read LD"),
        (r"(    0   0 EAG  LD )", r"\g<1>" + "x" * 300_000, "cannot read LD"),
        (r"p0\.acc0a <- rgi, ", "p0.acc0a <- rgi, " + "A[" * 1000, "written by no instruction"),
    ],
)
def test_hostile_edits_name_the_line(text: str, tmp_path: Path, pattern: str, new: str, words: str) -> None:
    edited, line = _edit(text, pattern, new)
    _refused(edited, tmp_path, line, words)


def test_truncated_and_empty_text_name_the_line(text: str, tmp_path: Path) -> None:
    cut = text[: text.index(" FIFO") + 10]
    _refused(cut, tmp_path, cut.count("\n") + 1, "expected 'row col unit op")
    _refused("", tmp_path, 1, "expected the header")
    asm = tmp_path / "e.asm"
    asm.write_bytes(text.encode()[:300] + b"\xff\xfe" + text.encode()[300:])
    code, out = _simulate(asm, tmp_path)
    assert code == 2 and out.strip() == f"error: {asm}: not UTF-8 text (byte 300)"


def test_a_device_the_header_names_is_read_as_a_user_file(text: str, tmp_path: Path) -> None:
    edited, line = _edit(text, r"on emax$", "on /dev/zero")
    _refused(edited, tmp_path, line, "/dev/zero: not a regular file")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_or_device_is_refused_without_reading(tmp_path: Path) -> None:
    for path in special_files(tmp_path):
        code, out = _simulate(path, tmp_path)
        assert code == 2 and out.strip() == f"error: {path}: not a regular file"


def test_a_file_over_the_limit_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(emax_asm, "MAX_MNEMONICS_BYTES", 100)
    asm = tmp_path / "big.asm"
    asm.write_text("#" * 101)
    program = bind_shape(load_program(JACOBI), {}, (8, 12, 20))
    with pytest.raises(StencilmapError, match=r"big\.asm: larger than the limit of 100 bytes"):
        read_mnemonics(asm, program)
