"""The optional ``network`` of a device file (StencilFlow §VI-B: the links between boards)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stencilmap.device.catalog import load_device
from stencilmap.errors import StencilmapError

DEVICES = Path(__file__).resolve().parents[2] / "src/stencilmap/device/files"


def test_stratix10_has_the_520n_links() -> None:
    net = load_device("stratix10").network
    assert net is not None and net.links == 2 and net.link_bandwidth_gbs == 5.0  # 40 Gbit/s QSFP links
    assert net.bytes_per_cycle(300) == pytest.approx(2 * 5e9 / 300e6)
    assert net.latency_cycles(300) == round(net.link_latency_ns * 0.3)
    assert load_device("stratix10").to_json()["network"]["links"] == 2


def test_network_is_optional_and_validated(tmp_path: Path) -> None:
    doc = json.loads((DEVICES / "stratix10.json").read_text())
    del doc["network"]
    path = tmp_path / "plain.json"
    path.write_text(json.dumps(doc))
    assert load_device(str(path)).network is None
    for field, value, message in (
        ("link_bandwidth_gbs", 0, "network.link_bandwidth_gbs"),
        ("links", "two", "network.links"),
        ("link_latency_ns", -1, "network.link_latency_ns"),
    ):
        bad = dict(
            doc, network={"link_bandwidth_gbs": 5.0, "link_latency_ns": 800.0, "links": 2, field: value}
        )
        path = tmp_path / f"bad_{field}.json"  # load_device caches by path
        path.write_text(json.dumps(bad))
        with pytest.raises(StencilmapError, match=message):
            load_device(str(path))


def test_a_hop_is_at_least_one_cycle() -> None:
    net = load_device("stratix10").network
    assert net is not None
    from dataclasses import replace

    assert replace(net, link_latency_ns=0.0).latency_cycles(300) == 1
