"""Halos: how far a stencil's reads reach around the centre, on its own and accumulated over the DAG.

A stencil reading a stencil output needs the producer's halo plus its own reach; along every path of
the DAG, over every ``iterate`` copy, the accumulated halo is the component-wise maximum. For a chain of
stages this is the sum over stages (SODA §2.2: "the halo size in each dimension is the sum of halo
sizes among all the stages").
"""

from __future__ import annotations

from dataclasses import dataclass

from stencilmap.analysis.dag import node_name, pass_graph
from stencilmap.analysis.windows import stencil_refs, stencil_windows
from stencilmap.program.ir import Program, Stencil


@dataclass(frozen=True, slots=True)
class Halo:
    """Reach below (``low``) and above (``high``) the centre along each axis of the iteration space."""

    low: tuple[int, ...]
    high: tuple[int, ...]

    @staticmethod
    def zero(rank: int) -> Halo:
        return Halo((0,) * rank, (0,) * rank)

    @property
    def size(self) -> tuple[int, ...]:
        """Points lost per axis when every read must be in bounds: low + high (= S_d − 1, SODA §2.2)."""
        return tuple(lo + hi for lo, hi in zip(self.low, self.high, strict=True))

    def __add__(self, other: Halo) -> Halo:
        return Halo(
            tuple(a + b for a, b in zip(self.low, other.low, strict=True)),
            tuple(a + b for a, b in zip(self.high, other.high, strict=True)),
        )

    def union(self, other: Halo) -> Halo:
        """Component-wise maximum: the halo covering both."""
        return Halo(
            tuple(max(a, b) for a, b in zip(self.low, other.low, strict=True)),
            tuple(max(a, b) for a, b in zip(self.high, other.high, strict=True)),
        )


def field_halos(program: Program, stencil: Stencil) -> dict[str, Halo]:
    """The reach of a stencil's reads of each field it reads (temporaries included)."""
    return {w.field: Halo(w.halo_low, w.halo_high) for w in stencil_windows(program, stencil)}


def stencil_halo(program: Program, stencil: Stencil) -> Halo:
    """The reach of a stencil over all the fields it reads."""
    halo = Halo.zero(program.rank)
    for h in field_halos(program, stencil).values():
        halo = halo.union(h)
    return halo


def accumulated_halos(program: Program) -> dict[str, Halo]:
    """Accumulated halo of every node of the unrolled DAG (inputs: zero), keyed by node name."""
    g = pass_graph(program)
    acc: dict[str, Halo] = {}
    own: dict[str, dict[str, Halo]] = {}
    for node in g.nodes:
        halo = Halo.zero(program.rank)
        if node.stencil is not None:
            if node.field not in own:
                own[node.field] = field_halos(program, node.stencil)
            reach = own[node.field]
            for e in g.into(node.name):
                halo = halo.union(acc[e.producer] + reach[e.field])
        acc[node.name] = halo
    return acc


def program_halo(program: Program) -> Halo:
    """The halo of the whole program: the union of the accumulated halos of all nodes."""
    halo = Halo.zero(program.rank)
    for h in accumulated_halos(program).values():
        halo = halo.union(h)
    return halo


def everywhere_defined(program: Program, name: str) -> bool:
    """Whether every point of field ``name`` is defined in every pass: inputs are (and so, by induction
    over ``iterate``, an input fed by an output defined everywhere when its inputs are); a stencil is
    when every read it makes is in bounds (offset 0), or has a ``constant`` or ``copy`` boundary, of a
    field defined everywhere."""
    fed = {i: o for i, o in program.feeds()} if program.iterate > 1 and program.border == "ignore" else {}
    seen: dict[str, bool] = {}

    def defined(field: str) -> bool:
        if field in seen:
            return seen[field]
        seen[field] = True  # an input fed by its own pass's output: the induction hypothesis
        st = program.stencil(field)
        if st is None:
            ok = defined(fed[field]) if field in fed else True
        else:
            ok = all(
                (not any(r.offset) or st.boundary_of(r.field).kind != "shrink") and defined(r.field)
                for r in stencil_refs(st)
            )
        seen[field] = ok
        return ok

    return defined(name)


def defined_halo(program: Program, stencil: str) -> Halo | None:
    """``border: preserve``: the halo of the box where ``stencil``'s output of one pass is defined, or None
    when that region is not a box. Only ``shrink`` reads shrink it (a ``constant``/``copy`` read outside
    the grid is defined); it is a box when every ``constant``/``copy`` read away from the point is of a
    field defined everywhere (``everywhere_defined``), and then the accumulated halo of the shrink reads is
    exact. All-shrink programs (SODA's): ``accumulated_halos``."""
    from dataclasses import replace

    one = replace(program, iterate=1)
    for st in one.stencils:
        for r in stencil_refs(st):
            if (
                any(r.offset)
                and st.boundary_of(r.field).kind != "shrink"
                and not everywhere_defined(one, r.field)
            ):
                return None
    # a shrink read at offsets O of a producer defined on [lo, n − hi) is defined on [lo − min O, n − hi −
    # max O): signed, so reads the opposite way along a chain cancel (s4 = s3(−1), s5 = s4(+1): s5 is
    # defined on [0, n − 1), not [1, n − 1) as adding the halos gives)
    g = pass_graph(one)
    acc: dict[str, Halo] = {}
    for node in g.nodes:
        low, high = [0] * one.rank, [0] * one.rank
        if node.stencil is not None:
            for e in g.into(node.name):
                if node.stencil.boundary_of(e.field).kind != "shrink":
                    continue
                axes = one.field_axes(e.field)
                offsets = [r.offset for r in stencil_refs(node.stencil) if r.field == e.field]
                for a, o in ((a, [off[k] for off in offsets]) for k, a in enumerate(axes)):
                    low[a] = max(low[a], acc[e.producer].low[a] - min(o))
                    high[a] = max(high[a], acc[e.producer].high[a] + max(o))
                for a in set(range(one.rank)) - set(axes):  # a lower-dimensional field: offset 0 there
                    low[a] = max(low[a], acc[e.producer].low[a])
                    high[a] = max(high[a], acc[e.producer].high[a])
        acc[node.name] = Halo(tuple(low), tuple(high))
    return acc[node_name(stencil, 1, 1)]
