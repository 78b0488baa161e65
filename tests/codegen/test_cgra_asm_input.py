"""Hostile CGRA assembly read by ``simulate --from-asm`` (``codegen.cgra_asm.read_asm``): each edit is one
``error: FILE:LINE: ...`` line and exit status 2, read at once — a worker count past what the instructions
place, a repeated directive, a ``.fabric`` that is not its device's, a FIFO or ``/dev/zero`` (never opened
for reading), a file over the size limit, binary, truncated or non-ASCII-digit text."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from stencilmap.cli import analyze_cmd
from stencilmap.cli.simulate import simulate_cmd
from stencilmap.codegen import cgra_asm
from stencilmap.codegen.cgra_asm import parse_asm, read_asm
from stencilmap.errors import StencilmapError
from tests.conftest import EXAMPLES, special_files

runner = CliRunner()
PROGRAM = EXAMPLES / "stencil1d_r8.json"
SHAPE = ["--shape", "64"]


@pytest.fixture(scope="module")
def text(tmp_path_factory: pytest.TempPathFactory) -> str:
    asm = tmp_path_factory.mktemp("asm") / "cg.asm"
    result = runner.invoke(analyze_cmd, [str(PROGRAM), "--arch", "cgra", *SHAPE, "--asm", str(asm)])
    assert result.exit_code == 0, result.output
    return asm.read_text()


def _simulate(path: Path, tmp_path: Path) -> tuple[int, str]:
    args = [str(PROGRAM), "--arch", "cgra", *SHAPE, "--from-asm", str(path), "--out", str(tmp_path / "out")]
    result = runner.invoke(simulate_cmd, args)
    return result.exit_code, result.output


def _line_of(text: str, pattern: str) -> int:
    return next(n for n, s in enumerate(text.splitlines(), 1) if re.match(pattern, s))


def _edit(text: str, pattern: str, new: str) -> str:
    edited = re.sub(pattern, new, text, count=1, flags=re.M)
    assert edited != text, pattern
    return edited


def _refused(text: str, tmp_path: Path, line: int | None, *words: str) -> str:
    """Simulating ``text`` is one error line at ``FILE:line`` (or naming the file), exit status 2."""
    asm = tmp_path / "cg.asm"
    asm.write_text(text, encoding="utf-8")
    code, out = _simulate(asm, tmp_path)
    lines = out.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "Traceback" not in out, out
    where = f"{asm}:{line}: " if line is not None else f"{asm}: "
    assert lines[0].startswith(f"error: {where}"), out
    for w in words:
        assert w in lines[0], out
    assert not (tmp_path / "out").exists()
    return lines[0]


def test_the_text_runs(text: str, tmp_path: Path) -> None:
    asm = tmp_path / "cg.asm"
    asm.write_text(text)
    assert _simulate(asm, tmp_path)[0] == 0


@pytest.mark.parametrize("count", ["1000000000", "7", "99999999999999"])
def test_more_workers_than_the_instructions_place_are_refused(text: str, tmp_path: Path, count: str) -> None:
    """The simulator walks every worker's columns: a billion workers used to hang it (memory_needed)."""
    edited = _edit(text, r"^\.workers \d+$", f".workers {count}")
    _refused(edited, tmp_path, _line_of(text, r"\.workers"), "worker", "has no AGEN")


def test_a_huge_worker_count_is_refused_by_parse_asm_at_once(text: str) -> None:
    with pytest.raises(StencilmapError, match=r"^t\.asm:\d+: \.workers 10{14}: worker \d+ has no AGEN"):
        parse_asm(_edit(text, r"^\.workers \d+$", ".workers " + "1" + "0" * 14), "t.asm")
    with pytest.raises(StencilmapError, match="must be at most"):
        parse_asm(_edit(text, r"^\.workers \d+$", ".workers " + "9" * 5000), "t.asm")


@pytest.mark.parametrize(
    "directive", [".program", ".fabric", ".shape", ".dtype", ".workers", ".layers", ".kind", ".strips"]
)
def test_a_repeated_directive_is_refused_where_it_repeats(text: str, tmp_path: Path, directive: str) -> None:
    first = _line_of(text, re.escape(directive) + " ")
    edited = _edit(text, rf"^({re.escape(directive)} .*)$", r"\1\n\1")
    _refused(edited, tmp_path, first + 1, f"{directive} given twice (first on line {first})")


@pytest.mark.parametrize(
    ("pattern", "new", "words"),
    [
        (r"grid=\d+x", "grid=1000000000x", "larger than device"),
        (r"queue_entries=\d+", "queue_entries=1000000000", "queue_entries=1000000000, but device"),
        (r"storage_words=\d+", "storage_words=100000000000000", "storage_words"),
        (r"mem_latency=\d+", "mem_latency=0", "mem_latency=0, but device"),
        (r"^\.fabric \S+", ".fabric no-such-device", "unknown device"),
    ],
)
def test_a_fabric_that_is_not_its_devices_is_refused(
    text: str, tmp_path: Path, pattern: str, new: str, words: str
) -> None:
    _refused(_edit(text, pattern, new), tmp_path, _line_of(text, r"\.fabric"), words)


def test_queue_depths_latencies_and_offsets_are_bounded(text: str, tmp_path: Path) -> None:
    load = _line_of(text, r"LOAD ")
    _refused(_edit(text, r"\[8\]", "[1000000000]"), tmp_path, load, "depth 1000000000 exceeds")
    _refused(_edit(text, r"lat=40", "lat=1000000000"), tmp_path, load, "lat=1000000000")
    read = _line_of(text, r"\.read ")
    _refused(_edit(text, r"^\.read u 0,0,-8$", ".read u 0,0,-100000000"), tmp_path, read, "past the grid")
    filt = _line_of(text, r"FILTER .*offset=")
    edited = _edit(text, r"^(FILTER .*offset=)0,0,-?\d+", r"\g<1>0,0,100000000")
    _refused(edited, tmp_path, filt, "past the grid")


@pytest.mark.parametrize(
    ("pattern", "new", "words"),
    [
        (r"^\.layers 1$", ".layers 1 2", "takes one count"),
        (r"^\.layers 1$", ".layers 1\n.preserve x", "takes no arguments"),
        (r"^\.layers 1$", ".layers 1\n.frobnicate 3", "unknown directive"),
        (r"^\.workers (\d+)$", ".workers ٦", "expected an integer"),  # other scripts' digits
        (r"^\.workers (\d+)$", ".workers 1_0", "expected an integer"),
        (r"^\.program \S+", ".program ステンシル\u202e", "neither a plain word"),
        (r"^\.dtype float64$", ".dtype float64\x00\x01\x02\xff", "unknown type"),
        (r"^\.layers 1$", ".layers 1 " + "x" * 300_000, "takes one count"),
    ],
)
def test_hostile_edits_name_the_line(text: str, tmp_path: Path, pattern: str, new: str, words: str) -> None:
    line = _line_of(text, pattern.replace("$", "").lstrip("^"))
    if "\n" in new:
        line += 1
    message = _refused(_edit(text, pattern, new), tmp_path, line, words)
    assert len(message) < 400  # a long token is quoted clipped


def test_truncated_binary_and_empty_text_name_the_line(text: str, tmp_path: Path) -> None:
    lines = text.splitlines(keepends=True)
    half = "".join(lines[: len(lines) // 2])
    _refused(half, tmp_path, len(lines) // 2, "one DONE")  # the header complete, the instructions cut
    cut = text[: text.index("\nLOAD") + 20]
    _refused(cut, tmp_path, cut.count("\n") + 1)
    _refused("", tmp_path, 1, "the header lacks .program")
    asm = tmp_path / "cg.asm"
    asm.write_bytes(text.encode()[:400] + b"\xff\xfe" + text.encode()[400:])
    code, out = _simulate(asm, tmp_path)
    assert code == 2 and out.strip() == f"error: {asm}: not UTF-8 text (byte 400)"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_or_device_is_refused_without_reading(tmp_path: Path) -> None:
    for path in special_files(tmp_path):
        code, out = _simulate(path, tmp_path)
        assert code == 2 and out.strip() == f"error: {path}: not a regular file"


def test_a_file_over_the_limit_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cgra_asm, "MAX_ASM_BYTES", 100)
    asm = tmp_path / "big.asm"
    asm.write_text("#" * 101)
    with pytest.raises(StencilmapError, match=r"^.*big\.asm: larger than the limit of 100 bytes"):
        read_asm(asm)
