"""Printing a benchmark's rows: aligned columns, or the README's Markdown table."""

from __future__ import annotations

from collections.abc import Sequence


def print_table(columns: Sequence[str], rows: Sequence[Sequence[str]], markdown: bool) -> None:
    if markdown:
        print("| " + " | ".join(columns) + " |")
        print("|" + "---|" * len(columns))
        for row in rows:
            print("| " + " | ".join(row) + " |")
        return
    widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(columns)]
    for row in (columns, *rows):
        print("  ".join(cell.rjust(w) for cell, w in zip(row, widths, strict=True)))
