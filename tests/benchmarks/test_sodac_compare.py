"""benchmarks/sodac_compare.py finds the kernels from the corpus root and refuses a folder without any."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from tests.benchmarks.scripts import load
from tests.conftest import CORPUS


def _module() -> ModuleType:
    return load("sodac_compare")


def test_the_corpus_root_or_its_soda_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    module = _module()
    if (CORPUS / "soda").is_dir():
        assert module.soda_folder(CORPUS) == CORPUS / "soda"
        assert module.soda_folder(CORPUS / "soda") == CORPUS / "soda"
    with pytest.raises(SystemExit) as info:
        module.soda_folder(tmp_path)
    assert info.value.code == 2 and "no .soda kernels" in capsys.readouterr().err
