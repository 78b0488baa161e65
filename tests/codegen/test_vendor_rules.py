"""The vendors' rules on every generated corpus program and example (issue 21), checked statically
(``vendor_rules``: C linkage, no read of an output port, one writer and one reader per stream, rolled
loops only where allowed), each rule shown to fail on a hand-broken snippet; the scripts carry the
device; ``make csim`` and ``make lib-csim`` work in a folder ``--verify`` wrote (with Xilinx's own
headers when ``../shared/vendor`` is present), and the C binding, called through ctypes, matches the
reference bit-exact, at the generated grid and (the same library: the rows are the HLS kernel's runtime
argument) at fewer rows. No vendor tool runs here.
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from stencilmap.backends.reference import run_reference
from stencilmap.codegen.ctypes_ import storage
from stencilmap.codegen.registry import Generated, emit
from stencilmap.codegen.verify import write_data
from stencilmap.device.catalog import load_device
from stencilmap.errors import StencilmapError
from stencilmap.program.data import bind_shape, field_shape, make_inputs
from stencilmap.program.ir import Program
from stencilmap.sim.validate import validate
from tests.codegen import vendor_rules as rules
from tests.codegen.conftest import FULL
from tests.codegen.helpers import PAIRS, load_example, write
from tests.conftest import EXAMPLE_FILES, ROOT
from tests.sim.helpers import built, inputs_for, lanes_config

SHARED = Path(os.environ.get("STENCILMAP_SHARED", str(ROOT.parent / "shared")))
XILINX = SHARED / "vendor" / "xilinx-hls" / "include"
CORPUS = sorted((SHARED / "corpus" / "soda").glob("*.soda")) + sorted(
    (SHARED / "corpus" / "stencilflow").glob("*.json")
)
PROGRAMS = EXAMPLE_FILES + CORPUS
DEVICES = {"hls": "u280", "opencl": "stratix10"}
LANES = {"soda": 2, "stencilflow": 2, "pcm": 2}


def _generate(path: Path, arch: str, target: str) -> Generated:
    program = load_example(path)
    config = lanes_config(arch, LANES[arch], device=DEVICES[target])
    try:
        program, design = built(program, arch, config)
        return emit(target, design, program, inputs_for(program))
    except (StencilmapError, FileNotFoundError) as exc:
        pytest.skip(f"{arch}/{target} does not apply: {exc}")


@pytest.mark.parametrize(("arch", "target"), PAIRS, ids=[f"{a}-{t}" for a, t in PAIRS])
@pytest.mark.parametrize("path", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_generated_code_obeys_the_vendor_rules(path: Path, arch: str, target: str, tmp_path: Path) -> None:
    gen = _generate(path, arch, target)
    files = dict(gen.files)
    found: list[str] = []
    if target == "hls":
        found += rules.c_linkage(files["kernel.h"], files["kernel.cpp"], gen.top)
        found += rules.output_port_reads(files["kernel.cpp"])
        found += rules.hls_stream_ends(files["kernel.cpp"], gen.top)
        part = load_device(DEVICES[target]).part
        assert f"set_part {{{part}}}" in files["hls.tcl"] and "create_clock -period 3.333" in files["hls.tcl"]
        assert f"PART ?= {part}" in files["Makefile"]
        for p in gen.ports:
            assert f".{p.direction}_" in files["connectivity.cfg"]
    else:
        write(gen, tmp_path)
        found += rules.rolled_loops(rules.preprocess_for_aoc(tmp_path))
        if arch == "stencilflow":
            found += rules.opencl_channel_ends(files["kernel.cl"])
        assert f"BOARD ?= {load_device(DEVICES[target]).board}" in files["Makefile"]
    assert not found, found


# ---------------------------------------------------------------- each rule fails on broken code

BROKEN_WRITER = """\
static void write_b(hls::stream<float>& in0, ap_uint<512>* mem) {
    beats: for (long n = 0; n < 8L; ++n) {
        ap_uint<512> word = mem[n / 16L];
        mem[n / 16L] = word;
    }
}
"""
PASSED_ON = """\
static void write_b(hls::stream<float>& in0, ap_uint<512>* mem) {
    sm_store<float, 32, 512>(mem, 0L, in0.read());
}
"""
READER = """\
static void read_a(const ap_uint<512>* mem, hls::stream<float>& out0) {
    out0.write(sm_load<float, 32, 512>(mem, 0L));
}
"""
TOP = """\
static void a(hls::stream<float>& out0) {
}
static void b(hls::stream<float>& in0, hls::stream<float>& out0) {
}
extern "C" void top(const ap_uint<512>* in_a) {
    hls::stream<float> c0("x");
    hls::stream<float> c1("y");
    a(c0);
    b(c0, c1);
    b(c0, c1);
}
"""
LOOPS = """\
for (long n = 0; n < 8L; ++n) {
#pragma unroll
for (int e = 0; e < 4; ++e) x[e] = 0;
for (int i = 0; i < 9; ++i) sr[i] = sr[i + 1];
}
"""
CHANNELS = """\
channel float ch_0 __attribute__((depth(2)));
__kernel void a() { write_channel_intel(ch_0, 1); }
__kernel void b() { write_channel_intel(ch_0, 2); read_channel_intel(ch_0); }
"""


def test_each_rule_fails_on_broken_code() -> None:
    assert rules.c_linkage("void top(int* a);\n", "void top(int* a) {\n}\n", "top") == [
        'kernel.h: top is not declared extern "C"',
        'kernel.cpp: top is not defined extern "C"',
    ]
    assert len(rules.output_port_reads(BROKEN_WRITER)) == 1
    assert len(rules.output_port_reads(PASSED_ON)) == 1
    assert rules.output_port_reads(READER) == []  # an input port may be read
    assert rules.hls_stream_ends(TOP, "top") == [
        "stream c0: 1 writer(s), 2 reader(s)",
        "stream c1: 2 writer(s), 0 reader(s)",
    ]
    assert rules.rolled_loops(LOOPS) == ["rolled loop: for (int i = 0; i < 9; ++i) sr[i] = sr[i + 1];"]
    assert rules.opencl_channel_ends(CHANNELS) == ["ch_0: written in kernels [0, 1], read in kernels [1]"]


def test_every_fpga_device_file_names_its_part_and_intel_boards_their_aoc_board() -> None:
    folder = ROOT / "src" / "stencilmap" / "device" / "files"
    for path in sorted(folder.glob("*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        if doc["kind"] != "fpga":
            continue
        assert doc.get("part"), path.name
        assert any(doc["part"] in s or doc.get("board", "") in s for s in doc["sources"][-1:]) or doc.get(
            "board"
        ), path.name
        if not doc["part"].lower().startswith("xc"):
            assert doc.get("board"), f"{path.name}: an Intel board names its aoc -board= name"


# ------------------------------------- make csim and lib-csim in a --verify folder, and the binding


def _make(folder: Path, *targets: str) -> None:
    include = str(XILINX) if XILINX.is_dir() else "csim_include"
    done = subprocess.run(
        ["make", "-s", *targets, f"HLS_INCLUDE={include}", "OPT=-O0"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]


def _pointer(arr: np.ndarray) -> ctypes.c_void_p:
    return ctypes.c_void_p(arr.ctypes.data)


def _inputs_at(program: Program) -> dict[str, np.ndarray]:
    """Inputs on another grid: the program's own, else (data files of the generated grid) seeded values."""
    try:
        return inputs_for(program, seed=1)
    except StencilmapError:
        rng = np.random.default_rng(1)
        supplied = {
            i.name: np.asarray(rng.uniform(-100, 100, field_shape(program, i))).astype(i.dtype)
            for i in program.inputs
        }
        return make_inputs(program, supplied, 1)


def _build_and_call(path: Path, tmp_path: Path) -> None:
    if shutil.which("make") is None or shutil.which("g++") is None:
        pytest.skip("make and g++ are needed")
    program = load_example(path)
    try:
        program, design = built(program, "soda", lanes_config("soda", 2, device="u280"))
    except StencilmapError as exc:
        pytest.skip(f"soda does not apply: {exc}")
    values = inputs_for(program)
    gen = emit("hls", design, program, values)
    write(gen, tmp_path)
    (tmp_path / "csim").mkdir()  # what `codegen --verify` writes beside the files
    write_data(tmp_path / "data", gen.ports, values)
    _make(tmp_path, "csim", "lib-csim")
    ref = run_reference(program, values)
    shape = tuple(int(n or 0) for n in program.shape)
    outs = {p.field: np.fromfile(tmp_path / "out" / f"{p.field}.bin", storage(p.dtype)).reshape(shape)
            for p in gen.ports if p.direction == "out"}  # fmt: skip
    got = {k: v.astype(bool) if v.dtype == np.uint8 and program.field_dtype(k) == "bool" else v
           for k, v in outs.items()}  # fmt: skip
    assert validate("done", got, ref.outputs, ref.defined).valid, "make csim"
    header = next(n for n, _ in gen.files if n.startswith("api/") and n.endswith(".h"))
    name = Path(header).stem
    lib = ctypes.CDLL(str(tmp_path / f"lib{name}_csim.so"))
    ins = [p for p in gen.ports if p.direction == "in"]
    args, outputs = [], {}
    order = [i.name for i in program.inputs] + list(program.outputs)
    for p in sorted(ins, key=lambda p: order.index(p.field)):
        args.append(np.ascontiguousarray(np.asarray(values[p.field]).astype(storage(p.dtype))))
    for f in program.outputs:
        outputs[f] = np.zeros(shape, storage(program.field_dtype(f)))
        args.append(outputs[f])
    sizes = [ctypes.c_long(n) for n in shape]
    assert getattr(lib, name)(*[_pointer(a) for a in args], *sizes) == 0
    got = {k: v.astype(bool) if program.field_dtype(k) == "bool" else v for k, v in outputs.items()}
    assert validate("done", got, ref.outputs, ref.defined).valid, "the C binding"
    # the rows are the kernel's runtime argument (test_runtime_rows): other columns, or no rows, are refused
    wrong = (
        [ctypes.c_long(n) for n in (shape[0], *(n + 1 for n in shape[1:]))]
        if len(shape) > 1
        else [ctypes.c_long(0)]
    )
    assert getattr(lib, name)(*[_pointer(a) for a in args], *wrong) != 0
    if shape[0] == 1:  # no fewer rows to run
        return
    # the same library on fewer rows (the kernel's runtime argument): bit-exact again
    rows = shape[0] - max(1, shape[0] // 3)
    other = bind_shape(program, {}, (rows, *shape[1:]))
    values = _inputs_at(other)
    ref = run_reference(other, values)
    args = [np.ascontiguousarray(np.asarray(values[p.field]).astype(storage(p.dtype)))
            for p in sorted(ins, key=lambda p: order.index(p.field))]  # fmt: skip
    outputs = {f: np.zeros((rows, *shape[1:]), storage(program.field_dtype(f))) for f in program.outputs}
    args += list(outputs.values())
    sizes = [ctypes.c_long(n) for n in (rows, *shape[1:])]
    assert getattr(lib, name)(*[_pointer(a) for a in args], *sizes) == 0
    got = {k: v.astype(bool) if program.field_dtype(k) == "bool" else v for k, v in outputs.items()}
    assert validate("done", got, ref.outputs, ref.defined).valid, f"the C binding at {rows} rows"


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=[p.name for p in EXAMPLE_FILES])
def test_make_csim_and_the_c_binding_in_a_verified_folder(path: Path, tmp_path: Path) -> None:
    _build_and_call(path, tmp_path)


@pytest.mark.codegen_full
@pytest.mark.skipif(not FULL or not CORPUS, reason="the corpus sweep runs with STENCILMAP_CODEGEN_FULL=1")
@pytest.mark.parametrize("path", CORPUS, ids=[p.name for p in CORPUS])
def test_make_csim_and_the_c_binding_on_the_corpus(path: Path, tmp_path: Path) -> None:
    _build_and_call(path, tmp_path)


@pytest.mark.parametrize("kernel", ["printf", "size_t", "std", "bitand", "SM_ROWS"])
def test_a_program_named_like_a_library_symbol_gets_a_binding_that_builds(
    kernel: str, tmp_path: Path
) -> None:
    """The C binding is ``extern "C"`` beside <cstdio>, <cstdlib>, ...: a program named ``printf`` (or a
    C++ alternative token, or the generated macros' ``SM_`` prefix) gets ``printf_api``, and ``make
    lib-csim`` builds (was: "conflicting declaration of C function 'int printf(...)'")."""
    if shutil.which("make") is None or shutil.which("g++") is None:
        pytest.skip("make and g++ are needed")
    program = load_example(ROOT / "examples" / "jacobi2d.soda")
    program, design = built(replace(program, name=kernel), "soda", lanes_config("soda", 2, device="u280"))
    gen = emit("hls", design, program, inputs_for(program))
    write(gen, tmp_path)
    assert (tmp_path / "api" / f"{kernel}_api.h").is_file()
    _make(tmp_path, "lib-csim")
    assert (tmp_path / f"lib{kernel}_api_csim.so").is_file()


# ------------------------------------- the XRT and OpenCL bindings compile (against stand-in APIs)

STANDINS = Path(__file__).parent / "standins"
SYNTAX = [
    ("jacobi2d.soda", "soda", "hls", "_xrt.cpp"),
    ("dag_listing1.json", "stencilflow", "hls", "_xrt.cpp"),
    ("laplace2d.soda", "pcm", "opencl", "_opencl.cpp"),
    ("dag_listing1.json", "stencilflow", "opencl", "_opencl.cpp"),
]


@pytest.mark.parametrize(
    ("name", "arch", "target", "suffix"), SYNTAX, ids=[f"{s[0]}-{s[1]}-{s[2]}" for s in SYNTAX]
)
def test_the_bindings_compile_against_the_runtime_apis(
    name: str, arch: str, target: str, suffix: str, tmp_path: Path
) -> None:
    """The XRT and OpenCL implementations of the binding and the hosts, compiled ``-fsyntax-only``
    against declarations of the runtimes' calls (``standins/``: shapes only, no runtime here)."""
    if shutil.which("g++") is None:
        pytest.skip("g++ is needed")
    gen = _generate(ROOT / "examples" / name, arch, target)
    write(gen, tmp_path)
    sources = [n for n, _ in gen.files if n.startswith("api/") and n.endswith(suffix)] + ["host.cpp"]
    assert len(sources) == 2, sources
    for src in sources:
        done = subprocess.run(
            ["g++", "-std=c++17", "-fsyntax-only", f"-I{STANDINS}", f"-I{tmp_path}", str(tmp_path / src)],
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr[-2000:]


def test_make_csim_after_codegen_verify(tmp_path: Path) -> None:
    """The folder ``stencilmap codegen --verify`` writes (with its ``csim/``): ``make csim`` builds and
    runs there, and its output is the one ``--verify`` saved."""
    if shutil.which("make") is None or shutil.which("g++") is None:
        pytest.skip("make and g++ are needed")
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "stencilmap", "codegen", str(ROOT / "examples" / "jacobi2d.soda"), "--target",
         "hls", "--unroll", "2", "--shape", "24,32", "--device", "u280", "--out", str(out), "--verify"],
        capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(ROOT / "src")),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (out / "csim").is_dir() and "set_part {xcu280-fsvh2892-2L-e}" in (out / "hls.tcl").read_text()
    _make(out, "csim")
    saved = np.load(out / "csim" / "w.npy")
    got = np.fromfile(out / "out" / "w.bin", saved.dtype).reshape(saved.shape)
    assert np.array_equal(got, saved, equal_nan=True)
