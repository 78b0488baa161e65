"""Device files are data: every count, capacity, latency, clock, bandwidth, peak and block shape is bounded
below and above (``device.catalog``'s bounds), and a file past a bound is one line naming the file and the
JSON path — never a hang (a CGRA of 10¹² MACs), a traceback (a 0 × 0 RAM block, a latency of 10¹⁷
cycles) or nonsense (negative LUTs, a negative latency)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import stencilmap.design.cgra.plan as plan_module
from stencilmap.cli import main
from stencilmap.design.cgra.mapping import fabric
from stencilmap.design.cgra.plan import plan_mapping
from stencilmap.design.registry import BuildConfig
from stencilmap.device import device_names, load_device
from stencilmap.device.catalog import RESOURCE_BOUNDS
from stencilmap.errors import StencilmapError
from stencilmap.program import load_program
from stencilmap.program.data import bind_shape
from tests.conftest import EXAMPLES

FILES = Path(__file__).resolve().parents[2] / "src/stencilmap/device/files"


def _doc(name: str) -> dict[str, Any]:
    return json.loads((FILES / f"{name}.json").read_text())  # type: ignore[no-any-return]


def _set(doc: dict[str, Any], path: str, value: object) -> None:
    """``doc`` with ``path`` (``resources.mac``, ``memory_blocks.shapes``) set to ``value`` (None: deleted)."""
    *parents, last = path.split(".")
    for key in parents:
        doc = doc[key]
    if value is None:
        del doc[last]
    else:
        doc[last] = value


def _write(tmp_path: Path, doc: dict[str, Any], stem: str = "bad") -> Path:
    path = tmp_path / f"{stem}.json"  # a new path each time: load_device caches by path
    path.write_text(json.dumps(doc))
    return path


def test_the_catalog_keeps_within_the_bounds() -> None:
    for name in device_names():
        device = load_device(name)
        for resource, n in device.resources:
            low, high = RESOURCE_BOUNDS.get(resource, (1, 10**12))
            assert low <= n <= high, (name, resource)


CASES = [
    # the audit's: a hang, tracebacks, nonsense
    (
        "cgra-tia",
        "resources.mac",
        10**12,
        r"resources\.mac: must be at most 1,048,576, got 1,000,000,000,000",
    ),
    (
        "ku060",
        "memory_blocks.shapes",
        [[0, 0]],
        r"memory_blocks\.shapes\[0\]\[0\]: must be at least 1, got 0",
    ),
    ("ku060", "memory_blocks.shapes", [[-1, 16384]], r"memory_blocks\.shapes\[0\]\[0\]: must be at least 1"),
    ("ku060", "memory_blocks.shapes", [[36, 0]], r"memory_blocks\.shapes\[0\]\[1\]: must be at least 1"),
    ("ku060", "latencies.add", 1e17, r"latencies\.add: must be at most 1,000, got 1e\+17"),
    ("ku060", "latencies.add", -5, r"latencies\.add: must be at least 0, got -5"),
    ("ku060", "resources.lut", -1, r"resources\.lut: must be at least 1, got -1"),
    ("ku060", "resources.lut", 0, r"resources\.lut: must be at least 1, got 0"),
    ("ku060", "resources.lut", 10**15, r"resources\.lut: must be at most 1,000,000,000,000"),
    ("ku060", "peak_gops.float32", -5, r"peak_gops\.float32: must be at least 0\.001, got -5"),
    ("cgra-tia", "resources.cache_line_bytes", 0, r"resources\.cache_line_bytes: must be at least 1, got 0"),
    ("cgra-tia", "resources.cache_line_bytes", -64, r"resources\.cache_line_bytes: must be at least 1"),
    ("cgra-tia", "resources.cache_line_bytes", 10**15, r"resources\.cache_line_bytes: must be at most 4,096"),
    ("cgra-tia", "resources.cache_ways", 0, r"resources\.cache_ways: must be at least 1"),
    ("cgra-tia", "resources.cache_ways", -4, r"resources\.cache_ways: must be at least 1"),
    ("cgra-tia", "resources.cache_fill_bytes", 0, r"resources\.cache_fill_bytes: must be at least 1"),
    ("cgra-tia", "resources.cache_fill_bytes", -32, r"resources\.cache_fill_bytes: must be at least 1"),
    ("cgra-tia", "resources.cache_bytes", 0, r"resources\.cache_bytes: must be at least 1"),
    ("cgra-tia", "resources.cache_bytes", -65536, r"resources\.cache_bytes: must be at least 1"),
    # the rest of the CGRA's and EMAX's resources
    ("cgra-tia", "resources.pe_rows", 0, r"resources\.pe_rows: must be at least 1"),
    ("cgra-tia", "resources.pe_columns", 10**6, r"resources\.pe_columns: must be at most 1,024"),
    ("cgra-tia", "resources.mac", 2000, r"resources\.mac: must be at most pe_rows × pe_columns = 1,024"),
    ("cgra-tia", "resources.queue_entries", 0, r"resources\.queue_entries: must be at least 1"),
    ("cgra-tia", "resources.queue_entries", 10**9, r"resources\.queue_entries: must be at most 1,024"),
    ("cgra-tia", "resources.scratchpad_bytes", 0, r"resources\.scratchpad_bytes: must be at least 1"),
    ("cgra-tia", "resources.load_latency", -1, r"resources\.load_latency: must be at least 0"),
    ("cgra-tia", "resources.load_latency", 10**6, r"resources\.load_latency: must be at most 1,000"),
    ("cgra-tia", "resources.cache_bytes", 128, r"resources\.cache_bytes: must hold one set, .* = 256 bytes"),
    ("cgra-tia", "resources.cache_bytes", 1 << 30, r"resources\.cache_bytes: must be at most 16,777,216"),
    ("cgra-tia", "resources.cache_ways", None, r"resources: cache_bytes, .* together; missing cache_ways"),
    (
        "cgra-tia",
        "resources.queue_entries",
        None,
        r"resources: arch 'cgra' maps onto .*missing queue_entries",
    ),
    ("emax", "resources.lmm_bytes", 0, r"resources\.lmm_bytes: must be at least 1"),
    ("emax", "resources.lmm_bytes", None, r"resources: arch 'emax' maps onto .*missing lmm_bytes"),
    ("emax", "resources.pe_rows", 10**9, r"resources\.pe_rows: must be at most 1,024"),
    # the top level
    ("ku060", "clock_mhz", 1e-300, r"clock_mhz: must be at least 1, got 1e-300"),
    ("ku060", "clock_mhz", 1e7, r"clock_mhz: must be at most 1,000,000"),
    ("ku060", "clock_mhz", "250", r"clock_mhz: must be a number, got '250'"),
    ("ku060", "resources.lut", True, r"resources\.lut: must be an integer, got True"),
    ("ku060", "dram_banks", 10**9, r"dram_banks: must be at most 1,024"),
    ("ku060", "bus_width_bits", 0, r"bus_width_bits: must be at least 1"),
    ("ku060", "mem_clock_mhz", 1e-300, r"mem_clock_mhz: must be at least 1"),
    ("ku060", "mem_efficiency", 1e-300, r"mem_efficiency: must be at least 0\.01"),
    ("ku060", "host_bandwidth_gbs", 0, r"host_bandwidth_gbs: must be at least 0\.001"),
    ("ku060", "launch_overhead_us", -1, r"launch_overhead_us: must be at least 0"),
    ("ku060", "launch_overhead_us", 1e18, r"launch_overhead_us: must be at most 10,000,000"),
    ("ku060", "peak_gops.float64", 0, r"peak_gops\.float64: must be at least 0\.001"),
    ("ku060", "peak_gops.float32", 1e12, r"peak_gops\.float32: must be at most 1,000,000,000"),
    ("ku060", "onchip_bits", 0, r"onchip_bits: must be at least 1"),
    ("ku060", "memory_blocks.count", 0, r"memory_blocks\.count: must be at least 1"),
    (
        "ku060",
        "memory_blocks.shapes",
        [[10**6, 512]],
        r"memory_blocks\.shapes\[0\]\[0\]: must be at most 4,096",
    ),
    ("ku060", "latencies.bogus op", 3, r"latencies: 'bogus op' is not a name"),
    ("ku060", "archs", ["soda", "soda"], r"archs: names soda more than once"),
    # an FPGA's resource model
    ("ku060", "resource_model.logic_storage_max_bits", 10**18, r"logic_storage_max_bits: must be at most"),
    ("ku060", "resource_model.logic_storage_max_bits", -1, r"logic_storage_max_bits: must be at least 0"),
    ("ku060", "resource_model.base.lut", -1e9, r"resource_model\.base\.lut: must be at least 0"),
    ("ku060", "resource_model.base.lut", 1e15, r"resource_model\.base\.lut: must be at most"),
    ("ku060", "resource_model.max_utilization.lut", 0, r"max_utilization\.lut: must be greater than 0"),
    ("ku060", "resource_model.max_utilization.lut", 1.5, r"max_utilization\.lut: must be at most 1"),
    ("ku060", "resource_model.ops.float32.add", {"lut": -1}, r"ops\.float32\.add\.lut: must be at least 0"),
    ("ku060", "resource_model.ops.float32.add", {"luts": 1}, r"resource_model names resources .*'luts'"),
    (
        "ku060",
        "resource_model.modules.pe.fixed",
        {"lut": -300},
        r"modules\.pe\.fixed\.lut: must be at least 0",
    ),
    # network, access points, cores
    ("stratix10", "network.link_latency_ns", 1e9, r"network\.link_latency_ns: must be at most 10,000"),
    ("stratix10", "network.links", 0, r"network\.links: must be at least 1"),
    ("stratix10", "network.packet_bytes", 10**6, r"network\.packet_bytes: must be at most 4,096"),
    (
        "stratix10",
        "access_point_bandwidth",
        [[32, 36.4], [1e9, 58.3]],
        r"access_point_bandwidth: .*65,536 bits",
    ),
    ("v100", "cores.pipes", 0, r"cores\.pipes: must be at least 1"),
    ("v100", "cores.units", 10**9, r"cores\.units: must be at most 1,048,576"),
    ("v100", "cores.cache_bytes", -1, r"cores\.cache_bytes: must be at least 1"),
    ("v100", "cores.lanes", {"float32": -64}, r"cores\.lanes\.float32: must be greater than 0"),
]


@pytest.mark.parametrize(("name", "path", "value", "message"), CASES)
def test_a_number_past_its_bound_is_refused_naming_the_path(
    tmp_path: Path, name: str, path: str, value: object, message: str
) -> None:
    doc = _doc(name)
    _set(doc, path, value)
    file = _write(tmp_path, doc)
    with pytest.raises(StencilmapError, match=message) as err:
        load_device(str(file))
    text = str(err.value)
    assert text.startswith(f"{file}: ") and "\n" not in text


@pytest.mark.parametrize(
    ("name", "path", "value"),
    [
        ("cgra-tia", "resources.load_latency", 0),  # an ideal memory: 0 is meaningful
        ("ku060", "latencies.add", 0),  # a latency-free operator
        ("ku060", "launch_overhead_us", 0),
        ("ku060", "resources.lut", 331680.0),  # a JSON float of integer value
        ("cgra-tia", "resources.mac", 1024),  # every PE of the 32 × 32 grid a MAC
        ("cgra-tia", "latencies.add", 1000),
    ],
)
def test_the_bounds_keep_what_is_meaningful(tmp_path: Path, name: str, path: str, value: object) -> None:
    doc = _doc(name)
    _set(doc, path, value)
    load_device(str(_write(tmp_path, doc)))


def test_a_cgra_without_a_cache_gives_none_of_its_four_resources(tmp_path: Path) -> None:
    doc = _doc("cgra-tia")
    for key in ("cache_bytes", "cache_ways", "cache_line_bytes", "cache_fill_bytes"):
        del doc["resources"][key]
    assert load_device(str(_write(tmp_path, doc))).resource("cache_bytes") is None


# ------------------------------------------------------------------------------------- the CLI, one line


@pytest.mark.parametrize(
    ("name", "path", "value", "args"),
    [
        ("cgra-tia", "resources.mac", 10**12, ["analyze", "stencil1d_r8.json", "--arch", "cgra"]),
        ("cgra-tia", "resources.mac", 10**12, ["estimate", "stencil1d_r8.json", "--arch", "cgra"]),
        ("cgra-tia", "resources.mac", 10**12, ["simulate", "laplace2d.soda", "--arch", "cgra"]),
        ("ku060", "memory_blocks.shapes", [[0, 0]], ["estimate", "jacobi2d.soda"]),
        ("ku060", "latencies.add", 1e17, ["simulate", "jacobi2d.soda"]),
        ("ku060", "resources.lut", -1, ["estimate", "jacobi2d.soda"]),
    ],
)
def test_the_cli_prints_one_line_and_exits_2(
    tmp_path: Path, name: str, path: str, value: object, args: list[str]
) -> None:
    doc = _doc(name)
    _set(doc, path, value)
    file = _write(tmp_path, doc)
    command, program, *rest = args
    argv = [command, str(EXAMPLES / program), *rest, "--device", str(file)]
    if command == "simulate":
        argv += ["--out", str(tmp_path / "out")]
    result = CliRunner().invoke(main, argv)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"error: {file}: {path.split('.')[0]}"), result.stderr


# ------------------------------------------------------------------------------------ bounded work


def test_the_workers_are_worked_out_not_searched(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fabric with 10¹⁵ MACs (past the file's bound, as a program could make one) maps at once: the PE
    grid's limit on the workers is computed, not found by trying every count up to MACs / PEs (which hung
    ``analyze``, ``estimate``, ``simulate`` and ``compile`` on ``"mac": 1e12``)."""
    calls = 0
    real = plan_module.grid_pes

    def counted(plan: plan_module.Plan, w: int) -> int:
        nonlocal calls
        calls += 1
        if calls > 1000:
            raise AssertionError("grid_pes called once per candidate worker count")
        return real(plan, w)

    monkeypatch.setattr(plan_module, "grid_pes", counted)
    program = bind_shape(load_program(EXAMPLES / "stencil1d_r8.json"), {}, None)
    fab = replace(fabric("cgra-tia"), macs=10**15)
    mapping = plan_mapping(program, BuildConfig(), fab, 10**9)
    assert mapping.workers == mapping.roofline_workers
    # the most workers the 32 × 32 grid holds, exactly what the search found
    assert real(plan_module.make_plan(program), mapping.workers) <= 32 * 32
    assert real(plan_module.make_plan(program), mapping.workers + 1) > 32 * 32
    assert calls < 50


def test_a_key_given_twice_is_refused_at_its_path(tmp_path: Path) -> None:
    """JSON leaves a repeated key undefined: `"mac": 512, "mac": 10` used to keep the last silently."""
    text = json.dumps(_doc("emax")).replace('"mac": 512', '"mac": 512, "mac": 10', 1)
    path = tmp_path / "twice.json"
    path.write_text(text)
    with pytest.raises(StencilmapError, match=r"twice\.json: resources\.mac: key 'mac' is given twice"):
        load_device(str(path))
