"""The Dask backend: the compiled kernel applied chunk by chunk, ``map_overlap`` exchanging halos.

The state of a run is one chunked array of a structured dtype holding every full-rank input and output (and
the definedness mask of those that can be undefined). Each exchange is one ``map_overlap`` of depth
``halo × steps``: a chunk with its halo goes through ``sm_block`` (the CPU backend's generated code, compiled
once per worker process) for ``steps`` fused iterations and comes back with its own points of the next
state. Lower-dimensional inputs and params travel whole with every task. It runs on the default local
scheduler (threads) or, with ``scheduler`` or ``scheduler_file``, on an existing ``distributed`` cluster,
with Dask's own security configuration (TLS: ``client_security``). The cluster is trusted: Dask ships
results back as pickles, so whoever controls the scheduler or a worker can run code in this process and
choose the outputs.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from stencilmap import native
from stencilmap.errors import StencilmapError, input_param, param
from stencilmap.program.ir import Program

from . import cgen
from .cpu import choose_tile, compile_program
from .plan import Plan, margins
from .reference import Result, defined_region, undefined_value
from .registry import Execution, HostOptions

Array = npt.NDArray[Any]
MASK = "__defined"
#: Default chunk edge (points) per axis when --chunks is not given.
DEFAULT_CHUNK = 512


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


def _state_dtype(plan: Plan) -> np.dtype[Any]:
    prog = plan.program
    names: list[tuple[str, str]] = []
    for f in [i.name for i in prog.inputs if len(i.axes) == prog.rank] + list(prog.outputs):
        names.append((f, prog.field_dtype(f)))
        if f in plan.masked:
            names.append((f + MASK, "u1"))
    return np.dtype(names)


def _chunks(
    options: HostOptions, shape: tuple[int, ...], depth: Sequence[int]
) -> tuple[tuple[int, ...], ...]:
    """Explicit chunk sizes per axis; a last chunk thinner than the halo is merged into its neighbour."""
    want = options.chunks or tuple(min(n, DEFAULT_CHUNK) for n in shape)
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


def _depth(plan: Plan, steps: int) -> tuple[int, ...]:
    rank = plan.program.rank
    depth = [0] * rank
    for table in margins(plan, steps):
        for i in plan.program.inputs:
            m = table[i.name]
            if m is None or len(i.axes) != rank:
                continue
            for a, (lo, hi) in enumerate(m):
                depth[a] = max(depth[a], lo, hi)
    return tuple(depth)


def _steps(plan: Plan, options: HostOptions, shape: tuple[int, ...]) -> int:
    """Steps fused per exchange: the option, else 8, fewer while the halo outgrows the chunks."""
    steps = min(plan.program.iterate, options.block or (8 if plan.feeds else 1), cgen.TMAX)
    while steps > 1:
        depth = _depth(plan, steps)
        want = options.chunks or tuple(min(n, DEFAULT_CHUNK) for n in shape)
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


def _chunk_step(
    block: Array,
    shipped: Shipped,
    shape: tuple[int, ...],
    chunks: tuple[tuple[int, ...], ...],
    depth: tuple[int, ...],
    steps: int,
    threads: int,
    small: dict[str, Array],
    block_id: tuple[int, ...] | None = None,
) -> Array:
    """One exchange on one chunk: ``steps`` iterations of the window ``block`` (chunk + halo)."""
    program = shipped.program
    cp = compile_program(program)
    plan = cp.plan
    assert block_id is not None
    olo = tuple(int(sum(c[:k])) for c, k in zip(chunks, block_id, strict=True))
    ohi = tuple(lo + c[k] for lo, c, k in zip(olo, chunks, block_id, strict=True))
    wlo = tuple(max(0, lo - d) for lo, d in zip(olo, depth, strict=True))
    own = tuple(slice(lo - w, hi - w) for lo, hi, w in zip(olo, ohi, wlo, strict=True))
    prog = program
    keep: list[Array] = []

    def field(name: str) -> tuple[Array, Array | None]:
        v = np.ascontiguousarray(block[name])
        m = np.ascontiguousarray(block[name + MASK]) if name + MASK in (block.dtype.names or ()) else None
        keep.extend(x for x in (v, m) if x is not None)
        return v, m

    zero = (0,) * len(shape)
    ins = []
    for i in prog.inputs:
        if len(i.axes) == len(shape):
            v, m = field(i.name)
            if m is None and i.name in plan.masked:
                m = np.ones(v.shape, np.uint8)
                keep.append(m)
            ins.append(cp.buf(i.name, v, wlo, m))
        else:
            ins.append(cp.buf(i.name, small[i.name], zero))
    out = np.empty(tuple(hi - lo for lo, hi in zip(olo, ohi, strict=True)), block.dtype)
    results = {o: np.empty(out.shape, prog.field_dtype(o)) for o in prog.outputs}
    rmasks = {o: (np.empty(out.shape, np.uint8) if o in plan.masked else None) for o in prog.outputs}
    outs = [cp.buf(o, results[o], olo, rmasks[o]) for o in prog.outputs]
    params = [small[p.name] for p in prog.params]
    tile = choose_tile(plan, tuple(hi - lo for lo, hi in zip(olo, ohi, strict=True)), steps, threads)
    cp.block(shape, (olo, ohi), steps, tile, threads, ins, outs, params)
    feeds = dict(plan.pairs) if plan.feeds else {}
    for name in out.dtype.names or ():
        base = name.removesuffix(MASK)
        is_mask = name.endswith(MASK)
        if base in results:
            out[name] = rmasks[base] if is_mask else results[base]
        elif base in feeds:
            src = feeds[base]
            if is_mask:
                out[name] = rmasks[src] if rmasks[src] is not None else 1
            else:
                out[name] = results[src]
        else:
            out[name] = block[name][own]
    return out


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


def lazy_run(
    program: Program, values: Mapping[str, Any], options: HostOptions
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The outputs and masks (None: defined everywhere) of a run, as lazy dask arrays."""
    import dask.array as da

    cp = compile_program(program)
    plan = cp.plan
    shape = tuple(int(n or 0) for n in program.shape)
    steps = _steps(plan, options, shape)
    depth = _depth(plan, steps)
    chunks = _chunks(options, shape, depth)
    dtype = _state_dtype(plan)
    full = [i.name for i in program.inputs if len(i.axes) == program.rank]
    small = {
        name: np.ascontiguousarray(np.asarray(values[name]))
        for name in [i.name for i in program.inputs if len(i.axes) != program.rank]
        + [p.name for p in program.params]
    }
    arrays = [
        da.from_array(values[f], chunks=chunks)
        if not isinstance(values[f], da.Array)
        else values[f].rechunk(chunks)
        for f in full
    ]

    def pack(base: Array, *blocks: Array) -> Array:
        out = np.zeros(base.shape, dtype)
        for name, b in zip(full, blocks, strict=True):
            out[name] = b
            if name + MASK in dtype.names:  # type: ignore[operator]
                out[name + MASK] = 1
        return out

    base = da.zeros(shape, dtype=np.uint8, chunks=chunks)  # carries the chunking when no input is full-rank
    state = da.map_blocks(pack, base, *arrays, dtype=dtype)
    threads = options.threads or 1
    done = 0
    while done < program.iterate:
        now = min(steps, program.iterate - done)
        d = tuple(0 if len(c) == 1 else x for x, c in zip(_depth(plan, now), chunks, strict=True))
        fn = functools.partial(
            _chunk_step,
            shipped=Shipped(program, cp.source),
            shape=shape,
            chunks=chunks,
            depth=d,
            steps=now,
            threads=threads,
            small=small,
        )
        state = da.map_overlap(
            fn,
            state,
            depth=dict(enumerate(d)),
            boundary="none",
            trim=False,
            chunks=chunks,
            dtype=dtype,
            meta=np.empty((0,) * len(shape), dtype),
        )
        done += now
    outs = {o: state[o] for o in program.outputs}
    masks = {o: (state[o + MASK] if o + MASK in dtype.names else None) for o in program.outputs}  # type: ignore[operator]
    return outs, masks


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
    out_dir.mkdir(parents=True, exist_ok=True)
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
        raise
    seconds = time.perf_counter() - start
    written: dict[str, Path] = {}
    for name, tmp in staged.items():
        final = out_dir / f"{name}.npy"
        os.replace(tmp, final)
        native.release(Path(tmp))
        written[name] = final
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
        from distributed import as_completed

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
