"""SODA reuse buffers (SODA §3.2, Figure 2): reuse chains of FIFOs and registers for k PEs.

With k PEs producing outputs y … y + k − 1 each cycle, the elements needed are
{a_{u,k}} = ∪_{j<k} {a^(s) + j}. They are split into k reuse chains by remainder modulo k; each chain
takes one new element per cycle, so its data advance by k positions per cycle. Consecutive elements
x < x' of a chain delimit a segment of length d = x' − x (a multiple of k): the segment delays data by
d / k cycles and so stores d / k elements — a register (FF) when d = k, a FIFO of depth d / k when
d > k (SODA §3.2: "the length of the two FIFOs are [0 − (−M)]/3 = M/3 and (M − 3)/3"). Each chain
also holds its entry element, the one it takes this cycle. A chain spanning [lo, hi] thus stores
(hi − lo)/k + 1 elements, and summed over the k chains the buffer stores
max(a_{u,k}) − min(a_{u,k}) + 1 = D_r + k − 1 elements (SODA §3.2; minimal by §3.3).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise

from stencilmap.analysis.windows import access_sets, linear_offsets, reuse_distance
from stencilmap.program.ir import Program, Stencil


@dataclass(frozen=True, slots=True)
class Segment:
    """The storage between two consecutive chain elements ``lo`` < ``hi``: ``depth`` = (hi − lo) / k."""

    lo: int
    hi: int
    depth: int

    @property
    def is_register(self) -> bool:
        return self.depth == 1


@dataclass(frozen=True, slots=True)
class ReuseChain:
    """One reuse chain: the needed offsets ≡ ``residue`` (mod k), ascending, and its segments."""

    residue: int
    offsets: tuple[int, ...]
    segments: tuple[Segment, ...]

    @property
    def fifo_depths(self) -> tuple[int, ...]:
        return tuple(s.depth for s in self.segments if not s.is_register)

    @property
    def registers(self) -> int:
        """FF segments (distance exactly k); the entry element is not counted here."""
        return sum(1 for s in self.segments if s.is_register)

    @property
    def size(self) -> int:
        """Elements stored: the entry element plus every segment's depth."""
        return 1 + sum(s.depth for s in self.segments)


@dataclass(frozen=True, slots=True)
class ReuseBuffer:
    """The reuse buffer of one field read by one stencil with ``k`` PEs."""

    k: int
    offsets: tuple[int, ...]  # the linearized access set {a^(s)}
    chains: tuple[ReuseChain, ...]  # by residue 0 … k − 1

    @property
    def needed(self) -> tuple[int, ...]:
        """{a_{u,k}}: every offset some PE needs in one cycle, ascending."""
        return tuple(sorted(x for c in self.chains for x in c.offsets))

    @property
    def reuse_distance(self) -> int:
        return reuse_distance(self.offsets)

    @property
    def size(self) -> int:
        return sum(c.size for c in self.chains)

    @property
    def fifo_depths(self) -> tuple[int, ...]:
        """Depths of all FIFOs, chain by chain, each chain from its lowest offset up."""
        return tuple(d for c in self.chains for d in c.fifo_depths)

    @property
    def registers(self) -> int:
        return sum(c.registers for c in self.chains)


def reuse_buffer(offsets: tuple[int, ...] | list[int], k: int) -> ReuseBuffer:
    """The SODA reuse buffer for linearized offsets ``offsets`` and ``k`` PEs (k ≥ 1)."""
    if k < 1:
        raise ValueError(f"unroll factor must be at least 1, got {k}")
    if not offsets:
        raise ValueError("a reuse buffer needs at least one offset")
    base = tuple(sorted(set(offsets)))
    needed = {a + j for a in base for j in range(k)}  # SODA §3.2: ∪_{l=y}^{y+k−1} {l + a^(s)}
    by_residue: dict[int, list[int]] = {r: [] for r in range(k)}
    for x in needed:
        by_residue[x % k].append(x)
    chains = []
    for r in range(k):
        chain = tuple(sorted(by_residue[r]))
        segments = tuple(Segment(lo, hi, (hi - lo) // k) for lo, hi in pairwise(chain))
        chains.append(ReuseChain(r, chain, segments))
    buffer = ReuseBuffer(k, base, tuple(chains))
    # SODA §3.2: size = max(a_{u,k}) − min(a_{u,k}) + 1 = D_r + k − 1
    assert buffer.size == reuse_distance(base) + k - 1
    return buffer


def stencil_reuse_buffers(
    program: Program, stencil: Stencil, shape: tuple[int, ...], k: int
) -> dict[str, ReuseBuffer]:
    """The reuse buffer of every field ``stencil`` reads, for ``k`` PEs, keyed by field name."""
    return {
        f: reuse_buffer(linear_offsets(program, stencil, f, shape), k) for f in access_sets(stencil, program)
    }
