"""Expressions of the Python front end (``program.python``): a stencil function's body, read with ``ast``,
→ IR expressions. The StencilFlow converter (``stencilflow_expr.ExprConverter``) does the operators,
comparisons, ``a if c else b`` and ``and``/``or``/``not``; this one reads fields as ``v[-1, 0]`` (relative
offsets, first index the slowest axis), literals by the program's semantics, ``literal(v, dtype)``, params
``c[i, j]``, and says ``file:line:col`` in its errors. Shared with the printer: how a name is spelt
(``escape``/``unescape``) and the type a bare literal takes (``literal_dtype``)."""

from __future__ import annotations

import ast
import keyword
from dataclasses import dataclass, field

from stencilmap.errors import StencilmapError
from stencilmap.program import dtypes as dt
from stencilmap.program.expr import FUNCTIONS, Call, Cast, Const, Expr, Ref, Var
from stencilmap.program.stencilflow_expr import Context, ExprConverter, _int_constant

#: NumPy spellings the other front ends accept for some functions (``np.minimum``); ``fabs`` stays ``fabs``.
_ALIASES = {"minimum": "min", "maximum": "max", "power": "pow", "arctan2": "atan2"}
#: Module-level names that are settings, not constants (``program.python``).
SETTINGS = (
    "shape",
    "iterate",
    "border",
    "outputs",
    "feedback",
    "semantics",
    "unroll",
    "vectorization",
    "burst_width",
    "tile",
    "cluster",
    "dram",
)


def escape(name: str) -> str:
    """The Python spelling of a program name: a keyword gets a trailing ``_`` (``in`` → ``in_``), and so does
    a name that already looks escaped (``in_`` → ``in__``), so that ``unescape`` inverts it."""
    return name + "_" if keyword.iskeyword(name.rstrip("_")) else name


def unescape(name: str) -> str:
    """The program name a Python identifier spells (``in_`` → ``in``)."""
    return name[:-1] if name.endswith("_") and keyword.iskeyword(name.rstrip("_")) else name


def literal_dtype(value: bool | int | float, semantics: dt.Semantics) -> str | None:
    """The type of a bare literal: a weak Python scalar under NumPy rules; C's rules otherwise (a decimal
    integer is ``int32`` or ``int64``, a float ``double``; C has no boolean literal: None)."""
    if semantics == "numpy":
        if isinstance(value, bool):
            return dt.WEAK_BOOL
        return dt.WEAK_INT if isinstance(value, int) else dt.WEAK_FLOAT
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return dt.c_literal_int_type(value, "", decimal=True)
    return "float64"


def where(filename: str, node: ast.AST) -> str:
    """``file:line:col`` of a node (columns count from 1)."""
    line = getattr(node, "lineno", None)
    col = getattr(node, "col_offset", None)
    if line is None:
        return filename
    return f"{filename}:{line}:{(col or 0) + 1}"


def dtype_of(node: ast.expr | None, filename: str, what: str) -> str:
    """A dtype written as an annotation or an argument: ``float32``, ``"float32"``, ``np.float32``."""
    if node is None:
        raise StencilmapError(f"{what} needs a dtype", filename)
    name = node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else lang_name(node)
    if name in dt.DTYPES:
        return name
    if name in ("float", "int", "double", "half", "complex"):
        raise StencilmapError(
            f"'{name}' is ambiguous here: write a sized type (float32, float64, int32, ...)",
            where(filename, node),
        )
    raise StencilmapError(
        f"{what}: expected a dtype (float32, int16, ...), got '{ast.unparse(node)}'", where(filename, node)
    )


def lang_name(node: ast.expr) -> str | None:
    """The name a ``Name`` or a dotted attribute spells (``float32``, ``stencilmap.lang.float32``,
    ``np.sqrt`` → its last part); nothing is imported, so the module part only reads as documentation."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and lang_name(node.value) is not None:
        return node.attr
    return None


def signed_number(node: ast.expr) -> bool | int | float | None:
    """The value of a literal number, optionally signed (``-0.5``), or None."""
    sign = 1
    while isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        sign = -sign if isinstance(node.op, ast.USub) else sign
        node = node.operand
    if not isinstance(node, ast.Constant) or not isinstance(node.value, bool | int | float):
        return None
    if sign == 1:
        return node.value
    return -node.value if not isinstance(node.value, bool) else None


@dataclass
class Scope:
    """What names mean inside one stencil function: the fields it lists as parameters (with the axes each
    spans), the program's constants and params (name → rank), and the function's temporaries so far."""

    filename: str
    semantics: dt.Semantics
    fields: dict[str, tuple[int, ...]]
    constants: set[str]
    params: dict[str, int]
    temps: set[str] = field(default_factory=set)


class PyExprConverter(ExprConverter):
    """Python AST of one stencil function's expressions → IR expressions."""

    def __init__(self, scope: Scope) -> None:
        super().__init__(Context(scope.filename, (), {}, set(), scope.constants), "")
        self.scope = scope

    def fail(self, node: ast.AST, message: str) -> StencilmapError:
        return StencilmapError(message, where(self.scope.filename, node))

    def convert(self, node: ast.expr) -> Expr:
        if isinstance(node, ast.Constant) and isinstance(node.value, bool | int | float):
            return self._literal(node, node.value, None)
        return super().convert(node)

    def _literal(self, node: ast.AST, value: bool | int | float, dtype: str | None) -> Const:
        if isinstance(value, int) and not isinstance(value, bool):
            low, high = (-(2**63), 2**63) if self.scope.semantics == "numpy" else (-(2**64) + 1, 2**64)
            if not low <= value < high:
                raise self.fail(node, "integer literal does not fit in 64 bits")
        if dtype is None:
            dtype = literal_dtype(value, self.scope.semantics)
            if dtype is None:
                raise self.fail(node, "C semantics have no boolean literal: write 1 or 0")
        return Const(value, dtype)

    def _call(self, node: ast.Call) -> Expr:
        func = node.func
        fname = lang_name(func)
        if fname is None:
            raise self.fail(node, f"unsupported call '{ast.unparse(node)}'")
        if node.keywords:
            raise self.fail(node, "keyword arguments are not supported")
        if fname == "literal":
            return self._typed_literal(node)
        if fname in dt.DTYPES:
            if len(node.args) != 1:
                raise self.fail(node, f"a cast to {fname} takes one argument")
            return Cast(fname, self.convert(node.args[0]))
        fname = _ALIASES.get(fname, fname)
        if fname not in FUNCTIONS:
            raise self.fail(node, f"unknown function '{ast.unparse(func)}'")
        arity = FUNCTIONS[fname]
        if (arity is None and len(node.args) < 2) or (arity is not None and len(node.args) != arity):
            count = "at least 2" if arity is None else str(arity)
            raise self.fail(node, f"{fname} takes {count} argument(s), got {len(node.args)}")
        return Call(fname, tuple(self.convert(a) for a in node.args))

    def _typed_literal(self, node: ast.Call) -> Const:
        """``literal(0.2, float32)`` (SODA's ``0.2f``), ``literal(-3)`` (a negative literal)."""
        if not 1 <= len(node.args) <= 2:
            raise self.fail(node, "literal takes a number and an optional dtype: literal(0.2, float32)")
        value = signed_number(node.args[0])
        if value is None:
            raise self.fail(node.args[0], "literal takes a number: literal(0.2, float32)")
        dtype = dtype_of(node.args[1], self.scope.filename, "literal") if len(node.args) == 2 else None
        if dtype is not None and dt.is_float(dtype):
            value = float(value)
        elif dtype is not None and isinstance(value, float):
            raise self.fail(node.args[0], f"a literal of {dtype} must be an integer")
        return self._literal(node, value, dtype)

    def _name(self, node: ast.Name) -> Expr:
        name = unescape(node.id)
        if name in self.scope.temps or name in self.scope.constants:
            return Var(name)
        if name in self.scope.params:
            if self.scope.params[name]:
                raise self.fail(node, f"param '{name}' is read by element: {node.id}[i, ...]")
            return Var(name)
        axes = self.scope.fields.get(name)
        if axes == ():
            return Ref(name, ())
        if axes is not None:
            zeros = ", ".join("0" for _ in axes)
            raise self.fail(node, f"field '{name}' is read at an offset: {node.id}[{zeros}] is its centre")
        raise self.fail(
            node, f"undefined name '{node.id}' (a field read must be a parameter of the function)"
        )

    def _subscript(self, node: ast.Subscript) -> Expr:
        if not isinstance(node.value, ast.Name):
            raise self.fail(node, f"unsupported access '{ast.unparse(node)}'")
        name = unescape(node.value.id)
        index = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        numbers = [_int_constant(ix) for ix in index]
        if name in self.scope.params:
            rank = self.scope.params[name]
            if len(index) != rank or any(n is None or n < 0 for n in numbers):
                raise self.fail(node, f"param '{name}' takes {rank} non-negative integer index(es)")
            return Var(name, tuple(n for n in numbers if n is not None))
        axes = self.scope.fields.get(name)
        if axes is None:
            if name in self.scope.temps or name in self.scope.constants:
                raise self.fail(node, f"'{node.value.id}' is a scalar; it takes no index")
            raise self.fail(
                node, f"undefined field '{node.value.id}' (a field read must be a parameter of the function)"
            )
        if not axes:
            raise self.fail(node, f"scalar field '{name}' is read without an index: {node.value.id}")
        if len(index) != len(axes):
            raise self.fail(
                node, f"field '{name}' spans {len(axes)} dimension(s), read with {len(index)} offset(s)"
            )
        for ix, n in zip(index, numbers, strict=True):
            if n is None:
                raise self.fail(
                    ix, f"an offset of '{name}' must be an integer constant, got '{ast.unparse(ix)}'"
                )
        return Ref(name, tuple(n for n in numbers if n is not None))
