"""``--target opencl`` for a StencilFlow design split over devices (``codegen.opencl_smi``): an SMI program
per device, cut streams as SMI send/receive kernels on matching ports, deterministic text, and every
device's kernels verified together in one emulation against the reference."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from stencilmap.cli.codegen import codegen_cmd
from stencilmap.codegen.opencl_smi import device_design, kernel_file, module_devices, smi_ports
from stencilmap.codegen.registry import emit
from stencilmap.codegen.smi_topology import program_names
from stencilmap.design.partition import load_parts
from stencilmap.design.registry import BuildConfig
from stencilmap.device.catalog import load_device
from stencilmap.jobs.codegen import CodegenConfig, bind, codegen
from stencilmap.jobs.partition import PartitionRequest, partitioned
from stencilmap.point import DesignPoint
from tests.codegen.helpers import SHAPES
from tests.conftest import EXAMPLES

HEAT = EXAMPLES / "heat3d.json"
DAG = EXAMPLES / "dag_listing1.json"
DAG_PARTS = EXAMPLES / "partitions" / "dag_listing1.json"
OPENED = re.compile(r"SMI_Open_(send|receive)_channel\((\d+), (SMI_\w+), (\d+), (\d+), comm\)")


POINT = ("iterate", "vector", "devices", "partition", "unroll", "arch")


def _config(program: Path, out: Path, **kw: object) -> CodegenConfig:
    point = DesignPoint(device="stratix10", **{k: v for k, v in kw.items() if k in POINT})  # type: ignore[arg-type]
    rest = {k: v for k, v in kw.items() if k not in POINT}
    return CodegenConfig(
        program=program,
        target="opencl",
        out_dir=out,
        point=point,
        shape=SHAPES[program.name],
        **rest,  # type: ignore[arg-type]
    )


def _split(program: Path, request: PartitionRequest, iterate: int | None = None, vector: int | None = None):  # type: ignore[no-untyped-def]
    config = _config(program, Path("unused"), iterate=iterate, vector=vector)
    prog, values = bind(config)
    build = BuildConfig(iterate=iterate, vector=vector, device="stratix10")
    split = partitioned(prog, build, "stencilflow", load_device("stratix10"), request)
    return prog, values, split


CASES = [
    pytest.param(HEAT, {"iterate": 4, "devices": 2}, id="heat3d-q4-2dev"),
    pytest.param(HEAT, {"iterate": 4, "devices": 3}, id="heat3d-q4-3dev"),
    pytest.param(DAG, {"partition": DAG_PARTS}, id="dag-partition-file"),
    pytest.param(DAG, {"vector": 2, "devices": 3}, id="dag-w2-3dev"),
]


@pytest.mark.parametrize(("program", "options"), CASES)
def test_verify_all_devices_bit_exact(
    program: Path, options: dict[str, object], tmp_path: Path, csim_cache: Path
) -> None:
    out = tmp_path / "out"
    report = codegen(_config(program, out, verify=True, cache_dir=csim_cache, **options))
    v = report.verification
    assert v is not None
    assert v.valid and v.validation.bit_exact, v.message
    devices = 3 if options.get("devices") == 3 else 2
    assert report.design.count("network") >= 1
    top = report.generated.top
    kernels = sorted(path.name for path in (out / "kernels").iterdir())
    assert kernels == [f"{top}_rank{d}.cl" for d in range(devices)]  # one distinctly named SMI program each
    for name in ("README.md", "Makefile", "CMakeLists.txt", "topology.json", "host.cpp", "emulate.cpp"):
        assert (out / name).is_file()
    for name in ("smi_emulation.h", "opencl_emulation.h"):
        assert (out / name).is_file()


def test_every_device_holds_its_modules_and_the_ends_of_its_cut_streams() -> None:
    _, _, split = _split(DAG, PartitionRequest(parts=load_parts(DAG_PARTS)))
    design = split.design
    on = module_devices(design)
    nets = [m for m in design.modules if m.kind == "network"]
    for d in range(2):
        sub = device_design(design, d)
        names = {m.name for m in sub.modules}
        assert {m for m, dev in on.items() if dev == d} <= names
        for m in nets:
            ends = (m.param("src_device"), m.param("dst_device"))
            assert (m.name in names) == (d in ends)
        for c in sub.channels:  # no channel leaves the device
            assert c.src in names and c.dst in names
    assert sorted(smi_ports(design).values()) == list(range(len(nets)))


@pytest.mark.parametrize("devices", [2, 3])
def test_smi_ports_pair_one_send_with_one_receive(devices: int) -> None:
    prog, values, split = _split(HEAT, PartitionRequest(devices=devices), iterate=4)
    code = emit("opencl", split.design, prog, values)
    files = dict(code.files)
    sends, receives = {}, {}
    for d, name in enumerate(program_names(code.top, devices)):
        for role, count, dtype, peer, port in OPENED.findall(files[kernel_file(name)]):
            side = sends if role == "send" else receives
            assert port not in side, f"port {port} opened twice for {role}"
            # (this device, the other one) as the sender sees them
            side[port] = (count, dtype, (d, int(peer)) if role == "send" else (int(peer), d))
    assert sends == receives
    assert len(sends) == split.design.count("network")
    assert all(src != dst for _, _, (src, dst) in sends.values())


def test_generated_text_is_deterministic() -> None:
    texts = []
    for _ in range(2):
        prog, values, split = _split(DAG, PartitionRequest(devices=3), vector=2)
        texts.append(emit("opencl", split.design, prog, values).files)
    assert texts[0] == texts[1]


def test_the_hls_target_refuses_a_split_design_with_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        codegen_cmd, [str(DAG), "--target", "hls", "--device", "stratix10", "--devices", "2",
                      "--out", str(tmp_path / "o")],
    )  # fmt: skip
    assert result.exit_code == 2
    assert "--target opencl" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    "args",
    [
        [str(EXAMPLES / "jacobi2d.soda"), "--target", "opencl", "--device", "stratix10", "--devices", "2"],
        [str(EXAMPLES / "jacobi2d.soda"), "--target", "hls", "--device", "stratix10", "--devices", "2"],
        [str(DAG), "--target", "opencl", "--devices", "2"],  # no --device: no network to split over
        [
            str(DAG),
            "--target",
            "opencl",
            "--device",
            "stratix10",
            "--devices",
            "2",
            "--partition",
            str(DAG_PARTS),
        ],
    ],
    ids=["soda-opencl", "soda-hls", "no-device", "both"],
)
def test_bad_split_requests_exit_2(args: list[str], tmp_path: Path) -> None:
    result = CliRunner().invoke(codegen_cmd, [*args, "--out", str(tmp_path / "o")])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("error:") and len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_a_deadlock_across_devices_is_reported(tmp_path: Path, csim_cache: Path) -> None:
    """Delay buffers of depth 1 stall the DAG's join on device 1 (its SMI port fills): exit status 1."""
    result = CliRunner().invoke(
        codegen_cmd, [str(DAG), "--target", "opencl", "--device", "stratix10", "--devices", "2", "--shape",
                      "8,16,16", "--delay-buffers", "min", "--out", str(tmp_path / "o"), "--verify"],
    )  # fmt: skip
    assert result.exit_code == 1
    assert "INVALID (deadlock)" in result.stdout and "net." in result.stdout


def test_json_and_text_report_the_partition(tmp_path: Path) -> None:
    """`--json` carries the same `partition` object as analyze/estimate/simulate; the text shows its table."""
    parts = EXAMPLES / "partitions" / "dag_listing1.json"
    args = [str(EXAMPLES / "dag_listing1.json"), "--target", "opencl", "--device", "stratix10"]
    args += ["--partition", str(parts)]
    result = CliRunner().invoke(codegen_cmd, [*args, "--out", str(tmp_path / "j"), "--json"])
    assert result.exit_code == 0, result.output
    partition = json.loads(result.output)["partition"]
    assert partition["chosen"] == "user" and partition["devices"] == len(load_parts(parts))
    assert partition["streams_cut"] == len(partition["network_channels"]) > 0
    text = CliRunner().invoke(codegen_cmd, [*args, "--out", str(tmp_path / "t")])
    assert text.exit_code == 0 and "partition over 2 × stratix10 (user's parts" in text.output
