"""The HLS kernel takes its number of rows at run time (issue 25; SODA §4.5: "T_{m-1} is determined by
the input and is a runtime parameter"): one generated folder, built once (``make csim`` and ``make
lib-csim``, with Xilinx's headers when ``../shared/vendor`` is present), computes bit-exact results at the
grid it was generated for and at fewer and more rows, through the testbench (``ROWS``) and through the C
binding (``rows``); the binding refuses other columns, and rows out of range, in one line."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from stencilmap.backends.reference import run_reference
from stencilmap.codegen.ctypes_ import storage
from stencilmap.codegen.registry import Generated, emit
from stencilmap.codegen.verify import read_outputs, write_data
from stencilmap.design.registry import BuildConfig
from stencilmap.errors import StencilmapError
from stencilmap.program.data import bind_shape
from stencilmap.program.ir import Program
from stencilmap.sim.validate import validate
from tests.codegen.helpers import write
from tests.codegen.test_vendor_rules import _make
from tests.conftest import EXAMPLES
from tests.sim.helpers import built, inputs_for, lanes_config, load_small

TILED = BuildConfig(unroll=2, iterate=3, tile=(24,), device="u280")

#: (example, arch, build, generated grid, other row counts): iteration with preserve (SODA's temporal
#: stages), 3-D copy boundaries, a lower-dimensional input and shrink margins, a 1-D program, tiles
#: (whose writer gathers the field on chip: at most the generated rows).
CASES = [
    ("jacobi2d.soda", "soda", lanes_config("soda", 2, device="u280"), (24, 32), (9, 41)),
    ("heat3d.json", "stencilflow", lanes_config("stencilflow", 2, device="u280"), (6, 8, 12), (3, 11)),
    ("dag_listing1.json", "stencilflow", lanes_config("stencilflow", 2, device="u280"), (6, 8, 8), (4, 9)),
    ("laplace2d.soda", "pcm", lanes_config("pcm", 2, device="u280"), (16, 24), (7, 30)),
    ("stencil1d_r8.json", "soda", lanes_config("soda", 2, device="u280"), (256,), (97, 401)),
    ("jacobi2d.soda", "soda", TILED, (20, 48), (7, 13)),
]


def _at(program: Program, rows: int) -> Program:
    shape = tuple(int(n or 0) for n in program.shape)
    return bind_shape(program, {}, (rows, *shape[1:]))


def _generate(
    name: str, arch: str, config: BuildConfig, shape: tuple[int, ...], tmp: Path
) -> tuple[Program, Generated]:
    program = bind_shape(load_small(EXAMPLES / name), {}, shape)
    try:
        program, design = built(program, arch, config)
    except StencilmapError as exc:
        pytest.skip(f"{arch} does not apply: {exc}")
    gen = emit("hls", design, program, inputs_for(program))
    write(gen, tmp)
    return program, gen


def _pointer(arr: np.ndarray) -> ctypes.c_void_p:
    return ctypes.c_void_p(arr.ctypes.data)


@pytest.mark.skipif(shutil.which("make") is None or shutil.which("g++") is None, reason="needs make and g++")
@pytest.mark.parametrize(
    ("name", "arch", "config", "shape", "others"),
    CASES,
    ids=[f"{c[0]}-{c[1]}{'-tiled' if c[2].tile else ''}" for c in CASES],
)
def test_one_build_runs_every_number_of_rows(
    name: str, arch: str, config: BuildConfig, shape: tuple[int, ...], others: tuple[int, ...], tmp_path: Path
) -> None:
    program, gen = _generate(name, arch, config, shape, tmp_path)
    if config.tile:
        assert dict(gen.files)["kernel.h"].count(f"#define SM_MAX_ROWS {shape[0]}L") == 1
    _make(tmp_path, f"{gen.top}_csim", "lib-csim")
    header = next(n for n, _ in gen.files if n.startswith("api/") and n.endswith(".h"))
    api = Path(header).stem
    lib = ctypes.CDLL(str(tmp_path / f"lib{api}_csim.so"))
    for rows in (shape[0], *others):
        prog = _at(program, rows)
        values = inputs_for(prog, seed=rows)
        ref = run_reference(prog, values)
        grid = (rows, *shape[1:])
        data, out = tmp_path / f"data{rows}", tmp_path / f"out{rows}"
        write_data(data, gen.ports, values)
        out.mkdir()
        done = subprocess.run(
            [f"./{gen.top}_csim", str(data), str(out), str(rows)],
            cwd=tmp_path,
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr
        got = read_outputs(out, gen.ports, grid)
        check = validate("done", got, ref.outputs, ref.defined)
        assert check.valid, (rows, "csim", check.first_mismatch)
        # the C binding: inputs then outputs in declaration order, then the sizes
        order = [i.name for i in prog.inputs] + list(prog.outputs)
        ins = sorted((p for p in gen.ports if p.direction == "in"), key=lambda p: order.index(p.field))
        args = [np.ascontiguousarray(np.asarray(values[p.field]).astype(storage(p.dtype))) for p in ins]
        outputs = {f: np.zeros(grid, storage(prog.field_dtype(f))) for f in prog.outputs}
        args += list(outputs.values())
        sizes = [ctypes.c_long(n) for n in grid]
        assert getattr(lib, api)(*[_pointer(a) for a in args], *sizes) == 0
        got = {k: v.astype(bool) if prog.field_dtype(k) == "bool" else v for k, v in outputs.items()}
        check = validate("done", got, ref.outputs, ref.defined)
        assert check.valid, (rows, "the C binding", check.first_mismatch)


@pytest.mark.skipif(shutil.which("make") is None or shutil.which("g++") is None, reason="needs make and g++")
def test_the_binding_refuses_other_columns_and_no_rows(tmp_path: Path) -> None:
    _, gen = _generate("jacobi2d.soda", "soda", CASES[0][2], (24, 32), tmp_path)
    _make(tmp_path, "lib-csim")
    header = next(n for n, _ in gen.files if n.startswith("api/") and n.endswith(".h"))
    api = Path(header).stem
    script = (
        "import ctypes, sys\n"
        "import numpy as np\n"
        f"lib = ctypes.CDLL({str(tmp_path / f'lib{api}_csim.so')!r})\n"
        "a = np.zeros(64 * 33, np.float32); b = np.zeros(64 * 33, np.float32)\n"
        "p = lambda x: ctypes.c_void_p(x.ctypes.data)\n"
        f"r1 = lib.{api}(p(a), p(b), ctypes.c_long(24), ctypes.c_long(33))\n"
        f"r2 = lib.{api}(p(a), p(b), ctypes.c_long(0), ctypes.c_long(32))\n"
        "sys.exit(0 if r1 != 0 and r2 != 0 else 1)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.strip().splitlines()
    assert lines == [
        f"{api}: grid 24 x 33, but this kernel was generated for rows (at least 1) x 32",
        f"{api}: grid 0 x 32, but this kernel was generated for rows (at least 1) x 32",
    ]


@pytest.mark.skipif(shutil.which("make") is None or shutil.which("g++") is None, reason="needs make and g++")
def test_a_tiled_kernel_refuses_more_rows_than_it_gathers(tmp_path: Path) -> None:
    _, gen = _generate("jacobi2d.soda", "soda", TILED, (20, 48), tmp_path)
    _make(tmp_path, f"{gen.top}_csim")
    done = subprocess.run(
        [f"./{gen.top}_csim", "data", "out", "21"], cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 2 and done.stderr.strip() == "ROWS must be from 1 to 20"
    assert "rows > 20L" in next(t for n, t in gen.files if n.endswith("_csim.cpp") and n.startswith("api/"))
