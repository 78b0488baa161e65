"""Packing a lowered model (``model.lower``) into the kernel's two flat memories ``I`` and ``F``.

``I`` (int64): a 32-slot header of region bases, the module table (``kernel.MCOLS`` words a module),
the channel table (``kernel.CCOLS`` words a channel), the CSR lists (input channels, output channels,
PE groups) with the window taps parallel to the output list, pipeline timestamps, writer destinations,
bytecode and PE port descriptors. ``F`` (float64): channel storage, module memories, scratch, the
evaluation stack and temporaries, reader streams, the output buffer, constants, boundary values,
per-module traffic and per-bank bandwidth credit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from stencilmap.sim import memory as K
from stencilmap.sim.model import SimModel

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]


@dataclass
class Packed:
    """The kernel's memories and where the interesting regions are."""

    model: SimModel
    I: I64
    F: F64

    def module(self, m: int, col: int) -> int:
        return int(self.I[int(self.I[K.H_MOD]) + m * K.MCOLS + col])

    def channel(self, c: int, col: int) -> int:
        return int(self.I[int(self.I[K.H_CH]) + c * K.CCOLS + col])

    def inputs(self, m: int) -> list[int]:
        lists = int(self.I[K.H_LIST])
        return [int(self.I[lists + i]) for i in range(self.module(m, K.M_IN0), self.module(m, K.M_IN1))]

    def outputs(self, m: int) -> list[int]:
        lists = int(self.I[K.H_LIST])
        return [int(self.I[lists + i]) for i in range(self.module(m, K.M_OUT0), self.module(m, K.M_OUT1))]

    def moved(self, m: int) -> float:
        return float(self.F[int(self.I[K.H_MODF]) + 2 * m + 1])

    def output(self, base: int, size: int) -> F64:
        start = int(self.I[K.H_OUT]) + base
        return self.F[start : start + size]


def _aligned(a: npt.NDArray[Any]) -> Any:
    """A copy of ``a`` starting on a 64-byte boundary: module rows (``MCOLS`` words, a multiple of 8) and
    channel rows then each start a cache line."""
    raw = np.zeros(a.size + 8, a.dtype)
    skip = (-raw.ctypes.data % 64) // a.itemsize
    out = raw[skip : skip + a.size]
    out[:] = a
    return out


def pack(model: SimModel, fuse_chains: bool = True) -> Packed:
    """The engine's memories for ``model``; ``fuse_chains``: run each reuse chain as one ring buffer
    while it is steady (``engine.c``; identical results, only faster)."""
    a: dict[str, Any] = model.arrays
    n_mod, n_ch = len(a["kind"]), len(a["cap"])
    in_ch, out_ch, grp = a["in_ch"], a["out_ch"], a["grp"]
    n_in, n_out = len(in_ch), len(out_ch)
    code = np.ascontiguousarray(a["code"]).ravel()
    pinfo = np.ascontiguousarray(a["pinfo"]).ravel()
    sizes = [
        K.HEADER,
        n_mod * K.MCOLS,
        n_ch * K.CCOLS,
        n_in + n_out + len(grp),
        n_out,
        len(a["pipe_t"]),
        len(a["dest"]),
        len(code),
        len(pinfo),
    ]
    bases = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    mod_b, ch_b, list_b, outx_b, pipe_b, dest_b, code_b, pinfo_b = (int(x) for x in bases[1:9])
    I = _aligned(np.zeros(int(bases[-1]), np.int64))

    fparts = [
        a["store"],
        a["mem"],
        a["scratch"],
        a["stack"],
        a["temps"],
        a["streams"],
        a["output"],
        a["consts"],
        a["pval"],
        np.zeros(2 * n_mod),
        np.zeros(K.BWCOLS * len(a["rate"])),
    ]
    fbases = np.concatenate([[0], np.cumsum([len(p) for p in fparts])]).astype(np.int64)
    F = _aligned(np.concatenate([np.asarray(p, np.float64) for p in fparts]))
    store_b, mem_b, scr_b, stack_b, temps_b, stream_b, out_b, const_b, pval_b, modf_b, bw_b = (
        int(x) for x in fbases[:11]
    )

    header = {
        K.H_NMOD: n_mod,
        K.H_NCH: n_ch,
        K.H_MOD: mod_b,
        K.H_CH: ch_b,
        K.H_LIST: list_b,
        K.H_PIPE: pipe_b,
        K.H_DEST: dest_b,
        K.H_CODE: code_b,
        K.H_PINFO: pinfo_b,
        K.H_NBANK: len(a["rate"]),
        K.H_STORE: store_b,
        K.H_MEM: mem_b,
        K.H_SCR: scr_b,
        K.H_STACK: stack_b,
        K.H_TEMPS: temps_b,
        K.H_STREAM: stream_b,
        K.H_OUT: out_b,
        K.H_CONST: const_b,
        K.H_PVAL: pval_b,
        K.H_MODF: modf_b,
        K.H_BW: bw_b,
        K.H_OUTX: outx_b - n_in,
        K.H_FUSE: int(fuse_chains),
    }
    for slot, value in header.items():
        I[slot] = value

    mt = I[mod_b : mod_b + n_mod * K.MCOLS].reshape(n_mod, K.MCOLS)
    mt[:, K.M_KIND] = a["kind"]
    mt[:, K.M_IN0] = a["in_ptr"][:-1]
    mt[:, K.M_IN1] = a["in_ptr"][1:]
    mt[:, K.M_OUT0] = a["out_ptr"][:-1] + n_in
    mt[:, K.M_OUT1] = a["out_ptr"][1:] + n_in
    mt[:, K.M_MEMB] = a["mem_base"]
    mt[:, K.M_GROUP] = a["group"]
    mt[:, K.M_GRP0] = a["grp_ptr"][:-1] + n_in + n_out
    mt[:, K.M_GRP1] = a["grp_ptr"][1:] + n_in + n_out
    mt[:, K.M_P : K.M_P + 8] = a["ip"]
    mt[:, K.M_E : K.M_E + 8] = a["pe_ex"]
    mt[:, K.M_R : K.M_R + 8] = a["pe_pres"]  # on, centre port, box lo[3], hi[3]
    mt[:, K.M_IN : K.M_IN + 6] = a["pe_in"]
    mt[:, K.M_T : K.M_T + 4] = a["pe_at"]

    ct = I[ch_b : ch_b + n_ch * K.CCOLS].reshape(n_ch, K.CCOLS)
    ct[:, K.C_CAP] = a["cap"]
    ct[:, K.C_WIDTH] = a["width"]
    ct[:, K.C_BASE] = a["base"] + store_b
    ct[:, K.C_PUSH] = -1
    ct[:, K.C_POP] = -1

    I[list_b : list_b + n_in] = in_ch
    I[list_b + n_in : list_b + n_in + n_out] = out_ch
    I[list_b + n_in + n_out : list_b + n_in + n_out + len(grp)] = grp
    I[outx_b : outx_b + n_out] = a["out_x"]
    I[dest_b : dest_b + len(a["dest"])] = a["dest"]
    I[code_b : code_b + len(code)] = code
    I[pinfo_b : pinfo_b + len(pinfo)] = pinfo

    F[modf_b : modf_b + 2 * n_mod : 2] = a["fp"][:, 0]
    bw = F[bw_b : bw_b + K.BWCOLS * len(a["rate"])].reshape(-1, K.BWCOLS)
    bw[:, 0] = a["credit"]
    bw[:, 1] = a["rate"]
    bw[:, 2] = a["credit_cap"]
    return Packed(model, I, F)
