"""Input data for a run: binding the iteration shape, reading data sources, seeded generation.

Generated values (inputs without a data source, all SODA inputs, SODA params) are drawn from
``numpy.random.default_rng`` seeded with ``(seed, crc32(name))``: floats uniform in [0, 1), integers
uniform in [0, 64). ``random:a-b`` draws floats uniform in [a, b) and integers uniform in [a, b].
"""

from __future__ import annotations

import os
import warnings
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from stencilmap.errors import Location, StencilmapError, input_param, param
from stencilmap.program import dtypes as dt
from stencilmap.program.ir import Input, Param, Program
from stencilmap.program.verify import MAX_DIM, MAX_POINTS

Array = npt.NDArray[Any]

#: Size of SODA's run-time dimension (``*``) when neither an input nor ``--shape`` gives it:
#: the size of the next dimension (a square tile), or 1024 for 1-D programs.
DEFAULT_1D_SIZE = 1024


def rng_for(seed: int, name: str) -> np.random.Generator:
    return np.random.default_rng([seed, zlib.crc32(name.encode())])


def bind_shape(
    program: Program, supplied: Mapping[str, Array], shape: tuple[int, ...] | None = None
) -> Program:
    """The program with a concrete iteration shape: ``shape`` if given, else from supplied full-rank
    inputs (SODA's run-time dimension), else the program's own (SODA ``*`` gets its documented default)."""
    if shape is not None:
        if len(shape) != program.rank:
            raise StencilmapError(
                f"{param('shape')} has {len(shape)} dimensions, the program has {program.rank}"
            )
        if any(n < 1 for n in shape):
            raise StencilmapError(f"{param('shape')} sizes must be positive, got {list(shape)}")
        if any(n > MAX_DIM for n in shape) or _prod(shape) > MAX_POINTS:
            raise StencilmapError(
                f"{param('shape')} {list(shape)} is too large (at most {MAX_DIM:,} per dimension, {MAX_POINTS:,} points)"
            )
        return program.with_shape(shape)
    if all(n is not None for n in program.shape):
        return program.with_shape(tuple(int(n) for n in program.shape if n is not None))
    for inp in program.inputs:
        arr = supplied.get(inp.name)
        if arr is not None and len(inp.axes) == program.rank and arr.ndim == program.rank:
            bound = tuple(int(n) for n in arr.shape)
            _check_bound_sizes(bound, input_param(inp.name))
            return program.with_shape(bound)
    inner = [n for n in program.shape if n is not None]
    default = inner[0] if inner else DEFAULT_1D_SIZE
    return program.with_shape(tuple(default if n is None else n for n in program.shape))


def _check_bound_sizes(shape: tuple[int, ...], where: str) -> None:
    """Refuse an iteration shape taken from a supplied input that has a size 0, or that is too large,
    before anything is allocated or written."""
    if any(n < 1 for n in shape):
        raise StencilmapError(
            f"has shape {list(shape)}: an input of size 0 gives no points to compute; sizes must be positive",
            where,
        )
    if any(n > MAX_DIM for n in shape) or _prod(shape) > MAX_POINTS:
        raise StencilmapError(
            f"has shape {list(shape)}, too large (at most {MAX_DIM:,} per dimension, {MAX_POINTS:,} points)",
            where,
        )


def memory_limit() -> int:
    """Bytes a run may allocate: half the machine's memory, at most 16 GiB."""
    try:
        physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        physical = 8 * 2**30
    return min(16 * 2**30, physical // 2)


def run_bytes(program: Program) -> int:
    """About the bytes the reference executor needs for a shape-bound program: every input and param,
    every stencil's output over the whole space with its defined-point mask, and a few float64 temporaries
    of expression evaluation."""
    points = 1
    for n in program.shape:
        points *= int(n or 0)
    total = sum(_prod(field_shape(program, i)) * np.dtype(i.dtype).itemsize for i in program.inputs)
    total += sum(_prod(p.shape) * np.dtype(p.dtype).itemsize for p in program.params)
    total += sum(points * (np.dtype(s.dtype).itemsize + 1) for s in program.stencils)
    return total + 4 * 8 * points


def check_memory(need: int, what: str) -> None:
    """Refuse, before allocating, work that needs more than ``memory_limit()`` bytes."""
    limit = memory_limit()
    if need > limit:
        raise StencilmapError(f"{what} needs about {need:,} bytes, more than the limit of {limit:,}")


def _prod(shape: tuple[int, ...]) -> int:
    total = 1
    for n in shape:
        total *= n
    return total


def field_shape(program: Program, inp: Input) -> tuple[int, ...]:
    return tuple(int(program.shape[a] or 0) for a in inp.axes)


def make_inputs(
    program: Program, supplied: Mapping[str, Array], seed: int = 0, data_dir: Path | None = None
) -> dict[str, Array]:
    """Values of every input and param of a shape-bound program, supplied ones checked first (and the
    memory a run of it needs, ``run_bytes``, before allocating any).

    A data file a program names is read only from inside ``data_dir`` (default: the program's folder),
    symbolic links resolved: a program cannot make stencilmap read files elsewhere."""
    known = {i.name for i in program.inputs} | {p.name for p in program.params}
    for name in supplied:
        if name not in known:
            raise StencilmapError(f"{input_param(name)}: the program has no input named '{name}'")
    check_memory(run_bytes(program), f"shape {list(program.shape)}")
    values: dict[str, Array] = {}
    for inp in program.inputs:
        shape = field_shape(program, inp)
        if inp.name in supplied:
            values[inp.name] = _checked(inp.name, inp.dtype, shape, supplied[inp.name])
        else:
            values[inp.name] = _from_source(program, inp, shape, seed, data_dir)
    for par in program.params:
        if par.name in supplied:
            values[par.name] = _checked(par.name, par.dtype, par.shape, supplied[par.name])
        else:
            values[par.name] = _generate(par, par.shape, seed)
    return values


def _checked(name: str, dtype: str, shape: tuple[int, ...], arr: Array) -> Array:
    """The supplied array as the program's C-order array of ``dtype``: a dtype that converts without
    loss (``np.can_cast(..., "safe")``: int16 → float32, float32 → float64) is converted; any other is
    refused, saying which cast would lose what."""
    where = input_param(name)
    if arr.ndim != len(shape):
        raise StencilmapError(f"has rank {arr.ndim}, expected {len(shape)} (shape {list(shape)})", where)
    if tuple(arr.shape) != shape:
        raise StencilmapError(f"has shape {list(arr.shape)}, expected {list(shape)}", where)
    if str(arr.dtype) != dtype and not np.can_cast(arr.dtype, dtype, "safe"):
        raise StencilmapError(
            f"has dtype {arr.dtype}, expected {dtype} (the conversion may lose values: convert it "
            f"yourself, e.g. with astype('{dtype}'), if that is what you want)",
            where,
        )
    # keeps 0-d arrays 0-d (ascontiguousarray would not)
    return np.array(arr, dtype=dtype, order="C", copy=True)


def _generate(field: Input | Param, shape: tuple[int, ...], seed: int) -> Array:
    rng = rng_for(seed, field.name)
    if dt.is_float(field.dtype):
        return rng.random(shape).astype(field.dtype)
    return rng.integers(0, 64, size=shape).astype(field.dtype)


def _from_source(
    program: Program, inp: Input, shape: tuple[int, ...], seed: int, data_dir: Path | None
) -> Array:
    src = inp.source
    if src is None:
        return _generate(inp, shape, seed)
    where = Location(program.path, json_path=f"inputs.{inp.name}.data")
    size = int(np.prod(shape, dtype=np.int64))
    if src.kind in ("constant", "scalar"):
        _representable(inp.dtype, [float(src.value or 0.0)], where)
        return np.full(shape, src.value, dtype=inp.dtype)
    if src.kind == "random":
        rng = rng_for(seed, inp.name)
        low, high = float(src.low or 0.0), float(src.high or 1.0)
        _representable(inp.dtype, [low, high], where)
        if dt.is_float(inp.dtype):
            if not np.isfinite(high - low):
                raise StencilmapError(f"random range {low:g}..{high:g} is wider than float64", where)
            return rng.uniform(low, high, size=shape).astype(inp.dtype)
        return rng.integers(int(low), int(high), size=shape, endpoint=True).astype(inp.dtype)
    if src.kind == "inline":
        flat = np.asarray(src.values, dtype=np.float64)
        _check_values(flat, inp.dtype, "inline data", where)
        return _reshaped(flat.astype(inp.dtype), shape, size, "inline data", where)
    return _read_file(program, inp, shape, size, where, data_dir)


def _representable(dtype: str, values: list[float], where: Location) -> None:
    """Refuse values a ``dtype`` cannot hold: beyond an integer type's range, or not finite / beyond the
    largest float (NaN is allowed in float data)."""
    if dt.is_float(dtype):
        top = float(np.finfo(np.dtype(dtype)).max)
        bad = [v for v in values if np.isinf(v) or abs(v) > top]
    elif dtype == "bool":
        bad = [v for v in values if not np.isfinite(v)]
    else:
        info = np.iinfo(np.dtype(dtype))
        bad = [v for v in values if not (np.isfinite(v) and info.min <= v <= info.max)]
    if bad:
        raise StencilmapError(f"value {bad[0]:g} does not fit {dtype}", where)


def _check_file_size(path: Path, dtype: str, shape: tuple[int, ...], size: int, where: Location) -> None:
    """Refuse a data file whose size cannot hold ``size`` values before reading it (raw ``.dat``: exactly
    size × itemsize bytes; ``.csv``: at most 64 bytes a value)."""
    nbytes = path.stat().st_size
    itemsize = np.dtype(dtype).itemsize
    if path.suffix.lower() != ".csv" and nbytes != size * itemsize:
        raise StencilmapError(
            f"data file {path.name} has {nbytes // itemsize} values, expected {size} (shape {list(shape)}, {dtype})",
            where,
        )
    if path.suffix.lower() == ".csv" and nbytes > 64 * size + 4096:
        raise StencilmapError(f"data file {path.name} is too large for {size} values", where)


def _reshaped(flat: Array, shape: tuple[int, ...], size: int, what: str, where: Location) -> Array:
    if flat.size != size:
        raise StencilmapError(f"{what} has {flat.size} values, expected {size} (shape {list(shape)})", where)
    return flat.reshape(shape)


def _read_file(
    program: Program, inp: Input, shape: tuple[int, ...], size: int, where: Location, data_dir: Path | None
) -> Array:
    assert inp.source is not None and inp.source.path is not None
    base = Path(program.path).parent if program.path else Path.cwd()
    path = base / inp.source.path
    allowed = (data_dir if data_dir is not None else base).resolve()
    # containment first: a program must not learn whether files outside exist
    if not path.resolve().is_relative_to(allowed):
        raise StencilmapError(
            f"data file {path} is outside {allowed}; allow its folder with {param('data_dir')} or supply it with "
            f"{input_param(inp.name, 'FILE.npy')}",
            where,
        )
    if not path.is_file():
        raise StencilmapError(
            f"data file not found: {path} (input '{inp.name}': {inp.dtype}, shape {list(shape)}); "
            f"supply it with {input_param(inp.name, 'FILE.npy')}",
            where,
        )
    _check_file_size(path, inp.dtype, shape, size, where)
    csv = path.suffix.lower() == ".csv"
    try:
        with warnings.catch_warnings():  # loadtxt warns of an empty file: the size check below says it
            warnings.simplefilter("ignore")
            if csv:
                values = np.loadtxt(path, delimiter=",", ndmin=2, dtype=np.float64)
            else:
                values = np.fromfile(path, dtype=np.dtype(inp.dtype).newbyteorder("<"))
    except (OSError, ValueError) as exc:
        raise StencilmapError(f"cannot read data file {path}: {exc}", where) from None
    if csv or dt.is_float(inp.dtype):  # raw integer data always fits
        _check_values(values, inp.dtype, f"data file {path.name}", where)
    return _reshaped(values.ravel().astype(inp.dtype), shape, size, f"data file {path.name}", where)


def _check_values(values: Array, dtype: str, what: str, where: Location) -> None:
    """Refuse data a ``dtype`` cannot hold, saying where the first such value is (a 2-D array of CSV rows:
    its row and column; else its index): beyond an integer type's range or not an integer, or infinite /
    beyond the largest float (NaN is allowed in float data)."""
    with np.errstate(all="ignore"):
        if dt.is_float(dtype):
            bad = np.isinf(values) | (np.abs(values) > float(np.finfo(np.dtype(dtype)).max))
        elif dtype == "bool":
            bad = ~np.isfinite(values)
        else:
            info = np.iinfo(np.dtype(dtype))
            bad = (
                ~np.isfinite(values)
                | (values < info.min)
                | (values >= float(info.max) + 1)  # float(2**63 - 1) is 2**63
                | (values != np.trunc(values))
            )
    hits = np.flatnonzero(bad)
    if hits.size == 0:
        return
    first = int(hits[0])
    value = float(values.flat[first])
    if values.ndim == 2:
        row, col = divmod(first, values.shape[1])
        at = f"row {row + 1}, column {col + 1}"
    else:
        at = f"index {first}"
    if dt.is_integer(dtype) and np.iinfo(np.dtype(dtype)).min <= value <= np.iinfo(np.dtype(dtype)).max:
        raise StencilmapError(f"{what}: value {value:g} at {at} is not an integer ({dtype})", where)
    raise StencilmapError(f"{what}: value {value:g} at {at} does not fit {dtype}", where)
