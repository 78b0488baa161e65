"""The Dask backend: the compiled kernel applied chunk by chunk, halos exchanged every few steps.

The graph has one task per chunk per exchange (``_exchange``), nothing per step: an exchange of ``E`` steps
assembles the chunk's window (the chunk and its halo of ``E`` steps, clipped to the grid) from its
neighbours' results of the previous exchange, runs the ``E`` steps on it with ``sm_block``/``sm_wave`` (the
CPU backend's generated code, compiled once per worker process) in blocks of the cost model's choice, each
block computing the chunk grown by the halo of the steps still to come, and returns its own box of each
iterated field (the last exchange: of each output) with its definedness mask. Memory-mapped ``.npy`` inputs
travel in the graph as their path (``FileSource``): the first exchange's tasks read their windows from the
file, on a cluster's workers too. Lower-dimensional inputs and params travel whole, once per worker (the
shared ``_Job``). It runs on the default local scheduler (threads) or, with ``scheduler`` or
``scheduler_file``, on an existing ``distributed`` cluster, with Dask's own security configuration (TLS:
``client_security``). The cluster is trusted: Dask ships results back as pickles, so whoever controls the
scheduler or a worker can run code in this process and choose the outputs.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import math
import os
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from stencilmap import native
from stencilmap.errors import StencilmapError, input_param, param
from stencilmap.io import keep_made_folders, make_folders, remove_made_folders
from stencilmap.program.ir import Program

from . import cgen, cost
from .cpu import CompiledProgram, compile_program, default_threads
from .plan import Plan, margins
from .reference import Result, defined_region, undefined_value
from .registry import Execution, HostOptions

Array = npt.NDArray[Any]
#: Default chunk edge (points) per axis when --chunks is not given, by rank: 2-D chunks of 1024² points
#: (4 MiB of float32) ran jacobi2d 4096² × 1000 in 2.7–3.0 s against 3.5 s with 512² (2 cores; the halo
#: and a task's set-up shared by four times the points); 3-D chunks stay at 512³.
DEFAULT_CHUNK = {1: 1 << 16, 2: 1024, 3: 512}


def lazy_inputs(name: str, path: Path) -> Array:
    """A supplied input without reading it: a ``.npy`` memory map or a Zarr array (wrapped by dask later)."""
    p = Path(path)
    where = input_param(name, str(p))
    if p.is_dir():
        try:
            import zarr
        except ImportError:
            raise StencilmapError("reading Zarr needs the 'zarr' package", where) from None
        try:
            arr: Array = zarr.open_array(str(p), mode="r")
            return arr
        except Exception as exc:  # zarr raises many kinds for a bad store
            raise StencilmapError(f"not a readable Zarr array ({exc})", where) from None
    if not p.is_file():
        raise StencilmapError("no such file", where)
    try:
        loaded: Array = np.load(p, mmap_mode="r", allow_pickle=False)
        return loaded
    except (OSError, ValueError) as exc:
        raise StencilmapError(f"not a readable .npy array ({exc})", where) from None


def _chunks(
    options: HostOptions, shape: tuple[int, ...], depth: Sequence[int]
) -> tuple[tuple[int, ...], ...]:
    """Explicit chunk sizes per axis; a last chunk thinner than the halo is merged into its neighbour."""
    want = options.chunks or _default_chunks(shape)
    out: list[tuple[int, ...]] = []
    for n, c, d in zip(shape, want, depth, strict=True):
        c = min(c, n)
        sizes = [c] * (n // c)
        if n % c:
            sizes.append(n % c)
        if len(sizes) > 1 and sizes[-1] < d:
            last = sizes.pop()
            sizes[-1] += last
        if len(sizes) > 1 and min(sizes) < d:
            raise StencilmapError(
                f"{param('chunks')}: chunks of {c} points are thinner than the halo of {d} points"
            )
        out.append(tuple(sizes))
    return tuple(out)


def _default_chunks(shape: tuple[int, ...]) -> tuple[int, ...]:
    edge = DEFAULT_CHUNK.get(len(shape), min(DEFAULT_CHUNK.values()))
    return tuple(min(n, edge) for n in shape)


def _depth(plan: Plan, steps: int) -> tuple[int, ...]:
    """Per axis, how far beyond a chunk ``steps`` fused iterations read the full-rank inputs: the halo."""
    return _depths(plan, steps)[steps]


def _depths(plan: Plan, steps: int) -> list[tuple[int, ...]]:
    """``_depth(plan, k)`` for k = 0..steps: row ``r`` of ``margins`` is the same for every ``steps`` above
    ``r``, so the halo of ``k`` steps is the running maximum of the first ``k`` rows."""
    rank = plan.program.rank
    full = [i.name for i in plan.program.inputs if len(i.axes) == rank]
    depth = [0] * rank
    out = [tuple(depth)]
    for table in margins(plan, steps):
        for name in full:
            m = table[name]
            if m is not None:
                for a, (lo, hi) in enumerate(m):
                    depth[a] = max(depth[a], lo, hi)
        out.append(tuple(depth))
    return out


def _steps(plan: Plan, options: HostOptions, shape: tuple[int, ...]) -> int:
    """Steps per exchange of halos: the option, else as many as keep both sides of the halo within an eighth
    of a chunk (the redundant work stays ~10 %), fewer while the halo outgrows the chunks. One exchange
    runs its steps in blocks of the cost model's choice (``_choice``), so this number is not limited by
    the kernel's fusion depth."""
    want = options.chunks or _default_chunks(shape)
    if not plan.feeds:
        return 1
    steps = plan.program.iterate if options.block is None else min(plan.program.iterate, options.block)
    if options.block is None and all(c >= n for c, n in zip(want, shape, strict=True)):
        return steps  # one chunk: no halo to exchange, every step in one task (in the cost model's blocks)
    if not _additive(plan, min(steps, cgen.TMAX + 1)):
        steps = min(steps, cgen.TMAX)  # one block per exchange (``_choice``)
    one = _depth(plan, 1)
    if options.block is None:
        for d, c in zip(one, want, strict=True):
            if d > 0:
                steps = min(steps, max(1, c // 16 // d))
    while steps > 1:
        depth = _depth(plan, steps)
        if all(d <= min(c, n) for d, c, n in zip(depth, want, shape, strict=True)):
            break
        steps -= 1
    return steps


class Shipped:
    """A program as tasks carry it: tokenized by its generated code, pickled as its file (deep expression
    trees overflow the recursion of dask's tokenizer and of pickle)."""

    def __init__(self, program: Program, source: str) -> None:
        self.program, self.source = program, source

    def __dask_tokenize__(self) -> str:
        return f"{self.source}|{self.program.shape}|{self.program.iterate}"

    def __reduce__(self) -> tuple[Any, ...]:
        p = self.program
        if p.path is None:
            return (Shipped, (p, self.source))
        return (_reload, (p.path, p.shape, p.iterate, self.source))


def _reload(path: str, shape: tuple[int, ...], iterate: int, source: str) -> Shipped:
    from dataclasses import replace

    from stencilmap.program import load_program

    return Shipped(replace(load_program(path).with_shape(shape), iterate=iterate), source)


@dataclass(frozen=True)
class FileSource:
    """A ``.npy`` input as tasks carry it: its path and layout, opened as a memory map where the task runs
    (a worker of a cluster reads its windows from the file; nothing of the array travels in the graph)."""

    path: str
    offset: int
    shape: tuple[int, ...]
    dtype: str
    fortran: bool

    def open(self) -> Array:
        order: Any = "F" if self.fortran else "C"
        return np.memmap(self.path, np.dtype(self.dtype), "r", self.offset, self.shape, order)


def _file_source(arr: Any) -> FileSource | None:
    """The file behind a memory-mapped ``.npy`` array (``lazy_inputs``), else None."""
    if not isinstance(arr, np.memmap) or getattr(arr, "filename", None) is None:
        return None
    if not (arr.flags.c_contiguous or arr.flags.f_contiguous) or arr.base is None:
        return None
    fortran = bool(arr.flags.f_contiguous and not arr.flags.c_contiguous)
    return FileSource(str(arr.filename), int(arr.offset), tuple(arr.shape), str(arr.dtype), fortran)


Piece = tuple[Array, Array | None]  # a field's values over a box, and its definedness mask (None: defined)


@dataclass(frozen=True)
class _Job:
    """What every task of a run shares (one graph key, so a cluster ships it once per worker)."""

    shipped: Shipped
    shape: tuple[int, ...]
    chunks: tuple[tuple[int, ...], ...]
    exchanges: tuple[int, ...]  # steps of each exchange
    threads: int
    small: tuple[tuple[str, Array], ...]  # lower-dimensional inputs and params, whole
    token: str  # the program's: its generated code, shape and steps

    def program(self) -> CompiledProgram:
        cp = _COMPILED.get(self.token)
        if cp is None:
            cp = _COMPILED[self.token] = compile_program(self.shipped.program)
        return cp

    def box(self, bid: Sequence[int]) -> tuple[tuple[int, ...], tuple[int, ...]]:
        lo = tuple(int(sum(c[:k])) for c, k in zip(self.chunks, bid, strict=True))
        hi = tuple(a + c[k] for a, c, k in zip(lo, self.chunks, bid, strict=True))
        return lo, hi


_COMPILED: dict[str, CompiledProgram] = {}
#: The cost model's (block, tile, scheme) per (program, chunk shape, steps, threads): chunks mostly share one.
_CHOICES: dict[tuple[str, tuple[int, ...], int, int], tuple[int, tuple[int, ...], bool, int]] = {}


def _choice(
    job: _Job, cp: CompiledProgram, chunk: tuple[int, ...], steps: int
) -> tuple[int, tuple[int, ...], bool, int]:
    key = (job.token, chunk, steps, job.threads)
    if key not in _CHOICES:
        # one block per exchange unless the halo adds up (``_additive``); a single chunk has no halo
        whole = all(len(c) == 1 for c in job.chunks)
        block = None if whole or _additive(cp.plan, steps) else steps
        c = cost.choose(cp.plan, chunk, steps, job.threads, block, None)
        tile = tuple(min(t, n) for t, n in zip(c.tile, chunk, strict=True))
        _CHOICES[key] = (c.block, tile, c.scheme == "wave", c.planes)
    return _CHOICES[key]


def _additive(plan: Plan, steps: int) -> bool:
    """Whether the halo of ``a + b`` steps covers that of ``a`` steps grown by ``b`` steps' for every split
    of ``steps``: then the blocks of an exchange, each computing the chunk grown by the halo of the steps
    still to come, read only points of the window that the block before computed. True of box-shaped
    reaches (the halo grows by the same margin per step); checked, as ``D(k + 1) ≥ D(k) + D(1)`` (with
    ``D(b) ≤ b·D(1)`` this gives every split)."""
    d = _depths(plan, steps)
    return all(n >= p + o for k in range(1, steps + 1) for n, p, o in zip(d[k], d[k - 1], d[1], strict=True))


def _window(
    job: _Job, depth: Sequence[int], bid: Sequence[int]
) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """A chunk's box and the window (box and halo, clipped to the grid) its exchange reads."""
    lo, hi = job.box(bid)
    wlo = tuple(max(0, a - d) for a, d in zip(lo, depth, strict=True))
    whi = tuple(min(n, b + d) for b, d, n in zip(hi, depth, job.shape, strict=True))
    return lo, hi, wlo, whi


def _assemble(
    wlo: Sequence[int], whi: Sequence[int], dtype: Any, pieces: Sequence[tuple[Sequence[int], Array]]
) -> Array:
    """The window ``[wlo, whi)`` of a field from the pieces (box origin, values) of the chunks it overlaps."""
    out = np.empty(tuple(b - a for a, b in zip(wlo, whi, strict=True)), dtype)
    for plo, arr in pieces:
        src, dst = [], []
        for a, b, p, n in zip(wlo, whi, plo, arr.shape, strict=True):
            x, y = max(a, p), min(b, p + n)
            if x >= y:
                break
            src.append(slice(x - p, y - p))
            dst.append(slice(x - a, y - a))
        else:
            out[tuple(dst)] = arr[tuple(src)]
    return out


def _exchange(
    job: _Job,
    e: int,
    bid: tuple[int, ...],
    prev: list[Any],
    direct: list[Any],
    chunked: list[list[Array]],
) -> list[Piece]:
    """One exchange on one chunk: its window assembled from its neighbours' pieces of the previous exchange
    (the first: from the inputs), ``job.exchanges[e]`` steps run on it in blocks, and its own box of each
    iterated field (the last exchange: of each output) returned.

    ``prev``: the neighbours' results of exchange ``e - 1`` (empty for the first); ``direct``: per full-rank
    input, an array-like to slice (a memory map, a ``FileSource``, a Zarr array) or None; ``chunked``: per
    full-rank input, the neighbours' chunks where it is a dask array."""
    cp = job.program()
    plan = cp.plan
    prog = plan.program
    rank = len(job.shape)
    steps = job.exchanges[e]
    depths = _depths(plan, steps)  # once: the blocks below index it
    depth = depths[steps]
    d = tuple(0 if len(c) == 1 else x for x, c in zip(depth, job.chunks, strict=True))
    lo, hi, wlo, whi = _window(job, d, bid)
    wshape = tuple(b - a for a, b in zip(wlo, whi, strict=True))
    nbs = _neighbours(job, bid, d)
    full = [i for i in prog.inputs if len(i.axes) == rank]
    pairs = dict(plan.pairs) if plan.feeds else {}
    state: dict[str, Piece] = {}
    for k, inp in enumerate(full):
        mask: Array | None = None
        if e > 0 and inp.name in pairs:
            slot = _state_fields(plan).index(inp.name)
            values = _assemble(
                wlo, whi, inp.dtype, [(job.box(nb)[0], p[slot][0]) for nb, p in zip(nbs, prev, strict=True)]
            )
            if inp.name in plan.masked:
                mask = _assemble(
                    wlo,
                    whi,
                    np.uint8,
                    [(job.box(nb)[0], p[slot][1]) for nb, p in zip(nbs, prev, strict=True)],
                )
        elif direct[k] is not None:
            src = direct[k].open() if isinstance(direct[k], FileSource) else direct[k]
            window = tuple(slice(a, b) for a, b in zip(wlo, whi, strict=True))
            values = np.asarray(src[window])
            # an iterated field's window is written (ping-pong): never the caller's array itself
            values = np.array(values, np.dtype(inp.dtype), order="C", copy=inp.name in pairs or None)
        else:
            values = _assemble(
                wlo, whi, inp.dtype, [(job.box(nb)[0], c) for nb, c in zip(nbs, chunked[k], strict=True)]
            )
        if mask is None and inp.name in plan.masked:
            mask = np.ones(wshape, np.uint8)
        state[inp.name] = (values, mask)
    small = dict(job.small)
    zero = (0,) * rank
    params = [small[p.name] for p in prog.params]
    outs: dict[str, Piece] = {
        o: (np.empty(wshape, prog.field_dtype(o)), np.empty(wshape, np.uint8) if o in plan.masked else None)
        for o in prog.outputs
    }
    spare: dict[str, Piece] = {}
    # the first exchange's steps for every exchange: the last, shorter one takes the same blocks and tile
    block, tile, wave, planes = _choice(
        job, cp, tuple(b - a for a, b in zip(lo, hi, strict=True)), job.exchanges[0]
    )
    done = 0
    while done < steps:
        now = min(block, steps - done)
        after = tuple(
            0 if len(c) == 1 else x for x, c in zip(depths[steps - done - now], job.chunks, strict=True)
        )
        olo = tuple(max(w, a - x) for w, a, x in zip(wlo, lo, after, strict=True))
        ohi = tuple(min(w, b + x) for w, b, x in zip(whi, hi, after, strict=True))
        ins = []
        for i in prog.inputs:
            if len(i.axes) == rank:
                v, m = state[i.name]
                ins.append(cp.buf(i.name, v, wlo, m))
            else:
                ins.append(cp.buf(i.name, small[i.name], zero))
        bufs = [cp.buf(o, outs[o][0], wlo, outs[o][1]) for o in prog.outputs]
        t = tuple(min(x, b - a) for x, a, b in zip(tile, olo, ohi, strict=True))
        cp.block(
            job.shape, (olo, ohi), now, t, job.threads, ins, bufs, params, wave and rank >= 2, False, planes
        )
        done += now
        if pairs:
            for fed, o in plan.pairs:  # ping-pong between window-sized buffers of this task
                fresh = outs[o]
                outs[o] = spare.pop(o) if o in spare else _like_piece(fresh)
                spare[o] = state[fed]
                state[fed] = fresh
    own = tuple(slice(a - w, b - w) for a, b, w in zip(lo, hi, wlo, strict=True))
    last = e == len(job.exchanges) - 1
    if last:
        final = {o: state[fed] for fed, o in plan.pairs} if pairs else {}
        names: Sequence[str] = prog.outputs
        return [_cut(final.get(o, outs[o]), own) for o in names]
    return [_cut(state[f], own) for f in _state_fields(plan)]


def _like_piece(p: Piece) -> Piece:
    return np.empty_like(p[0]), (None if p[1] is None else np.empty_like(p[1]))


def _cut(p: Piece, own: tuple[slice, ...]) -> Piece:
    return p[0][own], (None if p[1] is None else p[1][own])


def _state_fields(plan: Plan) -> list[str]:
    """The fields an exchange hands to the next: the iterated inputs."""
    return [i for i, _ in plan.pairs] if plan.feeds else []


def _neighbours(job: _Job, bid: Sequence[int], depth: Sequence[int]) -> list[tuple[int, ...]]:
    """The chunks a window of halo ``depth`` overlaps (``depth`` never exceeds a neighbour's width)."""
    ranges = [
        range(max(0, k - 1), min(len(c), k + 2)) if d > 0 else range(k, k + 1)
        for k, c, d in zip(bid, job.chunks, depth, strict=True)
    ]
    return [tuple(t) for t in itertools.product(*ranges)]


def lazy_run(
    program: Program, values: Mapping[str, Any], options: HostOptions
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The outputs and masks (None: defined everywhere) of a run, as lazy dask arrays: one task per chunk
    per exchange of halos, each running several fused blocks of the compiled kernel on its window."""
    import dask.array as da
    from dask.highlevelgraph import HighLevelGraph

    cp = compile_program(program)
    plan = cp.plan
    shape = tuple(int(n or 0) for n in program.shape)
    rank = len(shape)
    steps = _steps(plan, options, shape)
    chunks = _chunks(options, shape, _depth(plan, steps))
    full = [i.name for i in program.inputs if len(i.axes) == rank]
    small = tuple(
        (name, np.ascontiguousarray(np.asarray(values[name])))
        for name in [i.name for i in program.inputs if len(i.axes) != rank] + [p.name for p in program.params]
    )
    total = program.iterate if plan.feeds else 1
    exchanges = tuple(min(steps, total - k) for k in range(0, total, steps))
    cluster = options.scheduler is not None or options.scheduler_file is not None
    code = hashlib.sha256(f"{cp.source}|{shape}|{program.iterate}".encode()).hexdigest()[:24]
    token = uuid.uuid4().hex  # a run's keys are its own (a cluster may still hold an earlier run's)
    job = _Job(Shipped(program, cp.source), shape, chunks, exchanges, _threads(options, chunks), small, code)
    _COMPILED.setdefault(code, cp)
    dsk: dict[Any, Any] = {f"sm-job-{token}": job}
    deps: list[Any] = []
    direct: list[Any] = []
    chunked: list[str | None] = []
    for f in full:
        v = values[f]
        source = _file_source(v)
        if source is not None:
            direct.append(source)
            chunked.append(None)
        elif isinstance(v, da.Array) or (cluster and isinstance(v, np.ndarray)):
            arr = (v if isinstance(v, da.Array) else da.from_array(v, chunks=chunks)).rechunk(chunks)
            deps.append(arr)
            direct.append(None)
            chunked.append(arr.name)
        else:  # in memory (the local scheduler shares it) or a Zarr array (pickled as its store)
            key = f"sm-in-{f}-{token}"
            dsk[key] = v
            direct.append(key)
            chunked.append(None)
    grid = list(itertools.product(*(range(len(c)) for c in chunks)))
    for e, now in enumerate(exchanges):
        depth = _depth(plan, now)
        d = tuple(0 if len(c) == 1 else x for x, c in zip(depth, chunks, strict=True))
        for bid in grid:
            nbs = _neighbours(job, bid, d)
            prev = [(f"sm-x{e - 1}-{token}", *nb) for nb in nbs] if e > 0 else []
            pieces = [[(name, *nb) for nb in nbs] if name else [] for name in chunked]
            dsk[(f"sm-x{e}-{token}", *bid)] = (_exchange, f"sm-job-{token}", e, bid, prev, direct, pieces)
    last = f"sm-x{len(exchanges) - 1}-{token}"
    outs: dict[str, Any] = {}
    masks: dict[str, Any] = {}
    for k, o in enumerate(program.outputs):
        for which, into in ((0, outs), (1, masks)):
            if which == 1 and o not in plan.masked:
                into[o] = None
                continue
            name = f"sm-{o}-{which}-{token}"
            layer = {(name, *bid): (_part, (last, *bid), k, which) for bid in grid}
            graph = HighLevelGraph.from_collections(name, {**dsk, **layer}, dependencies=deps)
            dtype = np.dtype(program.field_dtype(o)) if which == 0 else np.dtype(np.uint8)
            into[o] = da.Array(graph, name, chunks, dtype=dtype)
    return outs, masks


def _threads(options: HostOptions, chunks: tuple[tuple[int, ...], ...]) -> int:
    """Threads of each task's kernel: ``--threads``; else, on the local scheduler (one thread per core), the
    cores left to each chunk when there are fewer chunks than cores (a grid of one chunk runs on all of
    them, as the cpu backend does); else 1 (a cluster's workers run a task per thread)."""
    if options.threads is not None:
        return options.threads
    if options.scheduler is not None or options.scheduler_file is not None:
        return 1
    return max(1, default_threads() // math.prod(len(c) for c in chunks))


def _part(result: list[Piece], k: int, which: int) -> Array:
    arr = result[k][which]
    assert arr is not None
    return arr


def scheduler_address(path: str) -> str:
    """The address a Dask scheduler file names (``dask scheduler --scheduler-file FILE``,
    ``Client.write_scheduler_file``): a JSON object with an ``"address"`` string. One-line errors for a
    missing, unreadable or malformed file (Dask itself would wait for a missing one forever)."""
    where = f"{param('scheduler_file')} {path}"
    p = Path(path)
    if not p.is_file():
        raise StencilmapError("no such file", where)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise StencilmapError(f"cannot read it ({getattr(exc, 'strerror', None) or exc})", where) from None
    try:
        info = json.loads(text)
    except json.JSONDecodeError as exc:
        raise StencilmapError(
            f"not JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}", where
        ) from None
    address = info.get("address") if isinstance(info, dict) else None
    if not isinstance(address, str) or not address:
        raise StencilmapError('not a Dask scheduler file: no "address" string at $.address', where)
    return address


def client_security(address: str) -> Any:
    """The ``security`` argument for a client of ``address``, as Dask users configure it: ``None`` when a
    security loader is configured (``distributed.client.security-loader``: the client calls it), else
    ``distributed.Security()`` loaded from Dask's configuration (``distributed.comm.tls.ca-file``,
    ``.client.cert``, ``.client.key``, ``distributed.comm.require-encryption``; files or
    ``DASK_DISTRIBUTED__COMM__TLS__...`` variables). A ``tls://`` address without a CA file and a client
    certificate, or a plain one where encryption is required, is a one-line error before connecting."""
    import dask
    from distributed import Security

    if dask.config.get("distributed.client.security-loader", None):
        return None
    try:
        security = Security()
    except (ValueError, TypeError) as exc:
        raise StencilmapError(f"Dask's TLS configuration is invalid: {exc}") from None
    tls = address.startswith("tls://")
    if tls and not (security.tls_ca_file and security.tls_client_cert):
        raise StencilmapError(
            f"the Dask scheduler at {address} speaks TLS: set distributed.comm.tls.ca-file, "
            "distributed.comm.tls.client.cert and .client.key in Dask's configuration"
        )
    if not tls and security.require_encryption:
        raise StencilmapError(
            f"Dask's configuration requires encryption (distributed.comm.require-encryption) but the "
            f"scheduler address {address} is not tls://"
        )
    return security


@contextlib.contextmanager
def _client(options: HostOptions) -> Iterator[Any]:
    """A client of the cluster ``--scheduler`` or ``--scheduler-file`` names (None: the local threads).
    The cluster is trusted: it runs code in this process (Dask's results are pickles) and computes the
    outputs — see the README's Dask section."""
    if options.scheduler is None and options.scheduler_file is None:
        yield None
        return
    what = "--scheduler" if options.scheduler_file is None else "--scheduler-file"
    try:
        from distributed import Client
    except ImportError:
        raise StencilmapError(f"{what} needs the 'distributed' package") from None
    if options.scheduler_file is not None:
        address = scheduler_address(options.scheduler_file)
        target: dict[str, Any] = {"scheduler_file": options.scheduler_file}
    else:
        address = options.scheduler or ""
        target = {"address": address}
    security = client_security(address)
    try:
        client = Client(**target, security=security, timeout="10s")
    except (OSError, TimeoutError, ValueError, TypeError) as exc:
        text = " ".join(str(exc).split())
        raise StencilmapError(f"cannot reach the Dask scheduler at {address}: {text}") from None
    try:
        yield client
    finally:
        client.close()


def run_dask(program: Program, values: Mapping[str, Any], options: HostOptions) -> Execution:
    """Run in memory and return NumPy results (the Python API and tests)."""
    import dask

    start_compile = time.perf_counter()
    compile_program(program)
    compile_seconds = time.perf_counter() - start_compile
    outs, masks = lazy_run(program, values, options)
    start = time.perf_counter()
    with _client(options) as client:
        names = list(outs)
        todo = [outs[n] for n in names] + [masks[n] for n in names if masks[n] is not None]
        computed = client.gather(client.compute(todo)) if client is not None else dask.compute(*todo)
    seconds = time.perf_counter() - start
    values_out = dict(zip(names, computed[: len(names)], strict=True))
    mask_iter = iter(computed[len(names) :])
    result_out: dict[str, Array] = {}
    defined: dict[str, npt.NDArray[np.bool_]] = {}
    for n in names:
        v = np.array(values_out[n])
        ok = np.asarray(next(mask_iter)).astype(bool) if masks[n] is not None else np.ones(v.shape, bool)
        v[~ok] = undefined_value(v.dtype)
        result_out[n], defined[n] = v, ok
    return Execution(Result(result_out, defined), seconds, compile_seconds)


def run_dask_to_files(
    program: Program, values: Mapping[str, Any], options: HostOptions, out_dir: Path
) -> tuple[dict[str, Path], dict[str, tuple[tuple[tuple[int, int], ...] | None, int]], Execution]:
    """Run and stream every output into ``out_dir/<name>.npy`` through memory maps, block by block (all
    files appear together, or none: temporary names, then renames)."""
    start_compile = time.perf_counter()
    compile_program(program)
    compile_seconds = time.perf_counter() - start_compile
    outs, masks = lazy_run(program, values, options)
    make_folders(out_dir)
    staged: dict[str, str] = {}
    regions: dict[str, tuple[tuple[tuple[int, int], ...] | None, int]] = {}
    start = time.perf_counter()
    try:
        with _client(options) as client:
            for name, arr in outs.items():
                tmp = str(native.temporary_file(f".{name}.", out_dir, ".npy.tmp"))  # an interrupt removes it
                staged[name] = tmp
                _store(arr, masks[name], tmp, client)
                regions[name] = _region(tmp, masks[name] is not None)
    except BaseException:
        for tmp in staged.values():
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        remove_made_folders()
        raise
    seconds = time.perf_counter() - start
    written: dict[str, Path] = {}
    for name, tmp in staged.items():
        final = out_dir / f"{name}.npy"
        os.replace(tmp, final)
        native.release(Path(tmp))
        written[name] = final
    keep_made_folders(out_dir)
    return written, regions, Execution(Result({}, {}), seconds, compile_seconds)


def _store(arr: Any, mask: Any, path: str, client: Any) -> None:
    """Compute ``arr`` (undefined points filled) block by block into a ``.npy`` memory map."""
    import dask.array as da

    if mask is not None:
        fill = undefined_value(np.dtype(arr.dtype))
        arr = da.where(mask.astype(bool), arr, np.asarray(fill, arr.dtype)).astype(arr.dtype)
    target = np.lib.format.open_memmap(path, mode="w+", dtype=arr.dtype, shape=arr.shape)
    if client is None:
        da.store(arr, target, lock=False)
    else:
        # Workers may live elsewhere: fetch block by block and write here (memory: one block at a time).
        # The graph goes to the scheduler once (``persist``); each fetch is then a slice of its results.
        from distributed import as_completed

        arr = client.persist(arr)
        slices = da.core.slices_from_chunks(arr.chunks)
        futures = {client.compute(arr[s]): s for s in slices}
        for fut in as_completed(futures):
            target[futures[fut]] = fut.result()
    target.flush()
    del target
    if mask is not None:
        mpath = path + ".mask.npy"
        mtarget = np.lib.format.open_memmap(mpath, mode="w+", dtype=np.uint8, shape=mask.shape)
        if client is None:
            da.store(mask, mtarget, lock=False)
        else:
            mtarget[...] = client.compute(mask).result()
        mtarget.flush()


def _region(path: str, has_mask: bool) -> tuple[tuple[tuple[int, int], ...] | None, int]:
    """The defined region and count of an output just stored (its mask was written beside it)."""
    shape = np.load(path, mmap_mode="r").shape
    if not has_mask:
        return tuple((0, int(n)) for n in shape), int(np.prod(shape))
    mpath = path + ".mask.npy"
    mask = np.load(mpath, mmap_mode="r").astype(bool)
    os.unlink(mpath)
    return defined_region(mask), int(np.count_nonzero(mask))
