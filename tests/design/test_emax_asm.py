"""The EMAX mnemonics as a program (design/emax/asm.py, sim/emax.py): written → parsed → written is
identical on every example and corpus program that maps; the parsed text simulates valid; an edited
coefficient, ``dist`` or placement changes the result or is refused; malformed text says FILE:LINE."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from stencilmap.backends.reference import run_reference
from stencilmap.cli.analyze import analyze_cmd
from stencilmap.cli.simulate import simulate_cmd
from stencilmap.design.emax import map_emax
from stencilmap.design.emax.asm import assemble, write_mnemonics
from stencilmap.design.registry import BuildConfig
from stencilmap.device.catalog import load_device
from stencilmap.errors import StencilmapError
from stencilmap.program import Program, load_program
from stencilmap.program.data import bind_shape, make_inputs
from stencilmap.sim.emax import EmaxRun, simulate_emax
from stencilmap.sim.validate import validate
from tests.conftest import CORPUS_SODA, CORPUS_STENCILFLOW, EXAMPLE_FILES, EXAMPLES

runner = CliRunner()
DEVICE = load_device("emax")
JACOBI = EXAMPLES / "jacobi3d.soda"


def _bound(path: Path) -> Program:
    program = load_program(path)
    return bind_shape(program, {}, (8, 12, 20) if program.rank == 3 else (16, 24))


def _mapped(path: Path, p: int | None = None) -> tuple[Program, str] | None:
    """The program and its written mnemonics, or None when the EMAX library cannot serve it."""
    try:
        program = _bound(path)
        return program, write_mnemonics(map_emax(program, BuildConfig(unroll=p)))
    except StencilmapError:
        return None


def _run(program: Program, text: str) -> tuple[bool, EmaxRun]:
    """Assemble ``text``, simulate it, and validate it against the reference."""
    values = make_inputs(program, {}, 0)
    m = assemble(text, "edit.asm", program)
    run = simulate_emax(m, values[m.field], DEVICE)
    ref = run_reference(program, values)
    out = {m.output: run.output.reshape(ref.outputs[m.output].shape)}
    return validate("done", out, ref.outputs, ref.defined).valid, run


PROGRAMS = [p for p in [*EXAMPLE_FILES, *CORPUS_SODA, *CORPUS_STENCILFLOW] if p.suffix in (".soda", ".json")]


def test_some_programs_map() -> None:
    mapped = [p.name for p in PROGRAMS if _mapped(p) is not None]
    assert {"jacobi3d.soda", "star3d_degree2.soda", "star3d_degree3.soda", "laplace2d.soda"} <= set(mapped)


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.name)
def test_round_trip_and_simulate_from_text(path: Path) -> None:
    """write → parse → write is identical, the parsed mapping is the built one, and it simulates valid."""
    got = _mapped(path)
    if got is None:
        pytest.skip("the EMAX library does not serve it")
    program, text = got
    m = assemble(text, "t.asm", program)
    assert write_mnemonics(m) == text
    assert m == map_emax(program, BuildConfig())
    valid, _ = _run(program, text)
    assert valid


@pytest.mark.parametrize(
    ("name", "p"), [("jacobi3d.soda", 1), ("jacobi3d.soda", 2), ("star3d_degree3.soda", 1)]
)
def test_round_trip_other_packings(name: str, p: int) -> None:
    got = _mapped(EXAMPLES / name, p)
    assert got is not None
    program, text = got
    assert write_mnemonics(assemble(text, "t.asm", program)) == text


# ------------------------------------------------------------------------------------------ edits


def _jacobi(p: int = 1) -> tuple[Program, str]:
    got = _mapped(JACOBI, p)
    assert got is not None
    return got


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def _edit(text: str, pattern: str, new: str) -> str:
    """``text`` with the one line matching ``pattern`` replaced by ``new`` (keeps the count at one)."""
    lines = _lines(text)
    hits = [n for n, s in enumerate(lines) if re.search(pattern, s)]
    assert len(hits) == 1, (pattern, hits)
    lines[hits[0]] = new + "\n"
    return "".join(lines)


def _set_dist(text: str, dist: int) -> str:
    """Every dist-1 load and the header set to ``dist``."""
    return re.sub(r" 1\n", f" {dist}\n", text).replace("dist 1,", f"dist {dist},")


def test_edited_coefficient_changes_the_result() -> None:
    program, text = _jacobi()
    edited = text.replace("A[z][y-1] * 0.1 ", "A[z][y-1] * 0.3 ")
    assert edited != text
    assert _run(program, text)[0]
    assert not _run(program, edited)[0]


@pytest.mark.parametrize("p", [1, 2])
def test_every_dist_changes_the_result_or_is_refused(p: int) -> None:
    """Setting every dist from 0 to 8: only the library's dist 1 gives valid data with its reuse; the
    others compute wrong data, move more streams (the reuse lost), or are refused (outside the ring)."""
    program, text = _jacobi(p)
    ok, base = _run(program, text)
    assert ok
    outcomes: dict[int, str] = {}
    for dist in range(9):
        if dist == 1:
            continue
        try:
            valid, run = _run(program, _set_dist(text, dist))
        except StencilmapError as exc:
            assert "outside the ring" in str(exc)
            outcomes[dist] = "refused"
            continue
        assert not valid or run.lmm_streams > base.lmm_streams, dist
        outcomes[dist] = "valid, more streams" if valid else "wrong data"
    assert "wrong data" in outcomes.values() and "refused" in outcomes.values()
    assert outcomes[0] == "valid, more streams"  # dist 0: no reuse, every stream moved each time


def test_moving_a_y_load_reads_a_stale_stream() -> None:
    """The Y−1 load moved from row 0 to the free EAG of row 3: the shifted column keeps the wrong LMMs."""
    program, text = _jacobi()
    line = next(s for s in _lines(text) if "A[z][y-1] <- lmm" in s)
    moved = _edit(text, r"A\[z\]\[y-1\] <- lmm", "    3" + line[5:].rstrip("\n"))
    valid, _ = _run(program, moved)
    assert not valid


def test_two_loads_on_one_lmm_are_refused() -> None:
    """A Z load given dist 1 shifts onto the fixed Z load's LMM: one port, refused at run time."""
    program, text = _jacobi()
    line = next(s for s in _lines(text) if "A[z-1][y] <- lmm" in s).rstrip("\n")
    edited = _edit(text, r"A\[z-1\]\[y\] <- lmm", line[:-1] + "1")
    with pytest.raises(StencilmapError, match="one port"):
        _run(program, edited)


@pytest.mark.parametrize(
    ("pattern", "replace", "message"),
    [
        # a FIFO moved off its LMM's row
        (r"EX1  FIFO  p0.x-1", lambda s: "    2" + s[5:], "a FIFO is filled by an LMM of its own row"),
        # an ALU op moved above the row that produces its operand
        (r"FADD  p0.sum", lambda s: "    2" + s[5:], "a value flows to later rows"),
        # onto a unit another op holds
        (r"FMUL  p0.px0", lambda s: s.replace("   3   0 EX1", "   3   1 EX1"), "one op per unit"),
        # outside the rows × columns
        (r"FMUL  p0.px0", lambda s: s.replace("   3   0 EX1", "   3   9 EX1"), "outside the header"),
        # an ALU op on the EAG, a FIFO on EX2
        (r"FADD  p0.sum", lambda s: s.replace("EX1  FADD", "EAG  FADD"), "FADD runs on EX1 or EX2"),
        (r"FIFO  p0.x\+1", lambda s: s.replace("EX1  FIFO", "EX2  FIFO"), "FIFO runs on EX1"),
        # dist on an ALU op
        (r"FADD  p0.sum", lambda s: s[:-1] + "1", "only LD has it"),
        # an operand nobody writes
        (r"FADD  p0.sum", lambda s: s.replace("p0.acc2", "p0.acc9"), "written by no instruction"),
        # a FIFO tap beyond the degree
        (r"FIFO  p0.x\+1", lambda s: s.replace("@x+1", "@x+2"), "not a neighbour tap"),
        # unknown op, garbled operands, bad numbers
        (r"FADD  p0.sum", lambda s: s.replace("FADD", "FSUB"), "unknown op 'FSUB'"),
        (r"FADD  p0.sum", lambda s: s.replace("<-", "=="), "cannot read FADD's operands"),
        (r"FMUL  p0.px0", lambda s: s.replace("* 0.1", "* zero"), "cannot read FMUL's operands"),
        (r"FADD  p0.sum", lambda s: "  x" + s[3:], "row 'x' is not an integer"),
        # rgi read where no RGI is
        (r"FMA   p0.acc0a", lambda s: s.replace("A[z][y-1] *", "rgi *"), "only FMA reads rgi"),
        (r"FADD  p0.sum", lambda s: s.replace("p0.s0a,", "rgi,"), "only FMA reads rgi"),
        # RGI where nothing reads it
        (r"FADD  p0.sum", lambda s: s.replace(" 0        0", " 5        0"), "never read"),
        # a store of a plane that does not exist, and a load of no stream
        (r"ST    p0.out", lambda s: s.replace("p0.out", "p3.out"), "ST writes a plane's result"),
        (
            r"A\[z\]\[y-1\] <- lmm",
            lambda s: s.replace("A[z][y-1] <- lmm", "B[z][y-1] <- lmm"),
            "names its stream",
        ),
    ],
)
def test_broken_rules_say_file_and_line(pattern: str, replace: object, message: str) -> None:
    program, text = _jacobi()
    lines = _lines(text)
    n = next(k for k, s in enumerate(lines) if re.search(pattern, s))
    assert callable(replace)
    lines[n] = replace(lines[n].rstrip("\n")) + "\n"
    with pytest.raises(StencilmapError) as caught:
        assemble("".join(lines), "edit.asm", program)
    assert str(caught.value).startswith("edit.asm:"), str(caught.value)
    assert message in str(caught.value)
    line = int(str(caught.value).split(":")[1])
    assert 1 <= line <= len(lines)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "expected the header"),
        ("# nothing here\n", "expected the header"),
        (
            "# x: EMAX mapping of a degree-1 star, p = 1, 7 rows × 4 columns, dist 1, 1 X chunk(s) of 20 points on emax\n",
            "no instructions",
        ),
        (
            "# x: EMAX mapping of a degree-2 star, p = 1, 7 rows × 4 columns, dist 1, 1 X chunk(s) of 20 points on emax\n",
            "degree 2",
        ),
        (
            "# x: EMAX mapping of a degree-1 star, p = 1, 7 rows × 40 columns, dist 1, 1 X chunk(s) of 20 points on emax\n",
            "do not fit",
        ),
        (
            "# x: EMAX mapping of a degree-1 star, p = 1, 7 rows × 4 columns, dist 1, 1 X chunk(s) of 20 points on nodevice\n",
            "nodevice",
        ),
    ],
)
def test_malformed_headers(text: str, message: str) -> None:
    program, _ = _jacobi()
    with pytest.raises(StencilmapError, match=message) as caught:
        assemble(text, "h.asm", program)
    assert str(caught.value).startswith("h.asm:1:")


def test_rows_must_be_the_papers(tmp_path: Path) -> None:
    """Every instruction moved one row down (header rows 8): §4.6 gives 7 rows for degree 1, p = 1."""
    program, text = _jacobi()
    lines = _lines(text)
    shifted = [lines[0].replace("7 rows", "8 rows"), lines[1]] + [
        f"  {int(s.split()[0]) + 1:3d}" + s[5:] for s in lines[2:]
    ]
    with pytest.raises(StencilmapError, match=r"§4\.6 gives 7"):
        assemble("".join(shifted), "s.asm", program)


# ------------------------------------------------------------------------------------------ the CLI


def test_simulate_from_asm_cli(tmp_path: Path) -> None:
    """analyze --asm writes the text, simulate --from-asm runs it: 0 valid, 1 on an edit, 2 malformed."""
    asm = tmp_path / "j3.asm"
    shape = ["--shape", "8,12,20"]
    r = runner.invoke(
        analyze_cmd, [str(JACOBI), "--arch", "emax", "--unroll", "1", *shape, "--asm", str(asm)]
    )
    assert r.exit_code == 0, r.output
    base = [str(JACOBI), "--arch", "emax", *shape, "--out", str(tmp_path / "o"), "--json"]
    r = runner.invoke(simulate_cmd, [*base, "--from-asm", str(asm)])
    assert r.exit_code == 0, r.output
    assert '"lmm_streams": 264' in r.output
    text = asm.read_text(encoding="utf-8")
    (tmp_path / "d2.asm").write_text(_set_dist(text, 2), encoding="utf-8")
    r = runner.invoke(simulate_cmd, [*base, "--from-asm", str(tmp_path / "d2.asm")])
    assert r.exit_code == 1, r.output
    (tmp_path / "bad.asm").write_text(text.replace("FADD", "FSUB", 1), encoding="utf-8")
    r = runner.invoke(simulate_cmd, [*base, "--from-asm", str(tmp_path / "bad.asm")])
    assert r.exit_code == 2
    assert re.search(r"bad\.asm:\d+: unknown op 'FSUB'", r.output)
    assert "Traceback" not in r.output
    r = runner.invoke(simulate_cmd, [str(EXAMPLES / "jacobi2d.soda"), "--from-asm", str(asm)])
    assert r.exit_code == 2 and "--from-asm" in r.output


def test_mutated_text_is_run_or_refused_in_one_line() -> None:
    """400 seeded token swaps (tokens of the text itself, rgi, out-of-range and non-finite numbers): each
    assembles and simulates, or is refused with one line naming the file and line — never a traceback."""
    import random

    program, text = _jacobi(2)
    values = make_inputs(program, {}, 0)
    lines = _lines(text)
    tokens = [*sorted(set(re.findall(r"[^\s,]+", text))), "rgi", "-1", "99", "1e400", "nan"]
    rng = random.Random(7)
    refused = 0
    for _ in range(400):
        edited = list(lines)
        k = rng.randrange(2, len(edited))
        parts = re.split(r"([\s,]+)", edited[k])
        words = [i for i, x in enumerate(parts) if x and not re.fullmatch(r"[\s,]+", x)]
        parts[rng.choice(words)] = rng.choice(tokens)
        edited[k] = "".join(parts)
        try:
            m = assemble("".join(edited), "m.asm", program)
            simulate_emax(m, values[m.field], DEVICE)
        except StencilmapError as exc:
            refused += 1
            assert "\n" not in str(exc) and re.match(r"m\.asm:\d+: |EMAX execution", str(exc)), str(exc)
    assert refused > 300
