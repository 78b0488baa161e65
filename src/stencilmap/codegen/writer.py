"""A small indent-aware text writer for the emitters: ``line`` writes at the current depth, ``block``
opens ``{ … }`` around an indented body. Output ends with exactly one newline."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

#: Characters no generated line may hold: each line is one line, whatever the names in it.
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f\u0085\u2028\u2029]")


class Writer:
    """Lines at an indentation depth (``unit`` spaces per level)."""

    def __init__(self, unit: int = 4) -> None:
        self.unit = unit
        self.depth = 0
        self.lines: list[str] = []

    def line(self, text: str = "") -> None:
        if _CONTROL.search(text):  # a name that reached the text unescaped (see ``stencilmap.names``)
            raise ValueError(f"generated line holds a control character: {text!r}")
        self.lines.append(" " * (self.unit * self.depth) + text if text else "")

    def lines_of(self, text: str) -> None:
        """Several lines at the current depth (a multi-line string; its own indentation kept)."""
        for t in text.splitlines():
            self.line(t)

    def pragma(self, text: str) -> None:
        """A ``#pragma`` at the current depth (compilers accept indented pragmas)."""
        self.line(f"#pragma {text}")

    @contextmanager
    def indent(self) -> Iterator[None]:
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1

    @contextmanager
    def block(self, head: str, tail: str = "}") -> Iterator[None]:
        """``head {`` … ``}`` (``tail`` may add e.g. ``;``)."""
        self.line(f"{head} {{" if head else "{")
        with self.indent():
            yield
        self.line(tail)

    def text(self) -> str:
        out = "\n".join(self.lines).rstrip("\n")
        return out + "\n"
