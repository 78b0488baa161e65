"""StencilFlow computation strings (Python ``name = expr`` statements, parsed with Python's own ``ast``) →
IR expressions: the names a string may use (``Context``) and the converter of one string's AST
(``ExprConverter``); ``program.stencilflow`` builds the stencils from them."""

from __future__ import annotations

import ast

from stencilmap.errors import Location, StencilmapError
from stencilmap.program import dtypes as dt
from stencilmap.program.expr import (
    FUNCTIONS,
    MAX_DEPTH,
    Binary,
    Call,
    Cast,
    Const,
    Expr,
    Ref,
    Select,
    Unary,
    Var,
)


class Context:
    """Names visible to computation strings."""

    def __init__(
        self,
        filename: str,
        axes: tuple[str, ...],
        inputs: dict[str, tuple[int, ...]],
        stencils: set[str],
        constants: set[str],
    ) -> None:
        self.filename = filename
        self.axes = axes
        self.inputs = inputs
        self.stencils = stencils
        self.constants = constants

    def field_axes(self, name: str) -> tuple[int, ...] | None:
        if name in self.inputs:
            return self.inputs[name]
        if name in self.stencils:
            return tuple(range(len(self.axes)))
        return None


#: The error for a computation string nested deeper than the IR allows (``expr.MAX_DEPTH``).
TOO_DEEP = f"expression nested more than {MAX_DEPTH:,} levels deep"


def ast_depth(tree: ast.AST) -> int:
    """The depth of ``tree``'s deepest node (``tree`` itself at 1), counted without recursion."""
    best = 0
    stack = [(tree, 1)]
    while stack:
        node, level = stack.pop()
        best = max(best, level)
        stack.extend((c, level + 1) for c in ast.iter_child_nodes(node))
    return best


_BINOPS: dict[type[ast.operator], str] = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.Mod: "%",
    ast.FloorDiv: "//",
    ast.Pow: "**",
    ast.BitAnd: "&",
    ast.BitOr: "|",
    ast.BitXor: "^",
}
_CMPOPS: dict[type[ast.cmpop], str] = {
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
}
_UNOPS: dict[type[ast.unaryop], str] = {ast.USub: "-", ast.UAdd: "+", ast.Not: "!", ast.Invert: "~"}
_ALIASES = {"fabs": "abs", "minimum": "min", "maximum": "max", "power": "pow", "arctan2": "atan2"}


class ExprConverter:
    """Python AST of one computation string → IR expression."""

    def __init__(self, ctx: Context, where: str) -> None:
        self.ctx = ctx
        self.where = where
        self.temps: set[str] = set()

    def fail(self, node: ast.AST, message: str) -> StencilmapError:
        col = getattr(node, "col_offset", None)
        at = f" (column {col + 1})" if col is not None else ""
        return StencilmapError(message + at, Location(self.ctx.filename, json_path=self.where))

    def convert(self, node: ast.expr) -> Expr:
        if isinstance(node, ast.Constant) and isinstance(node.value, bool | int | float):
            v = node.value
            if isinstance(v, int) and not -(2**63) <= v < 2**63:
                raise self.fail(node, "integer literal does not fit in int64")
            kind = (
                dt.WEAK_BOOL if isinstance(v, bool) else dt.WEAK_INT if isinstance(v, int) else dt.WEAK_FLOAT
            )
            return Const(v, kind)
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            return Binary(_BINOPS[type(node.op)], self.convert(node.left), self.convert(node.right))
        if isinstance(node, ast.UnaryOp):
            return Unary(_UNOPS[type(node.op)], self.convert(node.operand))
        if isinstance(node, ast.BoolOp):
            op = "&&" if isinstance(node.op, ast.And) else "||"
            result = self.convert(node.values[0])
            for value in node.values[1:]:
                result = Binary(op, result, self.convert(value))
            return result
        if isinstance(node, ast.Compare):
            return self._compare(node)
        if isinstance(node, ast.IfExp):
            return Select(self.convert(node.test), self.convert(node.body), self.convert(node.orelse))
        if isinstance(node, ast.Call):
            return self._call(node)
        if isinstance(node, ast.Subscript):
            return self._subscript(node)
        if isinstance(node, ast.Name):
            return self._name(node)
        raise self.fail(node, f"unsupported expression '{ast.unparse(node)}'")

    def _compare(self, node: ast.Compare) -> Expr:
        parts: list[Expr] = []
        left = self.convert(node.left)
        for op, comp in zip(node.ops, node.comparators, strict=True):
            if type(op) not in _CMPOPS:
                raise self.fail(node, f"unsupported comparison '{ast.unparse(node)}'")
            right = self.convert(comp)
            parts.append(Binary(_CMPOPS[type(op)], left, right))
            left = right
        out = parts[0]
        for p in parts[1:]:
            out = Binary("&&", out, p)
        return out

    def _call(self, node: ast.Call) -> Expr:
        func = node.func
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id in ("math", "np")
        ):
            fname = func.attr
        elif isinstance(func, ast.Name):
            fname = func.id
        else:
            raise self.fail(node, f"unsupported call '{ast.unparse(node)}'")
        if node.keywords:
            raise self.fail(node, "keyword arguments are not supported")
        args = tuple(self.convert(a) for a in node.args)
        cast_to = dt.parse_dtype(fname) if fname not in ("float", "double", "half") else None
        if cast_to is not None:
            if len(args) != 1:
                raise self.fail(node, f"a cast to {fname} takes one argument")
            return Cast(cast_to, args[0])
        fname = _ALIASES.get(fname, fname)
        if fname not in FUNCTIONS:
            raise self.fail(node, f"unknown function '{fname}'")
        return Call(fname, args)

    def _name(self, node: ast.Name) -> Expr:
        name = node.id
        if name in self.temps or name in self.ctx.constants:
            return Var(name)
        axes = self.ctx.field_axes(name)
        if axes == ():
            return Ref(name, ())
        if axes is not None:
            raise self.fail(node, f"field '{name}' is used without an index")
        if name in self.ctx.axes:
            raise self.fail(node, f"index '{name}' can only be used inside a field access")
        raise self.fail(node, f"undefined name '{name}'")

    def _subscript(self, node: ast.Subscript) -> Expr:
        if not isinstance(node.value, ast.Name):
            raise self.fail(node, f"unsupported access '{ast.unparse(node)}'")
        name = node.value.id
        axes = self.ctx.field_axes(name)
        if axes is None:
            raise self.fail(node, f"undefined field '{name}'")
        index = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        want = [self.ctx.axes[a] for a in axes]
        if len(index) != len(want):
            raise self.fail(
                node, f"field '{name}' spans [{', '.join(want)}] but is indexed with {len(index)} index(es)"
            )
        offsets = [self._index(ix, axis, name) for ix, axis in zip(index, want, strict=True)]
        return Ref(name, tuple(offsets))

    def _index(self, node: ast.expr, axis: str, field_name: str) -> int:
        if isinstance(node, ast.Name) and node.id == axis:
            return 0
        if (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.Add | ast.Sub)
            and isinstance(node.left, ast.Name)
            and node.left.id == axis
        ):
            k = _int_constant(node.right)
            if k is not None:
                return k if isinstance(node.op, ast.Add) else -k
        raise self.fail(node, f"index of '{field_name}' must be '{axis}', '{axis}+c' or '{axis}-c'")


def _int_constant(node: ast.expr) -> int | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        inner = _int_constant(node.operand)
        if inner is not None:
            return -inner if isinstance(node.op, ast.USub) else inner
    return None
