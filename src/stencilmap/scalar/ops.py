"""The named scalar operations of a lowered kernel: one table, read by the printer, the helper generator
and the simulator's bytecode.

Every operand of an ``Op`` already has the type the operation works in (the lowering inserts the
conversions), so each name below has one meaning per type. Where C leaves a case undefined, or differs
from the defined semantics (``backends/ops.py``, the NumPy reference), the operation's name says so and
``OPS[name].defines`` states the choice.
"""

from __future__ import annotations

from dataclasses import dataclass

from stencilmap.program.expr import FUNCTIONS


@dataclass(frozen=True, slots=True)
class OpSpec:
    """``arity`` arguments (None: variadic); ``on``: the result types it applies to ("int": integers
    except bool, "bool", "float", "any"); ``defines``: what it fixes that C leaves open ("" none)."""

    arity: int
    on: tuple[str, ...]
    defines: str = ""


OPS: dict[str, OpSpec] = {
    # conversions (the source type is the argument's)
    "convert": OpSpec(1, ("any",), "int → narrower int wraps; float → int64 out of range is undefined"),
    "to_bool": OpSpec(1, ("bool",), "x != 0"),
    "f2i_wrap": OpSpec(1, ("int",), "float → 8/16/32-bit int truncates, wraps mod 2**bits; NaN, ±inf → 0"),
    # integer arithmetic, two's complement
    "add_wrap": OpSpec(2, ("int",), "signed overflow wraps"),
    "sub_wrap": OpSpec(2, ("int",), "signed overflow wraps"),
    "mul_wrap": OpSpec(2, ("int",), "signed overflow wraps"),
    "neg_wrap": OpSpec(1, ("int",), "-MIN wraps to MIN"),
    "abs_wrap": OpSpec(1, ("int",), "abs(MIN) wraps to MIN"),
    "inv": OpSpec(1, ("int",)),
    "div_trunc": OpSpec(2, ("int",), "C /: truncates toward zero; x / 0 = 0; MIN / -1 wraps"),
    "mod_c": OpSpec(2, ("int",), "C %: the dividend's sign; x % 0 = 0; x % -1 = 0"),
    "mod_py": OpSpec(2, ("int", "float"), "NumPy %: the divisor's sign; int x % 0 = 0; floats as npy_divmod"),
    "floordiv": OpSpec(
        2, ("int", "float"), "NumPy //: int x // 0 = 0, MIN // -1 wraps; floats as npy_divmod"
    ),
    "ipow": OpSpec(2, ("int",), "wrapping power by squaring; a negative exponent gives 0"),
    "band": OpSpec(2, ("int", "bool")),
    "bor": OpSpec(2, ("int", "bool"), "bool + is or (NumPy)"),
    "bxor": OpSpec(2, ("int", "bool")),
    # float arithmetic (IEEE 754, rounded to the result type; float16 computed in float32)
    "add": OpSpec(2, ("float",)),
    "sub": OpSpec(2, ("float",)),
    "mul": OpSpec(2, ("float",)),
    "div": OpSpec(2, ("float",)),
    "neg": OpSpec(1, ("float",)),
    "fma_unfused": OpSpec(3, ("float",), "a * b rounded, then + c: never fused"),
    "fdim": OpSpec(2, ("float",), "max_nan(a - b, 0)"),
    "round_half_away": OpSpec(1, ("float",), "copysign(floor(fabs(x) + 0.5), x), the reference's formula"),
    "libm": OpSpec(0, ("float",), "the C library's function ``attr`` (≤ 1 ulp from NumPy's)"),
    # any type
    "min_nan": OpSpec(2, ("any",), "NumPy minimum: a NaN operand wins"),
    "max_nan": OpSpec(2, ("any",), "NumPy maximum: a NaN operand wins"),
    "eq": OpSpec(2, ("any",)),
    "ne": OpSpec(2, ("any",)),
    "lt": OpSpec(2, ("any",)),
    "le": OpSpec(2, ("any",)),
    "gt": OpSpec(2, ("any",)),
    "ge": OpSpec(2, ("any",)),
    "land": OpSpec(2, ("any",), "operands tested != 0"),
    "lor": OpSpec(2, ("any",), "operands tested != 0"),
    "lnot": OpSpec(1, ("any",), "x == 0 (also NumPy's ~ on bool)"),
    "select": OpSpec(3, ("any",), "cond tested != 0"),
}

#: The C operator of each comparison.
COMPARE = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
#: Program comparison operators → op names.
COMPARE_OF = {c: name for name, c in COMPARE.items()}

#: The C library functions ``libm`` may name, with their arity; ``DOUBLE_ONLY`` are evaluated in double
#: precision and rounded once (the reference uses Python's ``math.erf``).
LIBM: dict[str, int] = {
    f: n for f, n in FUNCTIONS.items() if n in (1, 2) and f not in ("abs", "round", "fdim")
}  # the program's functions (``program.expr.FUNCTIONS``, in its order) but those lowered to named ops
DOUBLE_ONLY = frozenset({"erf", "erfc"})

#: Functions whose result is correctly rounded everywhere (NumPy and libm agree bit for bit).
EXACT_FUNCTIONS = frozenset(
    {"sqrt", "fabs", "abs", "floor", "ceil", "trunc", "rint", "round", "fmod", "fmin", "fmax", "copysign"}
    | {"fdim", "fma", "min", "max"}
)
