"""The device catalog: every file loads, the papers' figures are in it, lookups fail clearly."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from stencilmap.analysis.latency import OperatorLatencies
from stencilmap.device.catalog import device_names, load_device, practical_bandwidth
from stencilmap.errors import StencilmapError
from stencilmap.point import DesignPoint

REQUIRED = {
    "ku060", "stratix10", "de5", "395-d8", "395-ab", "cgra-tia", "emax", "v100", "p100", "xeon-e5-2690v3",
}  # fmt: skip


def test_catalog_holds_the_papers_devices() -> None:
    assert set(device_names()) >= REQUIRED
    assert list(device_names()) == sorted(device_names())


@pytest.mark.parametrize("name", device_names())
def test_every_device_loads_and_is_consistent(name: str) -> None:
    d = load_device(name)
    assert d.name == name and d.kind in ("fpga", "cgra", "gpu", "cpu")
    # OpenCL eq. 3: the quoted peak is S_bus × f_mem × N_mem (the loader checks it within 1%)
    peak = practical_bandwidth(d.bus_width_bits, d.mem_clock_mhz, d.dram_banks, 1.0)
    assert peak == pytest.approx(d.bandwidth_gbs, rel=0.01)
    assert d.practical_bandwidth_gbs == pytest.approx(d.bandwidth_gbs * d.mem_efficiency)
    assert isinstance(d.operator_latencies(), OperatorLatencies)
    assert d.peak("float32") > 0 and d.archs and d.sources
    assert d.to_json()["name"] == name
    if d.kind == "fpga":
        assert d.resource_model is not None and d.memory_blocks is not None


@pytest.mark.parametrize(
    ("name", "banks", "peak_gbs", "clock"),
    [
        ("ku060", 2, 25.6, 250),  # SODA §5.1
        ("stratix10", 4, 76.8, 300),  # StencilFlow §VIII-B
        ("de5", 2, 25.6, 270),  # OpenCL Table 3, §5.1's lower frequency limit
        ("395-d8", 4, 34.1, 230),  # OpenCL Table 3, Table 5
        ("395-ab", 4, 34.1, 226),  # OpenCL Table 3, Table 4
        ("cgra-tia", 1, 100.0, 1200),  # CGRA §VI
        ("emax", 1, 0.8, 200),  # EMAX Table 1 (DDR3-LocalMEM)
    ],
)
def test_paper_figures(name: str, banks: int, peak_gbs: float, clock: float) -> None:
    d = load_device(name)
    assert (d.dram_banks, d.bandwidth_gbs, d.clock_mhz) == (banks, peak_gbs, clock)


def test_more_paper_figures() -> None:
    assert load_device("stratix10").practical_bandwidth_gbs == pytest.approx(58.3)  # StencilFlow §VIII-D
    assert load_device("v100").practical_bandwidth_gbs == pytest.approx(850.0)  # CGRA §VIII-A copy bandwidth
    assert load_device("cgra-tia").peak("float64") == pytest.approx(2 * 256 * 1.2)  # CGRA §VI: 614 GFLOPS
    assert load_device("cgra-tia").resource("mac") == 256
    assert load_device("emax").host_bandwidth_gbs == 0.4  # EMAX Table 1: USB 3.0
    de5 = load_device("de5")
    assert (de5.resource("alm"), de5.resource("dsp"), de5.peak("float32")) == (234720, 256, 196.0)  # Table 3


def test_bytes_per_cycle_per_bank() -> None:
    de5 = load_device("de5")
    # 25.6 GB/s × 0.8 over 2 banks at 270 MHz
    assert de5.bytes_per_cycle_per_bank() == pytest.approx(25.6e9 * 0.8 / 2 / 270e6)
    assert de5.bytes_per_cycle_per_bank(300.0) == pytest.approx(25.6e9 * 0.8 / 2 / 300e6)
    with pytest.raises(StencilmapError, match="positive"):
        de5.bytes_per_cycle_per_bank(0.0)


def test_operator_latencies_come_from_the_file() -> None:
    lat = load_device("stratix10").operator_latencies()
    assert (lat.add, lat.mul) == (4, 4)
    assert lat.of("exp") == lat.func


def test_unknown_device_lists_the_known_ones() -> None:
    with pytest.raises(StencilmapError) as err:
        load_device("vu9p")
    assert (
        "unknown device 'vu9p'" in str(err.value) and "ku060" in str(err.value) and "\n" not in str(err.value)
    )


def test_a_device_file_given_by_path_works_where_a_name_does(tmp_path: Path) -> None:
    import json

    from stencilmap.device.catalog import load_device

    doc = json.loads(
        (Path(__file__).resolve().parents[2] / "src/stencilmap/device/files/ku060.json").read_text()
    )
    doc["clock_mhz"] = 300
    path = tmp_path / "ku060_300.json"
    path.write_text(json.dumps(doc))
    device = load_device(str(path))
    assert device.name == "ku060" and device.clock_mhz == 300
    doc["dram_banks"] = "two"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    with pytest.raises(StencilmapError, match=r"bad\.json: dram_banks: must be an integer, got"):
        load_device(str(bad))
    with pytest.raises(StencilmapError, match="no such device file"):
        load_device(str(tmp_path / "none.json"))
    with pytest.raises(StencilmapError, match="not JSON"):
        (tmp_path / "x.json").write_text("{")
        load_device(str(tmp_path / "x.json"))


def _catalog_file(name: str) -> dict:  # type: ignore[type-arg]
    import json

    path = Path(__file__).resolve().parents[2] / f"src/stencilmap/device/files/{name}.json"
    return json.loads(path.read_text())  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("name", "field", "value", "message"),
    [
        ("ku060", "memory_interleaved", "yes", r"memory_interleaved: must be true or false, got"),
        ("ku060", "memory_interleaved", 1, r"memory_interleaved: must be true or false, got"),
        ("v100", "memory_interleaved", True, r"memory_interleaved describes an FPGA board"),
        ("v100", "compute_capability", "7", r"compute_capability: string should match pattern"),
        ("v100", "compute_capability", 7.0, r"compute_capability: must be a string, got 7\.0"),
        ("ku060", "compute_capability", "7.0", r"compute_capability describes an NVIDIA GPU"),
    ],
)
def test_memory_interleaved_and_compute_capability_are_validated(
    tmp_path: Path, name: str, field: str, value: object, message: str
) -> None:
    import json

    doc = _catalog_file(name)
    doc[field] = value
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(StencilmapError, match=message):
        load_device(str(path))


def test_memory_interleaved_multiplies_the_rate_of_an_unpinned_program(tmp_path: Path) -> None:
    import json

    doc = _catalog_file("ku060")
    doc["memory_interleaved"] = True
    path = tmp_path / "ku060_interleaved.json"
    path.write_text(json.dumps(doc))
    device = load_device(str(path))
    assert device.to_json()["memory_interleaved"] is True
    assert device.bank_rate(pinned=False, clock_mhz=250) == pytest.approx(21.504e9 / 250e6)
    assert device.bank_rate(pinned=True, clock_mhz=250) == pytest.approx(21.504e9 / 2 / 250e6)


# ------------------------------------------------------------------ boards users asked for (issue 11 §4)

NEW_BOARDS = [
    # name, banks, peak GB/s, memory kind, a logic resource and its count (from the data sheets)
    ("u280", 32, 460.0, "hbm", "lut", 1_304_000),
    ("u250", 4, 76.8, "ddr", "lut", 1_728_000),
    ("agilex7", 2, 42.66, "ddr", "alm", 487_200),
]


@pytest.mark.parametrize(("name", "banks", "peak", "kind", "logic", "count"), NEW_BOARDS)
def test_new_boards_load_with_sources(
    name: str, banks: int, peak: float, kind: str, logic: str, count: int
) -> None:
    d = load_device(name)
    assert (d.dram_banks, d.bandwidth_gbs, d.memory_kind, d.resource(logic)) == (banks, peak, kind, count)
    assert d.to_json()["memory_kind"] == kind
    assert any("assumed" in s for s in d.sources) and any(
        "data sheet" in s or "table" in s for s in d.sources
    )


@pytest.mark.parametrize("name", [b[0] for b in NEW_BOARDS])
def test_estimate_and_explore_run_on_new_boards(name: str) -> None:
    from stencilmap.explore import design_space
    from stencilmap.explore.search import explore
    from stencilmap.jobs.estimate import EstimateConfig, estimate
    from tests.explore.helpers import config
    from tests.model.helpers import example

    r = estimate(
        EstimateConfig(
            program=example("jacobi2d.soda"),
            point=DesignPoint(device=name, arch="soda", unroll=4, iterate=2, vector=None),
            iterations=8,
            shape=(256, 256),
        )
    )
    assert r.resources is not None and r.resources.fits and r.predicted_seconds > 0
    result = explore(config("jacobi2d.soda", name, (128, 256), 4))
    assert (
        result.best is not None
        and design_space(config("jacobi2d.soda", name, (128, 256), 4)).device.name == name
    )


def _sum8(tmp_path: Path, banks: list[int | None]) -> Path:
    """A memory-bound SODA program of 7 inputs and an output, each port on the bank given (None: unnamed)."""
    dram = ["" if b is None else f"dram {b} " for b in banks]
    lines = ["kernel: sum8", "burst width: 512", "unroll factor: 4"]
    lines += [f"input {dram[i]}float: a{i}(1024, *)" for i in range(7)]
    lines += [
        f"output {dram[7]}float:",
        "  y(0, 0) = a0(0, -1) + a0(0, 1) + " + " + ".join(f"a{i}(0, 0)" for i in range(1, 7)),
    ]
    lines += ["iterate: 1", "border: ignore", "cluster: none"]
    path = tmp_path / f"sum8_{'_'.join(str(b) for b in banks)}.soda"
    path.write_text("\n".join(lines) + "\n")
    return path


def _seconds(program: Path, device: str) -> float:
    from stencilmap.jobs.estimate import EstimateConfig, estimate

    r = estimate(
        EstimateConfig(
            program=program,
            point=DesignPoint(device=device, arch="soda", unroll=16, iterate=1, vector=None),
            iterations=1,
            shape=(4096, 1024),
        )
    )
    assert r.scenario == "bandwidth"
    return r.compute_seconds / r.launches


def test_hbm_is_faster_in_proportion_when_ports_spread_over_channels(tmp_path: Path) -> None:
    """The same 8-port design (k = 16) memory-bound on both boards: on the U280 each port has its own
    pseudo-channel (B_prac / 32 each), on the U250 its 4 DDR4 banks carry two ports each (B_prac / 4 / 2).
    The predicted time scales with the per-port bandwidth: (460 × 0.9 / 32) / (76.8 × 0.84 / 8) = 1.604."""
    u280, u250 = load_device("u280"), load_device("u250")
    per_port_280 = u280.practical_bandwidth_gbs / 32
    per_port_250 = u250.practical_bandwidth_gbs / 4 / 2
    t280 = _seconds(_sum8(tmp_path, list(range(8))), "u280")
    t250 = _seconds(_sum8(tmp_path, [i // 2 for i in range(8)]), "u250")
    assert t250 / t280 == pytest.approx(per_port_280 / per_port_250, rel=0.02)
    assert t250 / t280 > 1.5


def test_one_hbm_channel_is_slower_than_one_ddr4_bank(tmp_path: Path) -> None:
    """UG1393: a pseudo-channel (14.375 GB/s) delivers less than a DDR4 channel (19.2 GB/s): a program
    that names no bank puts every port on bank 0 and runs slower on the U280, in proportion."""
    program = _sum8(tmp_path, [None] * 8)
    ratio = _seconds(program, "u280") / _seconds(program, "u250")
    per_bank = (load_device("u250").practical_bandwidth_gbs / 4) / (
        load_device("u280").practical_bandwidth_gbs / 32
    )
    assert ratio == pytest.approx(per_bank, rel=0.02) and ratio > 1.2


@pytest.mark.parametrize("name", ["ku060", "u250", "u280"])
def test_xilinx_boards_have_a_routability_cap_and_a_clock_model(name: str) -> None:
    """Issue 25: no design sits at 99% of a resource at the nominal clock. The clock falls at most 10% below
    the target (SODA §4.4: 'always within 10% of the target'; §5.2: 229.1 of 250 MHz at worst)."""
    dev = load_device(name)
    assert dev.resource_model is not None
    caps = dict(dev.resource_model.max_utilization)
    assert set(caps) == {name for name, _ in dev.resources} and all(0.5 < v < 1 for v in caps.values())
    cm = dev.clock_model
    assert cm is not None and cm.resource == "lut"
    assert cm.mhz(0.0) == cm.fastest_mhz == dev.clock_mhz
    slowest = cm.mhz(caps["lut"])
    assert 0.9 * dev.clock_mhz <= slowest < dev.clock_mhz
    sources = " ".join(dev.sources)
    assert "max_utilization" in sources and "clock_model" in sources and "229.1" in sources


@pytest.mark.parametrize("name", [n for n in device_names() if load_device(n).kind == "fpga"])
def test_every_fpga_has_a_routability_cap_and_a_clock_model(name: str) -> None:
    """Issue 25: every FPGA of the catalog caps its utilization and lowers its clock as a design fills it
    (the DE5's OpenCL §5.1 model extended to every board), each said in the device file's sources; a design
    at its cap is never faster than the board's fastest clock, nor slower than 80% of it."""
    dev = load_device(name)
    assert dev.resource_model is not None and dev.resource_model.max_utilization
    cm = dev.clock_model
    assert cm is not None and cm.resource in {r for r, _ in dev.resources}
    caps = dict(dev.resource_model.max_utilization)
    fs = [f for _, f in cm.points]
    assert all(a >= b for a, b in itertools.pairwise(fs)), "the clock never rises with utilization"
    at_cap = cm.mhz(caps.get(cm.resource, 1.0))
    assert 0.75 * cm.fastest_mhz <= at_cap <= cm.fastest_mhz
    assert "clock_model" in " ".join(dev.sources)
