"""A stencil's expression as stack bytecode the compiled engine evaluates, one PE firing at a time.

Values are float64 registers; after every operation the result is rounded to the node's static type
(``program.typecheck``): float32 through a float32 conversion — exact for + − × ÷ and sqrt, since a
double holds a float32 product or quotient exactly before rounding (double rounding is innocuous at
53 ≥ 2·24 + 2 bits) — and integers by truncation and wrap-around to their width. So PEs compute
bit-exactly what the reference computes, except for library functions (exp, sin, …: the reference
uses NumPy's float32 routines; ≤ 1 ulp apart) and 64-bit integers beyond 2^53.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from stencilmap.program import dtypes as dt
from stencilmap.program.expr import Binary, Call, Cast, Const, Expr, Ref, Select, Unary, Var
from stencilmap.program.ir import Program, Stencil
from stencilmap.program.typecheck import TypeEnv, infer, stencil_types

# opcodes
LOAD_PORT, LOAD_CONST, LOAD_TEMP, STORE_TEMP, BINARY, UNARY, CALL, SELECT, ROUND = range(9)

# type codes: how a value is rounded
T_F64, T_F32, T_F16, T_BOOL = 0, 1, 2, 3
T_I8, T_I16, T_I32, T_I64, T_U8, T_U16, T_U32, T_U64 = 4, 5, 6, 7, 8, 9, 10, 11
TYPE_CODES = {
    "float64": T_F64, "float32": T_F32, "float16": T_F16, "bool": T_BOOL,
    "int8": T_I8, "int16": T_I16, "int32": T_I32, "int64": T_I64,
    "uint8": T_U8, "uint16": T_U16, "uint32": T_U32, "uint64": T_U64,
}  # fmt: skip

# binary op codes
B_ADD, B_SUB, B_MUL, B_DIV, B_IDIV_C, B_MOD_C, B_FLOORDIV, B_MOD_PY, B_POW = range(9)
B_EQ, B_NE, B_LT, B_LE, B_GT, B_GE, B_AND, B_OR, B_BAND, B_BOR, B_BXOR = range(9, 20)
_BIN = {"+": B_ADD, "-": B_SUB, "*": B_MUL, "**": B_POW, "==": B_EQ, "!=": B_NE, "<": B_LT, "<=": B_LE,
        ">": B_GT, ">=": B_GE, "&&": B_AND, "||": B_OR, "&": B_BAND, "|": B_BOR, "^": B_BXOR,
        "//": B_FLOORDIV}  # fmt: skip

# unary op codes
U_NEG, U_NOT, U_INV = range(3)

# functions: one argument codes below 100, two arguments from 100, min/max/fma special
FUNC_CODES = {
    "sqrt": 0, "cbrt": 1, "exp": 2, "exp2": 3, "expm1": 4, "log": 5, "log2": 6, "log10": 7, "log1p": 8,
    "sin": 9, "cos": 10, "tan": 11, "asin": 12, "acos": 13, "atan": 14, "sinh": 15, "cosh": 16,
    "tanh": 17, "asinh": 18, "acosh": 19, "atanh": 20, "fabs": 21, "abs": 21, "floor": 22, "ceil": 23,
    "trunc": 24, "rint": 25, "erf": 26, "erfc": 27, "round_c": 28, "round_even": 29,
    "pow": 100, "atan2": 101, "hypot": 102, "fmod": 103, "fmin": 104, "fmax": 105, "copysign": 106,
    "fdim": 107, "min": 108, "max": 109, "fma": 200,
}  # fmt: skip


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
                self.code.append((UNARY, {"-": U_NEG, "!": U_NOT, "~": U_INV}[e.op], type_code(t)))
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
        return t

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
            op = B_IDIV_C if (c and dt.is_integer(t)) else B_DIV
        elif e.op == "%":
            op = B_MOD_C if c else B_MOD_PY
        else:
            op = _BIN[e.op]
        self.code.append((BINARY, op, type_code(t)))

    def _func(self, func: str, nargs: int) -> int:
        if func == "round":
            return FUNC_CODES["round_c" if self.semantics == "c" else "round_even"]
        code = FUNC_CODES[func]
        if func in ("min", "max"):
            return code * 1000 + nargs  # n-ary
        return code

    def finish(self, stencil: Stencil) -> Bytecode:
        for temp in stencil.temps:
            env = self.env
            self.emit(temp.expr, env)
            self.code.append((ROUND, 0, type_code(self.temp_types[temp.name])))
            self.temps[temp.name] = len(self.temps)
            self.code.append((STORE_TEMP, self.temps[temp.name], 0))
        self.emit(stencil.expr, self.env)
        self.code.append((ROUND, 0, type_code(stencil.dtype)))
        code = np.asarray(self.code, dtype=np.int64).reshape(-1, 3)
        return Bytecode(code, np.asarray(self.consts, dtype=np.float64), len(self.temps), tuple(self.ports))


def compile_stencil(
    program: Program, stencil: Stencil, ports: tuple[str, ...], params: dict[str, object]
) -> Bytecode:
    """Bytecode of ``stencil`` reading its values from ``ports`` (PE port names, in that order)."""
    return _Compiler(program, stencil, ports, params).finish(stencil)
