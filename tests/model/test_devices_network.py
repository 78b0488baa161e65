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


def test_smi_packets_carry_whole_elements() -> None:
    """SMI's 32-byte packets with 28 bytes of payload (StencilFlow §VI-B): 7 float32 a packet at W = 1,
    one 16-byte W = 4 beat a packet, wider beats split into equal sub-streams of one packet each."""
    from stencilmap.design.partition import network_link

    link = network_link(load_device("stratix10"))
    assert (link.packet_bytes, link.payload_bytes) == (32, 28)
    assert link.wire_bytes(1, 4) == pytest.approx(32 / 7)
    assert link.wire_bytes(1, 8) == pytest.approx(32 / 3)
    assert link.wire_bytes(4, 4) == 32  # 16 B: one a packet
    assert link.wire_bytes(8, 4) == 64  # 2 sub-streams of 16 B
    assert link.wire_bytes(16, 4) == 128  # 64 B: 3 would fit, 4 divide the lanes evenly
    assert link.wire_bytes(1, 32) == 64  # an element wider than the payload: two packets


def test_packet_fields_go_together(tmp_path: Path) -> None:
    doc = json.loads((DEVICES / "stratix10.json").read_text())
    for i, (packet, payload) in enumerate(((32, 0), (0, 28), (28, 32))):
        net = dict(doc["network"], packet_bytes=packet, payload_bytes=payload)
        path = tmp_path / f"bad_packet_{i}.json"
        path.write_text(json.dumps(dict(doc, network=net)))
        with pytest.raises(StencilmapError, match="packet_bytes and payload_bytes"):
            load_device(str(path))


def test_links_bind_beyond_w4() -> None:
    """Two 40 Gbit/s links carry a W = 4 float32 stream (one packet a beat: 9.6 of 10 GB/s at 300 MHz) but
    not a W = 8 one (two packets: 19.2 GB/s): StencilFlow §VIII-C could not vectorize the distributed
    designs further because of the network."""
    import stencilmap as sm

    prog = sm.load(Path(__file__).resolve().parents[2] / "examples/heat3d.json", shape=(16, 32, 32))
    rates = {}
    for w in (1, 4, 8):
        r = sm.estimate(prog, "stratix10", "stencilflow", iterate=2, vector=w, devices=2)
        assert r.partition is not None
        rates[w] = min(c.rate for c in r.partition.network_channels)
    assert rates[1] == rates[4] == 1
    assert rates[8] == pytest.approx(10 / 19.2, rel=1e-3)
