"""The Stratix 10's (and Agilex 7's) routability caps and clock model (StencilFlow §VIII-C, Table I)."""

from __future__ import annotations

import pytest

import stencilmap as sm
from stencilmap.device.catalog import load_device
from tests.conftest import CORPUS

JACOBI = CORPUS / "stencilflow" / "jacobi3d_32x32x32_8itr.json"


def _kernel_to_device(device: str, resource: str, kernel_share: float) -> float:
    """Table I's percentages are of what the shell leaves the kernel; the model's count the shell."""
    dev = load_device(device)
    assert dev.resource_model is not None
    base = dev.resource_model.base[resource]
    total = dict(dev.resources)[resource]
    return (base + kernel_share * (total - base)) / total


def test_caps_admit_table1_fullest_designs() -> None:
    dev = load_device("stratix10")
    assert dev.resource_model is not None
    caps = dict(dev.resource_model.max_utilization)
    assert _kernel_to_device("stratix10", "alm", 0.819) <= caps["alm"]  # Diffusion 3D W = 8 (ours)
    assert _kernel_to_device("stratix10", "dsp", 0.860) <= caps["dsp"]  # Diffusion 2D (Zohouri et al.)
    assert _kernel_to_device("stratix10", "m20k", 0.970) <= caps["m20k"]  # Diffusion 3D (Zohouri et al.)


@pytest.mark.parametrize(("device", "nominal"), [("stratix10", 300), ("agilex7", 400)])
def test_clock_flat_to_table1_fullest_then_falls(device: str, nominal: float) -> None:
    dev = load_device(device)
    cm = dev.clock_model
    assert cm is not None and cm.resource == "alm" and cm.fastest_mhz == nominal == dev.clock_mhz
    assert cm.mhz(_kernel_to_device("stratix10", "alm", 0.819)) == nominal  # 292-317 MHz (§VIII-C)
    assert cm.mhz(0.9) < nominal


@pytest.mark.skipif(not JACOBI.exists(), reason="needs the shared corpus")
def test_a_full_w1_chain_hits_the_alm_cap() -> None:
    prog = sm.load(JACOBI, shape=(2**15, 32, 32))
    r = sm.estimate(prog, "stratix10", "stencilflow", iterate=14, vector=1)  # Fig. 14's 112 stencils
    assert r.resources.fits and r.clock_mhz == 300
    big = sm.estimate(prog, "stratix10", "stencilflow", iterate=56, vector=1)  # 448 stencils
    assert not big.resources.fits and big.resources.binding == "alm"
