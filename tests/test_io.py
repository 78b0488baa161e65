"""``io.OutputSet``: the folders it makes for outputs go again when the outputs are discarded (a failed or
interrupted command leaves no empty ``--out``), stay when they are published, and a folder that was there
before is never removed."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from stencilmap.io import OutputSet, discard_pending


def test_discarded_outputs_take_back_the_folders_made_for_them(tmp_path: Path) -> None:
    with OutputSet() as out:
        out.add_arrays(tmp_path / "a" / "b", {"w": np.zeros(3)})
        out.add_text(tmp_path / "c" / "report.txt", "x")
        assert (tmp_path / "a" / "b").is_dir()
    assert sorted(tmp_path.iterdir()) == []


def test_published_outputs_keep_their_folders_and_others_stay(tmp_path: Path) -> None:
    (tmp_path / "there").mkdir()
    with OutputSet() as out:
        out.add_arrays(tmp_path / "there", {"w": np.zeros(3)})
    assert (tmp_path / "there").is_dir()  # it was there before: never removed
    with OutputSet() as out:
        out.add_arrays(tmp_path / "new" / "deep", {"w": np.zeros(3)})
        out.publish()
    assert (tmp_path / "new" / "deep" / "w.npy").is_file()


def test_an_interrupt_takes_back_the_folders_too(tmp_path: Path) -> None:
    out = OutputSet()
    out.add_arrays(tmp_path / "o", {"w": np.zeros(3)})
    discard_pending()  # what the interrupt handler runs
    assert not (tmp_path / "o").exists()
