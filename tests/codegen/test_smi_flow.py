"""A design split over devices goes through SMI's own flow (``codegen.opencl_smi``, ``smi_topology``,
``smi_host``, ``smi_build``): the generated Makefile runs SMI's real code generator (``../shared/vendor/smi``,
spcl/SMI) over the generated programs and topology — ``codegen-device`` per program, ``route``,
``codegen-host`` — and compiles the host against SMI's real headers and SMI's generated
``smi_generated_host.c``. Stood in (``smi_standins/``): SMI's clang source rewriter, hlslib, the OpenCL C++
header and MPI; SMI's ``route`` runs through a launcher that gives it networkx 2's ``shortest_path`` dict."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from stencilmap.codegen.opencl_smi import kernel_file
from stencilmap.codegen.registry import emit
from stencilmap.codegen.smi_topology import fpga, program_names, topology
from stencilmap.design.partition import load_parts
from stencilmap.jobs.partition import PartitionRequest
from tests.codegen.test_partition import _split
from tests.conftest import EXAMPLES

SMI = Path(__file__).resolve().parents[2].parent / "shared" / "vendor" / "smi"
STANDINS = Path(__file__).resolve().parent / "smi_standins"
OPENED = re.compile(r"SMI_Open_(send|receive)_channel\((\d+), SMI_(\w+), (\d+), (\d+), comm\)")
SPECIALISED = re.compile(r"\b(SMI_(?:Push|Pop|Open_send_channel|Open_receive_channel)_\d+_\w+)\(")

needs_smi = pytest.mark.skipif(
    not (SMI / "codegen" / "main.py").is_file()
    or shutil.which("make") is None
    or shutil.which("g++") is None,
    reason="needs SMI's sources in ../shared/vendor/smi, make and g++",
)

HEAT, DAG = EXAMPLES / "heat3d.json", EXAMPLES / "dag_listing1.json"
CASES = [
    pytest.param(HEAT, {"devices": 2}, 4, None, id="heat3d-q4-2dev"),
    pytest.param(HEAT, {"devices": 3}, 4, None, id="heat3d-q4-3dev"),
    pytest.param(DAG, {"devices": 3}, None, 2, id="dag-w2-3dev"),
    pytest.param(
        DAG, {"parts": EXAMPLES / "partitions" / "dag_listing1.json"}, None, None, id="dag-partition-file"
    ),
]


def _write(
    program: Path, request: dict[str, object], iterate: int | None, vector: int | None, out: Path
) -> dict[str, str]:
    parts = request.get("parts")
    req = (
        PartitionRequest(parts=load_parts(parts)) if isinstance(parts, Path) else PartitionRequest(**request)
    )  # type: ignore[arg-type]
    prog, values, split = _split(program, req, iterate=iterate, vector=vector)
    files = dict(emit("opencl", split.design, prog, values).files)
    for name, text in files.items():
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_text(text)
    return files


def _make(out: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["make", "-C", str(out), *args], capture_output=True, text=True, timeout=300, check=False
    )


def _rewriter(tmp: Path) -> Path:
    """SMI's codegen runs its rewriter as one executable: a script calling the stand-in with this Python."""
    path = tmp / "rewriter"
    path.write_text(
        f"#!{sys.executable}\nimport runpy\nrunpy.run_path({str(STANDINS / 'rewriter.py')!r}, run_name='__main__')\n"
    )
    path.chmod(0o755)
    return path


@needs_smi
@pytest.mark.parametrize(("program", "request_", "iterate", "vector"), CASES)
def test_smi_codegen_accepts_the_programs_and_the_host_compiles_against_smi(
    program: Path, request_: dict[str, object], iterate: int | None, vector: int | None, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    files = _write(program, request_, iterate, vector, out)
    programs = tuple(sorted(Path(f).stem for f in files if f.startswith("kernels/")))
    n = len(programs)
    assert programs == program_names(programs[0].rsplit("_rank", 1)[0], n)
    smi = [
        f"SMI={SMI}",
        f"REWRITER={_rewriter(tmp_path)}",
        f"CODEGEN={sys.executable} {STANDINS / 'smi_codegen.py'}",
    ]
    done = subprocess.run(
        ["make", "-C", str(out), "smi", *smi],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "SMI_CODEGEN": str(SMI / "codegen")},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    build = out / "build"
    # SMI's metadata of each program: exactly the channels the kernel opens (SMI's rank numbering: device d).
    for d, name in enumerate(programs):
        opened = sorted(
            ("push" if role == "send" else "pop", int(port), dtype.lower())
            for role, _, dtype, _, port in OPENED.findall(files[kernel_file(name)])
        )
        ops = json.loads((build / f"{name}.json").read_text())["operations"]
        assert sorted((op["type"], op["port"], op["data_type"]) for op in ops) == opened
        assert opened, f"device {d} has no SMI channel"
        rewritten = (build / name / f"{name}.cl").read_text()
        generated = (build / name / "smi_generated_device.cl").read_text()
        calls = set(SPECIALISED.findall(rewritten))
        assert calls and all(re.search(rf"\b{c}\(", generated) for c in calls), calls
        for r in range(n):
            for table in ("cks", "ckr"):
                for ch in range(4):
                    assert (build / "smi-routes" / f"{table}-rank{r}-channel{ch}").is_file()
    hostfile = (build / "smi-routes" / "hostfile").read_text().splitlines()
    assert [line.split()[0] for line in hostfile] == [fpga(d).split(":")[0] for d in range(n)]
    host_c = (build / "smi_generated_host.c").read_text()
    host = files["host.cpp"]
    for d, name in enumerate(programs):
        assert f"SMI_Comm SmiInit_{name}(" in host_c
        assert f"SmiInit_{name}({d}, ranks, ROUTING_DIR, context, program, routing)" in host
    compiled = _make(
        out,
        "host-compile",
        f"SMI={SMI}",
        "MPICXX=g++",
        f"HLSLIB={STANDINS / 'include'}",
        "HOST_CXXFLAGS=-Wall -Wextra -Werror",
    )
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr
    assert (build / "host.o").is_file()


@needs_smi
def test_the_host_does_not_compile_without_smis_generated_init(tmp_path: Path) -> None:
    """The compile above is a real check: the host needs SMI's SmiInit_<program> and SMI_Comm."""
    out = tmp_path / "out"
    _write(HEAT, {"devices": 2}, 4, None, out)
    (out / "build").mkdir()
    (out / "build" / "smi_generated_host.c").write_text("// empty\n")
    compiled = _make(
        out, "host-compile", f"SMI={SMI}", "MPICXX=g++", f"HLSLIB={STANDINS / 'include'}", "HOST_CXXFLAGS="
    )
    assert compiled.returncode != 0
    assert "SMI_Comm" in compiled.stderr or "SmiInit_" in compiled.stderr


def test_the_topology_is_a_chain_with_two_links_per_neighbour_and_ranks_in_device_order() -> None:
    for n in (2, 3, 12):
        programs = program_names("p", n)
        data = json.loads(topology(programs))
        assert data["fpgas"] == {fpga(d): f"p_rank{d}" for d in range(n)}
        # SMI gives ranks in the sorted order of the FPGA keys (routing.create_ranks_for_fpgas)
        assert sorted(data["fpgas"]) == [fpga(d) for d in range(n)]
        ends = [*data["connections"], *data["connections"].values()]
        assert len(ends) == len(set(ends)) == 4 * (n - 1)  # every QSFP channel cabled at most once
        for d in range(n - 1):
            linked = [
                k
                for k, v in data["connections"].items()
                if k.startswith(fpga(d)) and v.startswith(fpga(d + 1))
            ]
            assert len(linked) == 2
        assert all(re.fullmatch(r"fpga-\d{4}:acl0:ch[0-3]", e) for e in ends)


#: SMI's smi_target as far as CMakeLists.txt relies on it: its signature, and the routing target it creates
#: (named after the last program, as SMI's loop variable leaves it); each call recorded for the test.
SMI_TARGET = """\
cmake_minimum_required(VERSION 3.10)
project(smi_shape NONE)
set(SMI_TARGET_BOARD p520_max_sg280l)
set(IntelFPGAOpenCL_AOC aoc)
function(smi_target TARGET_NAME CONNECTION_FILE HOST_SOURCE KERNELS NUM_RANKS)
  foreach(KERNEL IN ITEMS ${KERNELS})
    get_filename_component(KERNEL_NAME ${KERNEL} NAME_WE)
  endforeach()
  add_custom_target(${TARGET_NAME}_${KERNEL_NAME}_routing)
  file(APPEND ${CMAKE_BINARY_DIR}/calls.txt "${TARGET_NAME}|${CONNECTION_FILE}|${HOST_SOURCE}|${KERNELS}|${NUM_RANKS}|${ARGN}\\n")
endfunction()
add_subdirectory(OUT out)
"""


@pytest.mark.skipif(shutil.which("cmake") is None, reason="needs cmake")
@pytest.mark.parametrize("devices", [2, 3])
def test_cmakelists_calls_smi_target_as_smis_examples_do(devices: int, tmp_path: Path) -> None:
    out = tmp_path / "out"
    files = _write(HEAT, {"devices": devices}, 4, None, out)
    top = files["host.cpp"].split("Host of ", 1)[1].split()[0]
    programs = program_names(top, devices)
    project = tmp_path / "project"
    project.mkdir()
    (project / "CMakeLists.txt").write_text(SMI_TARGET.replace("OUT", str(out)))
    done = subprocess.run(
        ["cmake", "-S", str(project), "-B", str(tmp_path / "build")],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    calls = (tmp_path / "build" / "calls.txt").read_text().splitlines()
    kernels = ";".join(str(out / kernel_file(p)) for p in programs)
    assert calls == [f"{top}|{out / 'topology.json'}|{out / 'host.cpp'}|{kernels}|{devices}|8;8;ON"]
    for path in (out / "topology.json", out / "host.cpp", *(out / kernel_file(p) for p in programs)):
        assert path.is_file()
