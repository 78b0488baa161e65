"""The compiled engine: ``csrc/engine.c`` built by the system C compiler, cached, called through ctypes.

Two pieces, each compiled once by ``native`` and cached under ``<cache>/sim``:

- the **engine** — the cycle loop and every module kind, the same library for every design;
- the design's **evaluators** — each distinct stencil expression of its PEs as straight-line C over
  the shared arithmetic (``csrc/arith.h``), so a PE firing costs a call instead of a bytecode
  interpretation. Keyed by the expressions alone: every k, q, W or shape of a program shares them.
  ``interface.simulate`` compiles them when the run is long enough to repay ~0.3 s of compilation;
  shorter runs interpret the bytecode. Both give identical values (one arithmetic, one operation order).
"""

from __future__ import annotations

import ctypes
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from typing import Any

import numpy as np
import numpy.typing as npt

from stencilmap import native
from stencilmap.errors import StencilmapError
from stencilmap.sim import bytecode as B
from stencilmap.sim import memory as K
from stencilmap.sim.layout import Packed

#: No fast-math and no contraction into FMA: every operation rounds as the reference's does.
CFLAGS = ("-O2", "-std=c11", "-ffp-contract=off", "-fno-math-errno", "-fPIC", "-shared")

#: Notified (with one line) before anything is compiled.
Notify = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class Engine:
    """The loaded engine and, when compiled, the design's evaluators; ``compile_seconds``: the
    compilation this process paid for them (0 when both came from the cache)."""

    function: Any
    evaluators: int | None  # address of ``evaluate`` in the evaluators' library, None: interpret
    compile_seconds: float

    def run(
        self,
        packed: Packed,
        trace: npt.NDArray[np.int8],
        occupancy: npt.NDArray[np.int64],
        trace_from: int,
        now0: int,
        limit: int,
    ) -> tuple[int, int, int, int, int]:
        """Advance ``limit`` cycles from ``now0``: (status, cycle reached, module firings, of which
        by reuse chains running as ring buffers, PE group firings that read those rings directly)."""
        out = np.zeros(5, np.int64)
        self.function(
            packed.I.ctypes.data,
            packed.F.ctypes.data,
            trace.ctypes.data,
            occupancy.ctypes.data,
            trace.shape[0],
            trace_from,
            now0,
            limit,
            out.ctypes.data,
            self.evaluators,
        )
        if out[0] < 0:
            raise MemoryError("the simulator engine ran out of memory")
        return int(out[0]), int(out[1]), int(out[2]), int(out[3]), int(out[4])


def load_engine(packed: Packed, compile_evaluators: bool, notify: Notify | None = None) -> Engine:
    """The engine for ``packed``'s design, compiling what the cache lacks (and saying so first).

    With ``compile_evaluators``, each PE's ``M_EV`` column is set to its evaluator's number.
    """
    start = time.perf_counter()
    compiled = False
    engine, fresh = _library("engine", _constants() + _source("engine.c"), notify)
    compiled |= fresh
    function = engine.run
    function.restype = None
    function.argtypes = [ctypes.c_void_p] * 4 + [ctypes.c_int64] * 4 + [ctypes.c_void_p] * 2
    address = None
    if compile_evaluators:
        source = _evaluators(packed)
        if source is not None:
            library, fresh = _library("evaluators", source, notify)
            compiled |= fresh
            address = ctypes.cast(library.evaluate, ctypes.c_void_p).value
    return Engine(function, address, time.perf_counter() - start if compiled else 0.0)


# ---------------------------------------------------------------------------------------- evaluators


def _evaluators(packed: Packed) -> str | None:
    """C for the distinct expressions of the design's PEs (numbered in a canonical order, written to
    each PE's ``M_EV``); None without PEs."""
    I = packed.I
    mod, code = int(I[K.H_MOD]), int(I[K.H_CODE])
    rows_of: dict[int, bytes] = {}
    for m in range(int(I[K.H_NMOD])):
        row = mod + m * K.MCOLS
        if I[row + K.M_KIND] == K.K_PE:
            c0, c1 = int(I[row + K.M_P]), int(I[row + K.M_P + 1])
            rows_of[m] = I[code + 3 * c0 : code + 3 * c1].tobytes()
    if not rows_of:
        return None
    distinct = sorted(set(rows_of.values()))
    number = {rows: n for n, rows in enumerate(distinct)}
    for m, rows in rows_of.items():
        I[mod + m * K.MCOLS + K.M_EV] = number[rows]
    functions = [
        _straight_line(n, np.frombuffer(rows, np.int64).reshape(-1, 3)) for n, rows in enumerate(distinct)
    ]
    cases = "".join(f"    case {n}: return ev{n}(vals, consts, temps);\n" for n in range(len(distinct)))
    return (
        '#include "arith.h"\n'
        + "".join(functions)
        + "double evaluate(i64 id, const double *vals, const double *consts, double *temps) {\n"
        + f"    switch (id) {{\n{cases}    default: return NAN;\n    }}\n}}\n"
    )


def _straight_line(n: int, rows: npt.NDArray[np.int64]) -> str:
    """``engine.c``'s stack machine unrolled over one expression: stack slots and temporaries become
    local variables; every operation calls the same arithmetic in the same order."""
    lines: list[str] = []
    sp, depth, temps = 0, 1, set()
    for op, arg, t in ((int(a), int(b), int(c)) for a, b, c in rows):
        top, below = f"s{sp - 1}", f"s{sp - 2}"
        if op in (B.LOAD_PORT, B.LOAD_CONST, B.LOAD_TEMP):
            source = {B.LOAD_PORT: f"vals[{arg}]", B.LOAD_CONST: f"consts[{arg}]", B.LOAD_TEMP: f"t{arg}"}[op]
            lines.append(f"s{sp} = {source};")
            temps |= {arg} if op == B.LOAD_TEMP else set()
            sp += 1
        elif op == B.STORE_TEMP:
            temps.add(arg)
            lines.append(f"t{arg} = {top};")
            sp -= 1
        elif op == B.BINARY:
            lines.append(f"{below} = binop({arg}, {below}, {top}, {t});")
            sp -= 1
        elif op == B.UNARY:
            lines.append(f"{top} = unary({arg}, {top}, {t});")
        elif op == B.CALL and arg >= B.FUNC_CODES["min_nan"] * B.FN_NARY:  # n-ary min / max
            k = arg % B.FN_NARY
            items = ", ".join(f"s{j}" for j in range(sp - k, sp))
            lines.append(
                f"{{ const double v[{k}] = {{{items}}}; s{sp - k} = round_to(minmax(v, {k}, {int(arg // B.FN_NARY == B.FUNC_CODES['max_nan'])}), {t}); }}"
            )
            sp -= k - 1
        elif op == B.CALL and arg == B.FUNC_CODES["fma_unfused"]:  # fma, rounded once as the interpreter does
            lines.append(f"s{sp - 3} = round_to(s{sp - 3} * {below} + {top}, {t});")
            sp -= 2
        elif op == B.CALL and arg >= B.FN_BINARY:
            lines.append(f"{below} = round_to(call2({arg}, {below}, {top}), {t});")
            sp -= 1
        elif op == B.CALL:
            lines.append(f"{top} = round_to(call1({arg}, {top}), {t});")
        elif op == B.SELECT:
            lines.append(f"s{sp - 3} = s{sp - 3} != 0.0 ? {below} : {top};")
            sp -= 2
        else:
            lines.append(f"{top} = round_to({top}, {t});")
        depth = max(depth, sp + 1)
    decls = [f"double {', '.join(f's{j} = 0.0' for j in range(depth))};"]
    decls += [f"double t{j} = temps[{j}];" for j in sorted(temps)]
    body = "\n    ".join([*decls, *lines])
    return (
        f"static double ev{n}(const double *vals, const double *consts, double *temps) {{\n"
        f"    (void)vals; (void)consts; (void)temps;\n    {body}\n    return s0;\n}}\n"
    )


# ------------------------------------------------------------------------------------------ building


def _constants() -> str:
    """memory.py's names as C definitions: one source of truth for the layout."""
    names = sorted(n for n in dir(K) if n.isupper() and isinstance(getattr(K, n), int))
    return "".join(f"#define {n} {getattr(K, n)}\n" for n in names)


def _source(name: str) -> str:
    return resources.files("stencilmap.sim").joinpath("csrc", name).read_text()


def _library(kind: str, source: str, notify: Notify | None) -> tuple[ctypes.CDLL, bool]:
    """The shared library of ``source`` (and whether it was compiled now), built by ``native``."""
    files = (("arith.h", _source("arith.h")), ("unit.c", source))
    unit = native.Unit(kind, compiler(), files, ("unit.c",), CFLAGS, ("-lm",), (".",))
    announce = (
        None if notify is None else lambda: notify(f"compiling the simulator's {kind} (cached afterwards) …")
    )
    try:
        return native.library(unit, ("sim",), announce)
    except native.CompileError as exc:
        raise StencilmapError(f"compiling the simulator failed: {exc.first_error}") from None


def compiler() -> str:
    """The C compiler: ``$CC`` or ``cc``; a clear error when there is none."""
    name = os.environ.get("CC") or "cc"
    path = native.find_compiler([name])
    if path is None:
        raise StencilmapError(
            f"the simulator needs a C compiler: '{name}' was not found (install gcc, or set CC)"
        )
    return path
