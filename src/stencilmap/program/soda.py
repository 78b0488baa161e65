"""SODA DSL front end (``.soda`` text → Program IR); the printer (Program IR → ``.soda`` text, ``print_soda``)
is ``program.soda_print``, re-exported here.

SODA writes ``name(x, y, z)`` with the fastest dimension first; the IR is C order, so every offset list
is reversed here. ``t(0, 9) = e`` defines ``t`` at ``(x, y+9)`` from ``e`` at ``(x, y)``; the IR stores the
equivalent centred form ``t(x, y) = e(x, y−9)`` (the expression's offsets shifted by −lhs).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import lark

from stencilmap.errors import StencilmapError
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
from stencilmap.program.expr import shift as shift_expr
from stencilmap.program.ir import Hints, Input, Param, ParamPartition, Program, Stencil, Temp
from stencilmap.program.soda_grammar import GRAMMAR
from stencilmap.program.soda_print import format_expr as format_expr
from stencilmap.program.soda_print import print_soda as print_soda

_TERMINAL_NAMES = {
    "NAME": "a name",
    "INT": "an integer",
    "FLOAT": "a number",
    "BANKS": "a DRAM bank number",
    "STAR": "'*'",
    "SIGN": "'+' or '-'",
    "ADD_OP": "'+' or '-'",
    "MUL_OP": "'*', '/' or '%'",
    "UNARY_OP": "a unary operator",
    "EQ_OP": "'==' or '!='",
    "LOR_OP": "'||'",
    "LAND_OP": "'&&'",
    "BOR_OP": "'|'",
    "BXOR_OP": "'^'",
    "BAND_OP": "'&'",
    "REL_OP": "a comparison",
    "$END": "end of file",
}


@cache
def _parser() -> lark.Lark:
    """The grammar's LALR parser, built once per process and kept in the compile cache (``native.cache_dir``,
    ``parsers/soda-<key>.lark``, keyed by the grammar and the lark and Python versions): loading it takes
    ~10 ms where building it takes ~0.1 s. A cache that cannot be read or written is passed over."""
    import hashlib
    import os
    import sys
    import tempfile

    from stencilmap import native

    key = hashlib.sha256(f"{GRAMMAR}\0{lark.__version__}\0{sys.version}".encode()).hexdigest()[:24]
    try:
        path = native.cache_dir("parsers") / f"soda-{key}.lark"
    except StencilmapError:  # an unusable cache: build every time
        return _build_parser()
    try:
        with path.open("rb") as f:
            return lark.Lark.load(f)
    except Exception:  # missing, or not a parser this build wrote: build it again
        pass
    parser = _build_parser()
    try:  # written beside, then renamed: a concurrent run reads a whole file or none
        fd, tmp = tempfile.mkstemp(prefix=".soda-", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                parser.save(f)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError:
        pass
    return parser


def _build_parser() -> lark.Lark:
    return lark.Lark(GRAMMAR, parser="lalr", propagate_positions=True, maybe_placeholders=True)


def load_soda(path: str | Path) -> Program:
    """Parse a ``.soda`` file."""
    from stencilmap.io import read_user_text

    p = Path(path)
    text = read_user_text(p, str(p), 4 * 2**20, "a program")  # as program.load.MAX_PROGRAM_BYTES
    return parse_soda(text, str(p))


def parse_soda(text: str, filename: str = "<string>") -> Program:
    """Parse SODA DSL text into a Program (not yet verified)."""
    try:
        tree = _parser().parse(text)
    except lark.exceptions.UnexpectedInput as exc:
        raise StencilmapError(_syntax_message(exc, text), f"{filename}:{exc.line}:{exc.column}") from None
    _check_limits(tree, filename)
    return _Builder(filename).build(tree)


#: Longest integer literal (digits and prefix; 2^64 has 20 decimal digits, 66 with the 0b prefix).
MAX_INT_CHARS = 70


def _check_int_token(token: lark.Token, filename: str) -> None:
    where = f"{filename}:{token.line}:{token.column}"
    if len(token) > MAX_INT_CHARS:
        raise StencilmapError(f"integer literal of {len(token):,} characters is too large", where)
    try:
        value = _int_value(str(token))
    except ValueError:
        raise StencilmapError(f"invalid integer literal '{token}' (a leading 0 means octal)", where) from None
    if value >= 2**64:
        raise StencilmapError(f"integer literal '{token}' does not fit in 64 bits", where)


#: Largest DRAM bank number.
MAX_BANK = 1023
#: Most copies a param's ``dup`` may ask for (SODA duplicates the on-chip array for more read ports).
MAX_PARAM_DUP = 1024


def _check_banks_token(token: lark.Token, filename: str) -> None:
    parts = str(token).split(".")
    if any(len(b) > 4 or int(b) > MAX_BANK for b in parts):
        raise StencilmapError(
            f"DRAM bank numbers go up to {MAX_BANK}", f"{filename}:{token.line}:{token.column}"
        )


def _check_limits(tree: lark.Tree[Any], filename: str) -> None:
    """Refuse expressions nested deeper than ``MAX_DEPTH`` before walking them recursively, and integer
    literals too long to be any C integer."""
    stack: list[tuple[lark.Tree[Any], int]] = [(tree, 0)]
    while stack:
        node, level = stack.pop()
        if level > MAX_DEPTH + 2:  # start → statement → expression
            where = f"{filename}:{node.meta.line}:{node.meta.column}" if not node.meta.empty else filename
            raise StencilmapError(f"expression nested more than {MAX_DEPTH:,} levels deep", where)
        for c in node.children:
            if isinstance(c, lark.Tree):
                stack.append((c, level + 1))
            elif isinstance(c, lark.Token) and c.type == "INT":
                _check_int_token(c, filename)
            elif isinstance(c, lark.Token) and c.type == "BANKS":
                _check_banks_token(c, filename)


def _describe(terminal: str) -> str:
    if terminal in _TERMINAL_NAMES:
        return _TERMINAL_NAMES[terminal]
    for t in _parser().terminals:
        if t.name == terminal:
            pattern = t.pattern
            if isinstance(pattern, lark.lexer.PatternStr):
                return f"'{pattern.value}'"
    return terminal.lower()


def _syntax_message(exc: lark.exceptions.UnexpectedInput, text: str) -> str:
    if isinstance(exc, lark.exceptions.UnexpectedToken):
        got = "end of file" if exc.token.type == "$END" else f"'{exc.token}'"
        expected = sorted({_describe(t) for t in exc.expected})
    elif isinstance(exc, lark.exceptions.UnexpectedCharacters):
        got = f"character {text[exc.pos_in_stream or 0]!r}"
        expected = sorted({_describe(t) for t in exc.allowed})
    else:
        got, expected = "end of input", []
    want = ", ".join(expected[:8]) + (", ..." if len(expected) > 8 else "")
    return f"syntax error: unexpected {got}" + (f"; expected {want}" if want else "")


@dataclass
class _Builder:
    """Walks the parse tree once, collecting statements into a Program."""

    filename: str
    header: dict[str, Any] = field(default_factory=dict)
    inputs: list[Input] = field(default_factory=list)
    params: list[Param] = field(default_factory=list)
    stencils: list[Stencil] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    tiles: list[tuple[tuple[int, ...] | None, str]] = field(default_factory=list)
    names: dict[str, str] = field(default_factory=dict)  # scalars in scope: lets of the current statement
    lhs_ranks: list[tuple[int, str, str]] = field(default_factory=list)  # (offsets, stencil, where)
    feedback_loc: str | None = None
    header_locs: dict[str, str] = field(default_factory=dict)  # header key → file:line:col

    def loc(self, node: lark.Tree[Any] | lark.Token) -> str:
        meta = node if isinstance(node, lark.Token) else node.meta
        return f"{self.filename}:{meta.line}:{meta.column}"

    def fail(self, message: str, node: lark.Tree[Any] | lark.Token) -> StencilmapError:
        return StencilmapError(message, self.loc(node))

    def build(self, tree: lark.Tree[Any]) -> Program:
        for stmt in tree.children:
            assert isinstance(stmt, lark.Tree)
            getattr(self, f"_{stmt.data}")(stmt)
        if "kernel" not in self.header:
            raise StencilmapError("missing 'kernel:' statement", f"{self.filename}:1:1")
        if not self.inputs:
            raise StencilmapError("a SODA program needs at least one input", f"{self.filename}:1:1")
        if not self.outputs:
            raise StencilmapError("a SODA program needs at least one output", f"{self.filename}:1:1")
        tile = self._tile()
        rank = len(tile) + 1
        for n, name, where in self.lhs_ranks:
            if n != rank:
                raise StencilmapError(
                    f"'{name}' is defined with {n} offset(s); the program has {rank} dimensions", where
                )
        inputs = tuple(Input(i.name, i.dtype, tuple(range(rank)), None, i.banks, i.loc) for i in self.inputs)
        hints = Hints(
            unroll=self.header.get("unroll", 1),
            burst_width=self.header.get("burst_width"),
            tile=tile,
            cluster=self.header.get("cluster", "none"),
        )
        return Program(
            name=self.header["kernel"],
            format="soda",
            semantics="c",
            shape=(None, *tile),
            inputs=inputs,
            stencils=tuple(self.stencils),
            outputs=tuple(self.outputs),
            params=tuple(self.params),
            iterate=self.header.get("iterate", 1),
            feedback=self.header.get("feedback", ()),
            feedback_loc=self.feedback_loc,
            border=self.header.get("border", "ignore"),
            hints=hints,
            path=self.filename,
            locs=tuple(self.header_locs.items()) + self._shape_loc(),
        )

    def _shape_loc(self) -> tuple[tuple[str, str], ...]:
        """Where the rank is fixed: the first input with tile sizes."""
        return next(((("shape", loc),) for t, loc in self.tiles if t is not None), ())

    def _tile(self) -> tuple[int, ...]:
        given = [(t, loc) for t, loc in self.tiles if t is not None]
        if not given:
            return ()
        first, _ = given[0]
        for t, loc in given[1:]:
            if t != first:
                raise StencilmapError(f"tile size {list(t)} does not match the earlier {list(first)}", loc)
        return first

    # ------------------------------------------------------------------------------------------ header

    def _set(self, key: str, value: Any, node: lark.Tree[Any]) -> None:
        if key in self.header:
            raise self.fail(f"'{key.replace('_', ' ')}' is given twice", node)
        self.header[key] = value
        self.header_locs[key] = self.loc(node)

    def _positive(self, node: lark.Tree[Any]) -> int:
        value = _int_value(str(node.children[0]))
        if value < 1:
            raise self.fail(f"expected a positive integer, got {value}", node)
        return value

    def _kernel(self, node: lark.Tree[Any]) -> None:
        self._set("kernel", str(node.children[0]), node)

    def _burst_width(self, node: lark.Tree[Any]) -> None:
        self._set("burst_width", self._positive(node), node)

    def _unroll(self, node: lark.Tree[Any]) -> None:
        self._set("unroll", self._positive(node), node)

    def _iterate(self, node: lark.Tree[Any]) -> None:
        self._set("iterate", self._positive(node), node)

    def _feedback(self, node: lark.Tree[Any]) -> None:
        """``feedback: ez -> Ez, hx -> Hx``: the output that becomes each input at the next step."""
        pairs = tuple((str(f.children[0]), str(f.children[1])) for f in node.children)
        self._set("feedback", pairs, node)
        self.feedback_loc = self.loc(node)

    def _border(self, node: lark.Tree[Any]) -> None:
        value = str(node.children[0])
        if value not in ("ignore", "preserve"):
            raise self.fail(f"border must be 'ignore' or 'preserve', got '{value}'", node)
        self._set("border", value, node)

    def _cluster(self, node: lark.Tree[Any]) -> None:
        value = str(node.children[0])
        if value not in ("none", "fine", "coarse", "full"):
            raise self.fail(f"cluster must be none, fine, coarse or full, got '{value}'", node)
        self._set("cluster", value, node)

    # -------------------------------------------------------------------------------------- statements

    def _dtype(self, token: lark.Token) -> str:
        t = dt.parse_dtype(str(token))
        if t is None or t == "bool":
            raise self.fail(f"unknown type '{token}'", token)
        return t

    def _banks(self, node: lark.Tree[Any] | None) -> tuple[int, ...]:
        if node is None:
            return ()
        banks: list[int] = []
        for tok in node.children:
            if not isinstance(tok, lark.Token) or tok.type != "BANKS":
                continue  # the '|' between bank groups
            banks.extend(int(b) for b in str(tok).split("."))
        return tuple(banks)

    def _input_stmt(self, node: lark.Tree[Any]) -> None:
        dram, type_tok, name_tok, tile = node.children
        assert isinstance(type_tok, lark.Token)
        tile_sizes: tuple[int, ...] | None = None
        if tile is not None:
            ints = [
                _int_value(str(t)) for t in tile.children if isinstance(t, lark.Token) and t.type == "INT"
            ]
            if any(n < 1 for n in ints):
                raise self.fail("tile sizes must be positive", tile)
            tile_sizes = tuple(reversed(ints))
        self.tiles.append((tile_sizes, self.loc(node)))
        self.inputs.append(
            Input(str(name_tok), self._dtype(type_tok), (), None, self._banks(dram), self.loc(node))
        )

    def _param_stmt(self, node: lark.Tree[Any]) -> None:
        dram, type_tok, *rest = node.children
        assert isinstance(type_tok, lark.Token)
        tokens = [c for c in rest if isinstance(c, lark.Token)]
        name, sizes = tokens[0], [_int_value(str(t)) for t in tokens[1:]]
        dup, partitions = self._param_attrs([c for c in rest if isinstance(c, lark.Tree)], sizes)
        self.params.append(
            Param(
                str(name),
                self._dtype(type_tok),
                tuple(sizes),
                self._banks(dram),
                dup=dup,
                partitions=partitions,
                loc=self.loc(node),
            )
        )

    def _param_attrs(
        self, attrs: list[lark.Tree[Any]], sizes: list[int]
    ) -> tuple[int, tuple[ParamPartition, ...]]:
        """A param's ``dup N`` and ``partition complete [dim=D]`` / ``partition cyclic factor=F [dim=D]``
        attributes, as the SODA compiler's grammar defines them; D counts the sizes from 1 (HLS)."""
        dup: int | None = None
        partitions: list[ParamPartition] = []
        for attr in attrs:
            if attr.data == "param_dup":
                if dup is not None:
                    raise self.fail("'dup' is given twice", attr)
                dup = _int_value(str(attr.children[0]))
                if not 1 <= dup <= MAX_PARAM_DUP:
                    raise self.fail(f"'dup' must be between 1 and {MAX_PARAM_DUP}, got {dup}", attr)
                continue
            strategy_tok, factor_tok, dim_tok = attr.children
            strategy = str(strategy_tok)
            factor = None if factor_tok is None else _int_value(str(factor_tok))
            dim = None if dim_tok is None else _int_value(str(dim_tok))
            if strategy not in ("complete", "cyclic"):
                raise self.fail(f"a param is partitioned 'complete' or 'cyclic', not '{strategy}'", attr)
            if dim is not None and not 1 <= dim <= len(sizes):
                raise self.fail(f"'dim={dim}' is not one of the param's {len(sizes)} dimension(s)", attr)
            if strategy == "complete" and factor is not None:
                raise self.fail("'factor' applies to 'cyclic' partitioning, not 'complete'", attr)
            if strategy == "cyclic":
                if factor is None:
                    raise self.fail("'partition cyclic' needs 'factor=N'", attr)
                size = min(sizes[dim - 1 : dim] if dim else sizes, default=1)
                if not 1 <= factor <= size:
                    raise self.fail(
                        f"'factor={factor}' must be between 1 and the size partitioned, {size}", attr
                    )
            if any(p.dim is None or dim is None or p.dim == dim for p in partitions):
                raise self.fail("a param's dimension is partitioned twice", attr)
            partitions.append(ParamPartition(strategy, factor, dim))
        return dup or 1, tuple(partitions)

    def _local_stmt(self, node: lark.Tree[Any]) -> None:
        self._stencil(node, None, node.children)

    def _output_stmt(self, node: lark.Tree[Any]) -> None:
        dram, *rest = node.children
        self._stencil(node, dram, rest)
        self.outputs.append(self.stencils[-1].name)

    def _stencil(self, node: lark.Tree[Any], dram: lark.Tree[Any] | None, parts: list[Any]) -> None:
        type_tok, *lets, lhs, expr_node = parts
        self.names = {p.name: p.dtype for p in self.params}
        temps: list[Temp] = []
        for let in lets:
            let_type, let_name, let_expr = let.children
            ttype = self._dtype(let_type) if let_type is not None else None
            temps.append(Temp(str(let_name), ttype, self._expr(let_expr)))
            self.names[str(let_name)] = ttype or "?"
        name = str(lhs.children[0])
        offset = tuple(reversed([_signed(c) for c in lhs.children[1:]]))
        expr = self._expr(expr_node)
        self.lhs_ranks.append((len(offset), name, self.loc(lhs)))
        if any(offset):
            self._check_ranks(name, offset, [expr, *(t.expr for t in temps)], lhs)
            # SODA: t(o) = e(0) means t(x) = e(x − o): shift every field access by −o
            delta = {f: tuple(-o for o in offset) for f in self._fields_read(expr, temps)}
            expr = shift_expr(expr, delta)
            temps = [Temp(t.name, t.dtype, shift_expr(t.expr, delta)) for t in temps]
        self.stencils.append(
            Stencil(
                name=name,
                dtype=self._dtype(type_tok),
                expr=expr,
                temps=tuple(temps),
                banks=self._banks(dram),
                loc=self.loc(node),
            )
        )

    def _check_ranks(
        self, name: str, offset: tuple[int, ...], exprs: list[Expr], lhs: lark.Tree[Any]
    ) -> None:
        from stencilmap.program.expr import refs

        for e in exprs:
            for r in refs(e):
                if len(r.offset) != len(offset):
                    raise self.fail(
                        f"'{name}' is defined with {len(offset)} offset(s) but reads '{r.field}' with "
                        f"{len(r.offset)}",
                        lhs,
                    )

    @staticmethod
    def _fields_read(expr: Expr, temps: list[Temp]) -> set[str]:
        from stencilmap.program.expr import refs

        names = {r.field for r in refs(expr)}
        for t in temps:
            names.update(r.field for r in refs(t.expr))
        return names

    # ------------------------------------------------------------------------------------- expressions

    def _expr(self, node: lark.Tree[Any] | lark.Token) -> Expr:
        if isinstance(node, lark.Token):
            raise self.fail(f"unexpected token '{node}'", node)
        kind = node.data
        ch = node.children
        if kind == "binary":
            lhs, op, rhs = ch
            return Binary(str(op), self._expr(lhs), self._expr(rhs))
        if kind == "unary":
            return Unary(str(ch[0]), self._expr(ch[1]))
        if kind == "float_lit":
            return _float_literal(str(ch[0]))
        if kind == "int_lit":
            return _int_literal(str(ch[0]))
        if kind == "var":
            return Var(str(ch[0]), tuple(_int_value(str(i)) for i in ch[1:]))
        if kind == "apply":
            return self._apply(node)
        raise self.fail(f"unexpected construct '{kind}'", node)

    def _apply(self, node: lark.Tree[Any]) -> Expr:
        name_tok, *arg_nodes = node.children
        name = str(name_tok)
        type_ = dt.parse_dtype(name)
        if type_ is not None and type_ != "bool":
            if len(arg_nodes) != 1:
                raise self.fail(f"a cast to {name} takes one argument", node)
            return Cast(type_, self._expr(arg_nodes[0]))
        if name == "select":
            if len(arg_nodes) != 3:
                raise self.fail("select takes 3 arguments (condition, then, else)", node)
            c, a, b = (self._expr(x) for x in arg_nodes)
            return Select(c, a, b)
        if name in FUNCTIONS:
            return Call(name, tuple(self._expr(a) for a in arg_nodes))
        offsets = [self._offset(a) for a in arg_nodes]
        return Ref(name, tuple(reversed(offsets)))

    def _offset(self, node: lark.Tree[Any]) -> int:
        if isinstance(node, lark.Tree) and node.data == "int_lit":
            return _int_value(str(node.children[0]))
        if isinstance(node, lark.Tree) and node.data == "unary" and str(node.children[0]) in "+-":
            sign = -1 if str(node.children[0]) == "-" else 1
            return sign * self._offset(node.children[1])
        raise self.fail("field offsets must be integer constants", node)


def _signed(node: lark.Tree[Any]) -> int:
    sign_tok, int_tok = node.children
    value = _int_value(str(int_tok))
    return -value if sign_tok is not None and str(sign_tok) == "-" else value


def _split_suffix(text: str, letters: str) -> tuple[str, str]:
    end = len(text)
    while end > 0 and text[end - 1] in letters:
        end -= 1
    return text[:end], text[end:]


def _int_value(text: str) -> int:
    body, _ = _split_suffix(text, "uUlL")
    if body[:2] in ("0x", "0X"):
        return int(body, 16)
    if body[:2] in ("0b", "0B"):
        return int(body, 2)
    if len(body) > 1 and body[0] == "0":
        return int(body, 8)
    return int(body)


def _int_literal(text: str) -> Const:
    body, suffix = _split_suffix(text, "uUlL")
    value = _int_value(text)
    decimal = not (len(body) > 1 and body[0] == "0")
    return Const(value, dt.c_literal_int_type(value, suffix, decimal))


def _float_literal(text: str) -> Const:
    body, suffix = _split_suffix(text, "fFlL")
    return Const(float(body), "float32" if suffix in ("f", "F") else "float64")
