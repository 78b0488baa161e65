"""A stencil's expression as stack bytecode the compiled engine evaluates, one PE firing at a time.

Values are float64 registers; after every operation the result is rounded to the node's static type
(``program.typecheck``): float32 through a float32 conversion — exact for + − × ÷ and sqrt, since a
double holds a float32 product or quotient exactly before rounding (double rounding is innocuous at
53 ≥ 2·24 + 2 bits) — float16 through a ``_Float16`` conversion (the reference computes half in float32
and rounds that: innocuous too, at 24 ≥ 2·11 + 2) and integers by truncation and wrap-around to their
width. So PEs compute bit-exactly what the reference computes, except for library functions (exp, sin,
…: the reference uses NumPy's float32 routines; ≤ 1 ulp apart) and 64-bit integers beyond 2^53. NumPy's
float ``//`` and ``%`` follow ``npy_divmod`` as every other executor does (``csrc/arith.h``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from stencilmap.program import dtypes as dt
from stencilmap.program.expr import Binary, Call, Cast, Const, Expr, InBounds, Ref, Select, Unary, Var, walk
from stencilmap.program.ir import Program, Stencil
from stencilmap.program.typecheck import TypeEnv, infer, stencil_types
from stencilmap.scalar.ops import LIBM

#: The instruction set, by name: the machine's instructions (``csrc/engine.c``), the type codes a value is
#: rounded to, and the binary, unary and function operations (``csrc/arith.h``), each under the
#: ``scalar.ops`` name of what it computes. ``c_defines`` writes them as the ``SM_*`` macros ``arith.h``
#: carries (a test checks the two agree): the C side has no magic numbers.
OPCODES = {
    "load_port": 0,
    "load_const": 1,
    "load_temp": 2,
    "store_temp": 3,
    "binary": 4,
    "unary": 5,
    "call": 6,
    "select": 7,
    "round": 8,
}
TYPE_CODES = {
    "float64": 0,
    "float32": 1,
    "float16": 2,
    "bool": 3,
    "int8": 4,
    "int16": 5,
    "int32": 6,
    "int64": 7,
    "uint8": 8,
    "uint16": 9,
    "uint32": 10,
    "uint64": 11,
}
#: Binary operations; integer ``add``/``sub``/``mul`` wrap (``arith.h``'s ``int_arith``).
BINARY_CODES = {
    "add": 0,
    "sub": 1,
    "mul": 2,
    "div": 3,
    "div_trunc": 4,
    "mod_c": 5,
    "floordiv": 6,
    "mod_py": 7,
    "pow": 8,
    "eq": 9,
    "ne": 10,
    "lt": 11,
    "le": 12,
    "gt": 13,
    "ge": 14,
    "land": 15,
    "lor": 16,
    "band": 17,
    "bor": 18,
    "bxor": 19,
}
UNARY_CODES = {"neg": 0, "lnot": 1, "inv": 2}
#: Functions: one argument below ``FN_BINARY``, two from it; ``min_nan``/``max_nan`` are n-ary (the code
#: is ``code * FN_NARY + n``), ``fma_unfused`` takes three.
FN_BINARY, FN_NARY = 100, 1000
_LIBM1 = [f for f, n in LIBM.items() if n == 1]
_LIBM2 = [f for f, n in LIBM.items() if n == 2]
FUNC_CODES = {
    **{f: code for code, f in enumerate(_LIBM1)},  # sqrt 0 … erfc 27
    "round_half_away": len(_LIBM1),
    "round_even": len(_LIBM1) + 1,
    **{f: FN_BINARY + code for code, f in enumerate(_LIBM2)},  # pow 100 … copysign 106
    "fdim": FN_BINARY + len(_LIBM2),
    "min_nan": FN_BINARY + len(_LIBM2) + 1,
    "max_nan": FN_BINARY + len(_LIBM2) + 2,
    "fma_unfused": 2 * FN_BINARY,
}
#: Program function names that are another's code (``abs`` of a float is ``fabs``; SODA's ``round`` is
#: ``round_half_away``; NumPy's rounds half to even), under the names ``sim/cgra.py`` uses.
FUNC_ALIASES = {
    "abs": "fabs",
    "round_c": "round_half_away",
    "min": "min_nan",
    "max": "max_nan",
    "fma": "fma_unfused",
}
FUNC_CODES.update({alias: FUNC_CODES[name] for alias, name in FUNC_ALIASES.items()})

LOAD_PORT, LOAD_CONST, LOAD_TEMP, STORE_TEMP, BINARY, UNARY, CALL, SELECT, ROUND = OPCODES.values()
T_F64, T_F32, T_F16, T_BOOL, T_I8, T_I16, T_I32, T_I64, T_U8, T_U16, T_U32, T_U64 = TYPE_CODES.values()
B_ADD, B_SUB, B_MUL, B_DIV, B_IDIV_C, B_MOD_C, B_FLOORDIV, B_MOD_PY, B_POW = list(BINARY_CODES.values())[:9]
B_EQ, B_NE, B_LT, B_LE, B_GT, B_GE, B_AND, B_OR, B_BAND, B_BOR, B_BXOR = list(BINARY_CODES.values())[9:]
U_NEG, U_NOT, U_INV = UNARY_CODES.values()
_BIN = {
    "+": "add",
    "-": "sub",
    "*": "mul",
    "**": "pow",
    "==": "eq",
    "!=": "ne",
    "<": "lt",
    "<=": "le",
    ">": "gt",
    ">=": "ge",
    "&&": "land",
    "||": "lor",
    "&": "band",
    "|": "bor",
    "^": "bxor",
    "//": "floordiv",
}


def c_defines() -> str:
    """The tables above as C macros (``SM_OP_*``, ``SM_T_*``, ``SM_BIN_*``, ``SM_UN_*``, ``SM_FN_*``)."""
    lines = [f"#define SM_OP_{k.upper()} {v}" for k, v in OPCODES.items()]
    lines += [f"#define SM_T_{k.upper()} {v}" for k, v in TYPE_CODES.items()]
    lines += [f"#define SM_BIN_{k.upper()} {v}" for k, v in BINARY_CODES.items()]
    lines += [f"#define SM_UN_{k.upper()} {v}" for k, v in UNARY_CODES.items()]
    lines += [f"#define SM_FN_{k.upper()} {v}" for k, v in FUNC_CODES.items() if k not in FUNC_ALIASES]
    lines += [f"#define SM_FN_BINARY {FN_BINARY}", f"#define SM_FN_NARY {FN_NARY}"]
    return "\n".join(lines) + "\n"


#: The engine writes a PE's point (x0, x1, x2, C order padded to 3 axes) and the grid (s0, s1, s2) into
#: temporaries 0-5 before each evaluation; a stencil with ``InBounds`` guards numbers its own after them.
POINT_TEMPS = 6


@dataclass(frozen=True, slots=True)
class Bytecode:
    """``code[i] = (opcode, arg, type)``; ``consts`` the literal pool; ``ports`` the PE ports in order."""

    code: npt.NDArray[np.int64]  # shape (n, 3)
    consts: npt.NDArray[np.float64]
    n_temps: int
    ports: tuple[str, ...]


def round_value(x: float, t: str) -> float:
    """Python-side rounding of a literal to its type (the engine does the same in compiled code)."""
    arr = np.asarray(x, dtype=dt.concrete(t)) if dt.is_float(t) or t in dt.WEAK_TYPES else None
    if arr is not None:
        return float(arr)
    info = np.iinfo(dt.concrete(t)) if t != "bool" else None
    v = int(x)
    if info is None:
        return float(v != 0)
    span = int(info.max) - int(info.min) + 1
    return float((v - int(info.min)) % span + int(info.min))


def type_code(t: str) -> int:
    return TYPE_CODES[dt.concrete(t)]


class _Compiler:
    def __init__(self, program: Program, stencil: Stencil, ports: tuple[str, ...], params: dict[str, object]):
        self.program = program
        self.semantics = program.semantics
        self.ports = {p: n for n, p in enumerate(ports)}
        self.params = params
        self.code: list[tuple[int, int, int]] = []
        self.consts: list[float] = []
        self.temps: dict[str, int] = {}
        self.env, self.temp_types = stencil_types(program, stencil)
        roots = (stencil.expr, *(t.expr for t in stencil.temps))
        self.base = POINT_TEMPS if any(isinstance(n, InBounds) for r in roots for n in walk(r)) else 0

    def const(self, value: float, t: str) -> None:
        self.consts.append(round_value(value, t))
        self.code.append((LOAD_CONST, len(self.consts) - 1, type_code(t)))

    def emit(self, e: Expr, env: TypeEnv) -> str:
        """Code that leaves ``e`` on the stack, rounded to its type; returns that type."""
        t = infer(e, env)
        if isinstance(e, Const):
            self.const(float(e.value), t)
        elif isinstance(e, Ref):
            from stencilmap.design.common import port_name

            self.code.append((LOAD_PORT, self.ports[port_name(e.field, e.offset)], type_code(t)))
        elif isinstance(e, Var):
            self._var(e, t)
        elif isinstance(e, Cast):
            self.emit(e.operand, env)
            self.code.append((ROUND, 0, type_code(t)))
        elif isinstance(e, Unary):
            self.emit(e.operand, env)
            if e.op != "!":  # '!' tests the operand itself; the others convert it to the result type
                self.code.append((ROUND, 0, type_code(t)))
            if e.op != "+":
                name = {"-": "neg", "!": "lnot", "~": "inv"}[e.op]
                if name == "inv" and dt.concrete(t) == "bool":  # NumPy: ~ of a bool is logical not
                    name = "lnot"
                self.code.append((UNARY, UNARY_CODES[name], type_code(t)))
        elif isinstance(e, Binary):
            self._binary(e, t, env)
        elif isinstance(e, Select):
            self.emit(e.cond, env)
            for branch in (e.then, e.else_):
                self.emit(branch, env)
                self.code.append((ROUND, 0, type_code(t)))
            self.code.append((SELECT, 0, type_code(t)))
        elif isinstance(e, Call):
            for a in e.args:
                self.emit(a, env)
                self.code.append((ROUND, 0, type_code(t)))
            self.code.append((CALL, self._func(e.func, len(e.args)), type_code(t)))
        elif isinstance(e, InBounds):
            self._in_bounds(e.offset)
        return t

    def _in_bounds(self, offset: tuple[int, ...]) -> None:
        """0 <= x_a + o_a < s_a on every axis the offset moves along, and-ed (the point: temporaries 0-5)."""
        terms = 0
        for a, o in enumerate(offset):
            if not o:
                continue
            axis = 3 - len(offset) + a
            for bound, op in ((None, B_GE), (axis + 3, B_LT)):
                self.code.append((LOAD_TEMP, axis, T_I64))
                self.const(float(o), "int64")
                self.code.append((BINARY, B_ADD, T_I64))
                if bound is None:
                    self.const(0.0, "int64")
                else:
                    self.code.append((LOAD_TEMP, bound, T_I64))
                self.code.append((BINARY, op, T_BOOL))
                terms += 1
                if terms > 1:
                    self.code.append((BINARY, B_AND, T_BOOL))
        if not terms:
            self.const(1.0, "bool")

    def _var(self, e: Var, t: str) -> None:
        if e.name in self.temps:
            self.code.append((LOAD_TEMP, self.temps[e.name], type_code(t)))
            return
        c = self.program.constant(e.name)
        if c is not None:
            self.const(float(c.value), t)
            return
        values = self.params[e.name]
        assert isinstance(values, np.ndarray)
        self.const(float(values[e.index]), t)

    def _binary(self, e: Binary, t: str, env: TypeEnv) -> None:
        c = self.semantics == "c"
        ta, tb = infer(e.lhs, env), infer(e.rhs, env)
        if e.op in ("==", "!=", "<", "<=", ">", ">=", "&&", "||"):
            common = dt.c_common(ta, tb) if c else dt.np_common(ta, tb)
        else:
            common = t
        for side in (e.lhs, e.rhs):
            self.emit(side, env)
            if e.op not in ("&&", "||"):  # logic tests its operands as they are
                self.code.append((ROUND, 0, type_code(common)))
        if e.op == "/":
            name = "div_trunc" if (c and dt.is_integer(t)) else "div"
        elif e.op == "%":
            name = "mod_c" if c else "mod_py"
        else:
            name = _BIN[e.op]
        self.code.append((BINARY, BINARY_CODES[name], type_code(t)))

    def _func(self, func: str, nargs: int) -> int:
        if func == "round":
            return FUNC_CODES["round_half_away" if self.semantics == "c" else "round_even"]
        code = FUNC_CODES[func]
        if func in ("min", "max"):
            return code * FN_NARY + nargs  # n-ary
        return code

    def finish(self, stencil: Stencil) -> Bytecode:
        for temp in stencil.temps:
            env = self.env
            self.emit(temp.expr, env)
            self.code.append((ROUND, 0, type_code(self.temp_types[temp.name])))
            self.temps[temp.name] = self.base + len(self.temps)
            self.code.append((STORE_TEMP, self.temps[temp.name], 0))
        self.emit(stencil.expr, self.env)
        self.code.append((ROUND, 0, type_code(stencil.dtype)))
        code = np.asarray(self.code, dtype=np.int64).reshape(-1, 3)
        n_temps = self.base + len(self.temps)
        return Bytecode(code, np.asarray(self.consts, dtype=np.float64), n_temps, tuple(self.ports))


def compile_stencil(
    program: Program, stencil: Stencil, ports: tuple[str, ...], params: dict[str, object]
) -> Bytecode:
    """Bytecode of ``stencil`` reading its values from ``ports`` (PE port names, in that order)."""
    return _Compiler(program, stencil, ports, params).finish(stencil)
