"""StencilFlow: the runtime C = L + I·N (§VIII-A) and the horizontal-diffusion roofline (§IX-A).

§IX-A: horizontal diffusion performs 87 additions, 41 multiplications and 2 square roots per point (min,
max and ternaries are not counted) and, with perfect reuse, reads 5IJK + 5I operands and writes 4IJK:
130 ops over 9 operands of 4 bytes = 65/18 op/B, so at most 65/18 × 58.3 = 210.5 GOp/s with the
bandwidth StencilFlow achieved on the 520N, 277.3 GOp/s at the 76.8 GB/s peak. The real program is not
published; the test builds one with exactly those operation counts and fields (five 3-D inputs, five
inputs over ``i`` only, four outputs) on the 128 × 128 × 80 domain of §IX-B.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from stencilmap.analysis import analyze_program
from stencilmap.cli.estimate import estimate_cmd
from stencilmap.cli.roofline import roofline_cmd
from stencilmap.device.catalog import load_device
from stencilmap.program import load_program
from stencilmap.program.data import bind_shape
from tests.model.helpers import example, run_json, write_json_program

#: products (one multiply each) and plain reads per output; two outputs take a square root.
PRODUCTS = (11, 10, 10, 10)
READS = (13, 13, 12, 12)


def horizontal_diffusion_like() -> dict[str, Any]:
    inputs: dict[str, Any] = {f"f{n}": {"data": "random:0-1", "data_type": "float32"} for n in range(5)}
    inputs.update(
        {f"c{n}": {"data": "random:0-1", "data_type": "float32", "input_dims": ["i"]} for n in range(5)}
    )
    offsets = ["[i, j, k]", "[i, j+1, k]", "[i, j-1, k]", "[i, j, k+1]", "[i, j, k-1]"]
    program = {}
    for m, (products, reads) in enumerate(zip(PRODUCTS, READS, strict=True)):
        terms = [f"c{t % 5}[i] * f{t % 5}{offsets[(t + m) % 5]}" for t in range(products)]
        terms += [f"f{(t + m) % 5}{offsets[t % 5]}" for t in range(reads)]
        body = " + ".join(terms)
        expr = f"sqrt({body})" if m < 2 else body
        boundary = {f: {"type": "constant", "value": 1.0} for f in inputs}
        program[f"o{m}"] = {"computation_string": f"o{m} = {expr}", "boundary_conditions": boundary,
                            "data_type": "float32"}  # fmt: skip
    return {"inputs": inputs, "outputs": [f"o{m}" for m in range(4)], "dimensions": [128, 128, 80],
            "program": program}  # fmt: skip


def test_horizontal_diffusion_roofline(tmp_path: Path) -> None:
    prog = write_json_program(tmp_path / "hdiff.json", horizontal_diffusion_like())
    facts = analyze_program(bind_shape(load_program(prog), {}, None))
    assert facts.ops.as_dict() == {"add": 87, "mul": 41, "sqrt": 2}
    assert facts.bytes_per_point == pytest.approx((9 + 5 / (128 * 80)) * 4)  # 9IJK + 5I operands
    r = run_json(roofline_cmd, str(prog), "--device", "stratix10")
    assert r["operational_intensity"] == pytest.approx(65 / 18, rel=1e-4)
    assert r["bandwidth_gbs"] == pytest.approx(58.3) and r["peak_bandwidth_gbs"] == 76.8
    assert round(r["attainable_gops"], 1) == 210.5  # eq. 3
    assert round(r["attainable_peak_bandwidth_gops"], 1) == 277.3
    assert r["bound"] == "bandwidth"
    # eq. 4: saturating the 917.1 GOp/s of §VIII-C at this intensity needs 254.0 GB/s
    assert 917.1 / r["operational_intensity"] == pytest.approx(254.0, abs=0.1)


def test_runtime_is_l_plus_n_over_w() -> None:
    """C = L + I·N with I = 1 and N over the vector width (eq. 1): the analysis's runtime cycles, with the
    latencies the design's PEs have: the device file's operator table (the builders take it from
    ``BuildConfig.device``), which on the Stratix 10 differs from the default one."""
    program = bind_shape(load_program(example("heat3d.json")), {}, None)
    for w in (1, 4, 8):
        r = run_json(estimate_cmd, str(example("heat3d.json")), "--device", "stratix10", "--vector", str(w))
        facts = analyze_program(program, vector=w, latencies=load_device("stratix10").operator_latencies())
        assert r["arch"] == "stencilflow" and r["lanes"] == w
        assert r["cycles_per_launch"] == facts.runtime_cycles == facts.latency_cycles + -(-32 * 64 * 64 // w)
        assert r["latency_cycles"] == facts.latency_cycles
