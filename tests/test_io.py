"""``io.OutputSet``: the folders it makes for outputs go again when the outputs are discarded (a failed or
interrupted command leaves no empty ``--out``), stay when they are published, and a folder that was there
before is never removed. ``io.parse_user_json``: a key given twice, NaN and Infinity are refused at their path."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from stencilmap.io import JsonPathError, OutputSet, discard_pending, parse_user_json


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


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ('{"a": 1, "a": 2}', "a"),
        ('{"x": {"b": [1, {"c": 0, "c": 1}]}}', "x.b[1].c"),
        ('[{"k\\u00e9": 1, "k\\u00e9": 1}]', "[0].k\\xe9"),
    ],
)
def test_a_repeated_json_key_is_refused_at_its_path(text: str, path: str) -> None:
    with pytest.raises(JsonPathError) as info:
        parse_user_json(text)
    assert info.value.path == path and str(info.value).endswith("is given twice in one object")


def test_user_json_refuses_nan_at_its_path_and_reads_the_rest_as_json_does() -> None:
    with pytest.raises(JsonPathError, match="NaN is not a number JSON allows") as info:
        parse_user_json('{"a": [1, NaN]}')
    assert info.value.path == "a[1]"
    with pytest.raises(JsonPathError, match="-Infinity is not") as info:
        parse_user_json("-Infinity")
    assert info.value.path == "(top level)"
    assert parse_user_json('{"a": [1, 2.5, "s", null], "b": {"c": true}}') == {
        "a": [1, 2.5, "s", None],
        "b": {"c": True},
    }
