"""Shared fixtures: where the repository, its examples and the compatibility corpus are."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
CORPUS = ROOT.parent / "shared" / "corpus"

EXAMPLE_FILES = sorted(p for p in EXAMPLES.iterdir() if p.suffix in (".soda", ".json"))
CORPUS_SODA = sorted((CORPUS / "soda").glob("*.soda")) if CORPUS.is_dir() else []
CORPUS_STENCILFLOW = sorted((CORPUS / "stencilflow").glob("*.json")) if CORPUS.is_dir() else []

#: Corpus programs whose data files were never published (they must fail at run time, clearly).
UNPUBLISHED_DATA = {
    "delay_buffer_e0.json",
    "horidiff_min.json",
    "horidiff_min_ext.json",
    "solver_example.json",
    "tridiagonal_solve.json",
    "various_dim_input.json",
}


def corpus_or_skip(paths: list[Path]) -> list[Path]:
    return paths if paths else [pytest.param(None, marks=pytest.mark.skip(reason="../shared/corpus absent"))]  # type: ignore[list-item]


def special_files(folder: Path) -> list[Path]:
    """Paths a reader must refuse without reading them: a FIFO made in ``folder`` (reading it would block),
    ``/dev/zero`` (endless) where it exists, and the folder itself."""
    fifo = folder / "fifo.txt"
    os.mkfifo(fifo)
    return [p for p in (fifo, Path("/dev/zero"), folder) if p.exists()]
