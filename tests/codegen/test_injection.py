"""Names are data (issue: a program's file name ran code through ``codegen --verify``). A hostile file
name, device file or partition file goes through every target: the generated text holds the name only
escaped, the verification runs valid and creates nothing, and names with control characters are
refused with one line and exit status 2."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from stencilmap.device.catalog import device_text, load_device
from stencilmap.errors import StencilmapError
from stencilmap.names import comment, dot_string
from tests.conftest import EXAMPLES

#: File stems a checkout or an archive may carry: each one, written raw into a C comment, a string, a
#: Makefile, a DOT graph or Markdown, would end it and run or show what follows.
HOSTILE = [
    "x\\",
    "end\\ int pwned = system(0); #",
    'q"); int pwned = std::system("touch PWNED"); int z("',
    "t??=define pwned",
    "b`<img src=x onerror=alert(1)>`",
    "$(touch PWNED)",
]
CONTROL = ["x\nstatic int p = std::system(0);", "x\rb", "x\u202eb", "x\x1b[31mred", "x\x1b]0;pwn\x07y"]


def _cli(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2] / "src"))
    return subprocess.run(
        [sys.executable, "-m", "stencilmap", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env,
    )


def _copy(src: Path, folder: Path, stem: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    dst = folder / f"{stem}{src.suffix}"
    shutil.copyfile(src, dst)
    return dst


def _texts(folder: Path) -> dict[Path, str]:
    return {p: p.read_text(encoding="utf-8", errors="replace") for p in folder.rglob("*") if p.is_file()}


def _assert_escaped(folder: Path, name: str) -> None:
    """The raw name appears in no generated file (it may appear escaped); nothing was created by it."""
    assert comment(name) != name
    texts = _texts(folder)
    assert texts, "nothing generated"
    for path, text in texts.items():
        if path.suffix == ".dot":  # a DOT string spells a backslash as two
            text = text.replace(dot_string(name)[1:-1], "")
        assert name not in text, f"{path.name} holds the raw name {name!r}"


#: (program, arch, target, extra options): every code target; --verify compiles and runs each one.
TARGETS = [
    ("jacobi2d.soda", "soda", "hls", ["--shape", "16,16", "--unroll", "2"]),
    ("dag_listing1.json", "stencilflow", "hls", ["--shape", "4,8,8"]),
    ("laplace2d.soda", "pcm", "hls", ["--shape", "16,16"]),
    ("dag_listing1.json", "stencilflow", "opencl", ["--shape", "4,8,8"]),
]


@pytest.mark.parametrize("name", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_name_in_every_code_target(tmp_path: Path, name: str) -> None:
    for i, (example, arch, target, extra) in enumerate(TARGETS):
        prog = _copy(EXAMPLES / example, tmp_path / f"p{i}", name)
        out = tmp_path / f"out{i}"
        verify = ["--verify"] if name == HOSTILE[2] else []  # compiling every pair is slow: once suffices
        done = _cli("codegen", prog, "--target", target, "--arch", arch, *extra, "--out", out, *verify,
                    cwd=tmp_path)  # fmt: skip
        assert done.returncode == 0, done.stderr
        _assert_escaped(out, name)
    assert not list(tmp_path.rglob("PWNED")) and not (Path.cwd() / "PWNED").exists()


@pytest.mark.parametrize("name", HOSTILE[:3], ids=range(3))
def test_hostile_name_in_split_pcm_and_artifacts(tmp_path: Path, name: str) -> None:
    """OpenCL PCM, the SMI split over devices, the DOT graph, CGRA assembly and DFG, EMAX mnemonics."""
    lap = _copy(EXAMPLES / "laplace2d.soda", tmp_path / "a", name)
    dag = _copy(EXAMPLES / "dag_listing1.json", tmp_path / "b", name)
    one = _copy(EXAMPLES / "stencil1d_r8.json", tmp_path / "c", name)
    star = _copy(EXAMPLES / "star3d_degree2.soda", tmp_path / "d", name)
    runs = [
        ("codegen", lap, "--target", "opencl", "--arch", "pcm", "--shape", "16,16", "--out", tmp_path / "o1"),
        ("codegen", dag, "--target", "opencl", "--device", "stratix10", "--devices", "2", "--shape", "4,8,8",
         "--out", tmp_path / "o2"),
        ("analyze", dag, "--arch", "stencilflow", "--shape", "4,8,8", "--dot", tmp_path / "o3" / "d.dot"),
        ("analyze", one, "--arch", "cgra", "--shape", "512", "--asm", tmp_path / "o4" / "a.s",
         "--dot", tmp_path / "o4" / "g.dot"),
        ("analyze", star, "--arch", "emax", "--shape", "8,8,16", "--asm", tmp_path / "o5" / "e.s"),
    ]  # fmt: skip
    for i, args in enumerate(runs, start=1):
        (tmp_path / f"o{i}").mkdir(exist_ok=True)
        done = _cli(*args, cwd=tmp_path)
        assert done.returncode == 0, (args, done.stderr)
        _assert_escaped(tmp_path / f"o{i}", name)


@pytest.mark.parametrize("name", CONTROL, ids=range(len(CONTROL)))
def test_control_characters_in_a_file_name_are_refused(tmp_path: Path, name: str) -> None:
    prog = _copy(EXAMPLES / "dag_listing1.json", tmp_path / "p", name)
    done = _cli(
        "codegen", prog, "--target", "hls", "--shape", "4,8,8", "--out", tmp_path / "out", cwd=tmp_path
    )
    assert done.returncode == 2
    assert "control or format character U+" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.isprintable() or done.stderr[:-1].isprintable()  # the name escaped in the line too
    assert not (tmp_path / "out").exists()


def _device_file(tmp_path: Path, **changes: object) -> Path:
    doc = json.loads(device_text("stratix10")[0])
    doc.update(changes)
    path = tmp_path / "board.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    load_device.cache_clear()
    return path


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [
        ("name", "s10\nint pwned;", "name"),
        ("name", 'a"; system("x', "name"),
        ("name", "<script>alert(1)</script>", "name"),
        ("part", "$(touch PWNED)", "part"),
        ("part", "X\\", "part"),
        ("description", "one\nint pwned;", "description"),
        ("description", "left\u202eright", "description"),
    ],
)
def test_device_file_names_are_refused(tmp_path: Path, field: str, value: str, says: str) -> None:
    path = _device_file(tmp_path, **{field: value})
    with pytest.raises(StencilmapError) as info:
        load_device(str(path))
    assert says in str(info.value) and "\n" not in str(info.value)
    done = _cli("estimate", EXAMPLES / "dag_listing1.json", "--device", path, cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_partition_file_names_must_be_the_programs(tmp_path: Path) -> None:
    part = tmp_path / "parts.json"
    part.write_text(json.dumps({"parts": [["b0", "b1"], ["b2", "b3", "b4\n#include <cstdlib>"]]}))
    done = _cli("codegen", EXAMPLES / "dag_listing1.json", "--target", "opencl", "--device", "stratix10",
                "--partition", part, "--shape", "4,8,8", "--out", tmp_path / "out", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.skipif(shutil.which("make") is None, reason="no make")
def test_a_devices_part_reaches_the_synthesis_command_as_one_word(tmp_path: Path) -> None:
    """The HLS Makefile hands ``PART`` (a device file's part: letters, digits, spaces, ``()._+-``) to the
    shell quoted: ``make csynth`` with a part holding a command runs ``vitis_hls`` with that text as the
    part, and nothing else (a stand-in ``vitis_hls`` records what it got)."""
    from stencilmap.codegen.host_files import Board, hls_makefile

    board = Board("evil", "xcku060 touch PWNED (x)", "", 300.0, 1, "DDR")
    (tmp_path / "Makefile").write_text(hls_makefile("top", board, "api"), encoding="utf-8")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "vitis_hls").write_text('#!/bin/sh\nprintf "%s" "$PART" > got_part\n', encoding="utf-8")
    (bin_dir / "vitis_hls").chmod(0o755)
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    done = subprocess.run(
        ["make", "csynth"], cwd=tmp_path, env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "got_part").read_text() == "xcku060 touch PWNED (x)"
    assert not (tmp_path / "PWNED").exists()


@pytest.mark.parametrize("target", ["hls", "opencl"])
def test_names_generated_code_would_spell_alike_are_refused(tmp_path: Path, target: str) -> None:
    """``_v`` and ``v`` are both valid names, one identifier in generated code (leading and trailing
    underscores are dropped): refused with one line naming both, before anything is written (was: a C++
    redefinition error deep in the verification)."""
    text = (EXAMPLES / "jacobi2d_5pt.soda").read_text(encoding="utf-8")
    text = text.replace("float: v(128, *)", "float: v(128, *)\ninput dram 0 float: _v(128, *)")
    (tmp_path / "under.soda").write_text(text.replace("* v(0, 1)", "* _v(0, 1)"), encoding="utf-8")
    done = _cli("codegen", "under.soda", "--target", target, "--shape", "16,16", "--out", "o", cwd=tmp_path)
    assert done.returncode == 2 and done.stderr == (
        "error: under.soda: 'v' and '_v' are one name in generated code (v: leading and trailing underscores"
        " are dropped); rename one\n"
    )
    assert not (tmp_path / "o").exists()
