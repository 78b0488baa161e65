"""benchmarks/sodac_compare.py finds the kernels from the corpus root and refuses a folder without any."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from tests.conftest import CORPUS, ROOT

SCRIPT = ROOT / "benchmarks" / "sodac_compare.py"


def _module():  # type: ignore[no-untyped-def]
    sys.path.insert(0, str(SCRIPT.parent))
    spec = importlib.util.spec_from_file_location("sodac_compare_under_test", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_corpus_root_or_its_soda_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    module = _module()
    if (CORPUS / "soda").is_dir():
        assert module.soda_folder(CORPUS) == CORPUS / "soda"
        assert module.soda_folder(CORPUS / "soda") == CORPUS / "soda"
    with pytest.raises(SystemExit) as info:
        module.soda_folder(tmp_path)
    assert info.value.code == 2 and "no .soda kernels" in capsys.readouterr().err
