"""The device catalog: every file loads, the papers' figures are in it, lookups fail clearly."""

from __future__ import annotations

from pathlib import Path

import pytest

from stencilmap.analysis.latency import OperatorLatencies
from stencilmap.errors import StencilmapError
from stencilmap.model.devices import device_names, load_device, practical_bandwidth

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

    from stencilmap.model.devices import load_device

    doc = json.loads(
        (Path(__file__).resolve().parents[2] / "src/stencilmap/model/devices/ku060.json").read_text()
    )
    doc["clock_mhz"] = 300
    path = tmp_path / "ku060_300.json"
    path.write_text(json.dumps(doc))
    device = load_device(str(path))
    assert device.name == "ku060" and device.clock_mhz == 300
    doc["dram_banks"] = "two"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    with pytest.raises(StencilmapError, match=r"bad\.json: dram_banks: input should be a valid integer"):
        load_device(str(bad))
    with pytest.raises(StencilmapError, match="no such device file"):
        load_device(str(tmp_path / "none.json"))
    with pytest.raises(StencilmapError, match="not JSON"):
        (tmp_path / "x.json").write_text("{")
        load_device(str(tmp_path / "x.json"))


def _catalog_file(name: str) -> dict:  # type: ignore[type-arg]
    import json

    path = Path(__file__).resolve().parents[2] / f"src/stencilmap/model/devices/{name}.json"
    return json.loads(path.read_text())  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("name", "field", "value", "message"),
    [
        ("ku060", "memory_interleaved", "yes", r"memory_interleaved: input should be a valid boolean"),
        ("ku060", "memory_interleaved", 1, r"memory_interleaved: input should be a valid boolean"),
        ("v100", "memory_interleaved", True, r"memory_interleaved describes an FPGA board"),
    ],
)
def test_memory_interleaved_is_validated(
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
