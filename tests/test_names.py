"""``stencilmap.names``: the one escaping module. Property tests over arbitrary text, and the C compiler's
own reading of the string literals ``c_string`` writes."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stencilmap.errors import StencilmapError
from stencilmap.names import bad_character, c_string, check_name, comment, dot_string, identifier

HOSTILE = [
    "x\\",
    "a*/ int pwned; /*",
    'q"); int pwned = 1; //',
    "t??/",
    "b`<script>alert(1)</script>`",
    "$(touch pwned)",
    "d%0A",
    "wärme",
    "é\u202eevil",
]


@given(st.text())
def test_a_comment_is_one_harmless_line(text: str) -> None:
    out = comment(text)
    assert not any(ch in out for ch in '\n\r\\`$&"{}\x00\x0b\x0c')
    assert "*/" not in out and "/*" not in out and "??" not in out
    assert all(ord(ch) >= 0x20 and ch != "\x7f" for ch in out)
    assert bad_character(out) is None


@given(st.text(), st.text())
def test_comments_of_different_texts_differ(a: str, b: str) -> None:
    if a != b:
        assert comment(a) != comment(b)


def test_comment_keeps_plain_names_and_letters() -> None:
    assert comment("jacobi2d_9pt.soda") == "jacobi2d_9pt.soda"
    assert comment("wärme") == "wärme"
    assert comment("x\\") == "x%5C"
    assert comment("a*/b") == "a*%2Fb"


@given(st.text())
def test_identifier_is_ascii_c(text: str) -> None:
    out = identifier(text)
    assert out.isascii() and (out[0].isalpha() or out[0] == "_")
    assert all(ch.isalnum() or ch == "_" for ch in out)


@given(st.text())
def test_dot_string_is_one_quoted_string(text: str) -> None:
    out = dot_string(text)
    body = out[1:-1]
    assert out[0] == out[-1] == '"'
    # every quote and backslash inside is escaped: removing escaped pairs leaves neither
    stripped = body.replace("\\\\", "").replace('\\"', "")
    assert '"' not in stripped and "\\" not in stripped


def test_check_name_refuses_control_and_format_characters() -> None:
    for bad in ["a\nb", "a\rb", "a\x00b", "a\x1bb", "a\u2028b", "a\u202eb", "a\u200db", "a\x85b"]:
        with pytest.raises(StencilmapError, match="control or format character U\\+"):
            check_name(bad, "program name")
    check_name("wärme (v2) $x `y`", "program name")


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not found")
def test_c_string_is_read_back_by_the_compiler(tmp_path: Path) -> None:
    """g++ compiles a program printing each ``c_string`` literal: the bytes come back exactly."""
    texts = [*HOSTILE, "\x01\x7f", "tab\there", "??=??/??'", "日本", "\\n"]
    body = "\n".join(f'    std::fputs("{c_string(t)}", stdout); std::fputc(0, stdout);' for t in texts)
    src = tmp_path / "p.cpp"
    src.write_text(f"#include <cstdio>\nint main() {{\n{body}\n    return 0;\n}}\n", encoding="utf-8")
    exe = tmp_path / "p"
    subprocess.run(["g++", "-std=c++11", "-trigraphs", str(src), "-o", str(exe)], check=True)
    out = subprocess.run([str(exe)], capture_output=True, check=True).stdout
    assert out.split(b"\0")[:-1] == [t.encode("utf-8") for t in texts]
