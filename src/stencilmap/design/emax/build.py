"""The EMAX builder: a program's mapping (degree, p, X chunks, the placed patterns) and its ``Design``.

p is ``--unroll`` or the most patterns that fit the device's rows (``geometry.max_mappings``, a fact of
the placement, not a performance model); the caller may choose it and pass it as ``unroll``.
"""

from __future__ import annotations

from math import ceil

from stencilmap.design.common import concrete_shape
from stencilmap.design.emax.checks import fail, lift, linear_form, stage_of, star_degree, stencil_refs
from stencilmap.design.emax.geometry import mapped_streams, max_mappings, paired, rows, x_chunks
from stencilmap.design.emax.mapping import FIFOS_PER_ROW, EmaxMapping, Instruction
from stencilmap.design.emax.pattern import place
from stencilmap.design.emax.verify import verify_mapping
from stencilmap.design.ir import Channel, Design, Module, params
from stencilmap.design.registry import BuildConfig, register
from stencilmap.device.catalog import Device, load_device
from stencilmap.errors import StencilmapError, param
from stencilmap.program.ir import Program


def emax_device(config: BuildConfig) -> Device:
    device = load_device(config.device or "emax")
    if "emax" not in device.archs:
        raise StencilmapError(f"device '{device.name}' is not an EMAX (its archs: {', '.join(device.archs)})")
    return device


def map_emax(program: Program, config: BuildConfig) -> EmaxMapping:
    """The library's mapping: degree, p (``--unroll`` or the most that fit the rows), X chunks."""
    device = emax_device(config)
    st, fld = stage_of(program)
    shape = concrete_shape(program)
    zyx = (1, shape[0], shape[1]) if len(shape) == 2 else (shape[0], shape[1], shape[2])
    const, coeff = linear_form(program, st)
    d = star_degree({lift(r.offset) for r in stencil_refs(st)} | set(coeff))
    rows_avail, cols_avail = device.resource("pe_rows") or 0, device.resource("pe_columns") or 0
    if 2 * d + 2 > cols_avail or 2 * d + 1 > FIFOS_PER_ROW:
        raise fail(
            f"degree {d} needs {2 * d + 2} PE columns ('{device.name}' has {cols_avail}) and {2 * d + 1} FIFOs per row (EMAX §3.1: {FIFOS_PER_ROW})"
        )
    if config.unroll is not None and config.unroll < 1:
        raise StencilmapError(f"{param('unroll')} (p) must be ≥ 1, got {config.unroll}")
    p = config.unroll if config.unroll is not None else max_mappings(d, rows_avail, zyx[0], cols_avail)
    if p < 1 or rows(d, p, cols_avail) > rows_avail:
        q = max(p, 1)
        raise fail(
            f"p = {q} needs {rows(d, q, cols_avail)} rows (EMAX §4.6); '{device.name}' has {rows_avail}"
        )
    if p > zyx[0]:
        raise fail(f"p = {p} parallel mappings exceed the {zyx[0]} Z planes")
    size = _itemsize(st.dtype)
    lmm = device.resource("lmm_bytes") or 0
    try:
        chunks = x_chunks(zyx[2], d, size, lmm)
    except ValueError as exc:
        raise fail(str(exc)) from None
    columns = 2 * (2 * d + 2) if p > 1 and paired(d, cols_avail) else 2 * d + 2
    instructions = place(d, p, cols_avail, coeff, const)
    mapping = EmaxMapping(
        program=program.name,
        field=fld,
        output=st.name,
        dtype=st.dtype,
        shape=zyx,
        degree=d,
        p=p,
        rows=max(i.row for i in instructions) + 1,
        columns=columns,
        dist=1,
        x_chunks=chunks,
        chunk=ceil(zyx[2] / chunks),
        lmm_words=lmm // size,
        constant=const,
        coefficients=tuple(sorted(coeff.items())),
        instructions=instructions,
        device=device.name,
    )
    verify_mapping(mapping)
    return mapping


def _itemsize(dtype: str) -> int:
    import numpy as np

    return int(np.dtype(dtype).itemsize)


def lmm_streams(m: EmaxMapping) -> int:
    """X-streams one time step moves DDR3 → LMM under this mapping (``geometry.mapped_streams``)."""
    z, y, _ = m.shape
    return mapped_streams(m.degree, m.p, y, z, m.x_chunks)


def emax_json(m: EmaxMapping) -> dict[str, object]:
    return {
        "degree": m.degree,
        "p": m.p,
        "rows": m.rows,
        "columns": m.columns,
        "dist": m.dist,
        "x_chunks": m.x_chunks,
        "instructions": len(m.instructions),
        "lmm_streams": lmm_streams(m),
    }


# ------------------------------------------------------------------------------------------ builder


def _pe(i: Instruction) -> str:
    return f"pe{i.row}_{i.col}"


def design_of(m: EmaxMapping) -> Design:
    """The mapping as a Design: one ``emax_pe`` module per PE used (its instructions as parameters),
    DDR3 as a reader and a writer, a channel per operand route between two PEs."""
    by_pe: dict[str, list[Instruction]] = {}
    for i in m.instructions:
        by_pe.setdefault(_pe(i), []).append(i)
    producer = {i.dst: _pe(i) for i in m.instructions}
    reader, writer = f"ddr.{m.field}", f"ddr.{m.output}"
    modules = [Module(reader, "reader", params(field=m.field))]
    routes: set[tuple[str, str]] = set()
    for name, ins in sorted(by_pe.items()):
        ops = tuple(f"{i.unit} {i.op} {i.dst}" for i in ins)
        modules.append(Module(name, "emax_pe", params(row=ins[0].row, col=ins[0].col, ops=ops), latency=1))
        for i in ins:
            if i.op == "LD":
                routes.add((reader, name))
            if i.op == "ST":
                routes.add((name, writer))
            routes.update((producer[s], name) for s in i.srcs if s in producer and producer[s] != name)
    modules.append(Module(writer, "writer", params(field=m.output)))
    channels = tuple(
        Channel(f"{a}->{b}", a, b, m.stream_words if a == reader else 1, 1, m.dtype)
        for a, b in sorted(routes)
    )
    parameters = params(
        degree=m.degree,
        p=m.p,
        rows=m.rows,
        columns=m.columns,
        dist=m.dist,
        x_chunks=m.x_chunks,
        chunk=m.chunk,
        shape=m.shape,
    )
    return Design(m.program, "emax", tuple(modules), channels, parameters, m.device, None)


@register("emax")
def build_emax(program: Program, config: BuildConfig) -> Design:
    """The EMAX 3D-stencil library's mapping (see the module docstring)."""
    return design_of(map_emax(program, config))
