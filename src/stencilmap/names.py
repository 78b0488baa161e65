"""Names that reach generated text: the one place they are checked and escaped.

A program's name is its file's stem, a device's name and part come from a device file: both are data an
archive or a checkout hands the user, and both end up in generated C++, OpenCL, Makefiles, scripts, DOT
and reports. Every such value goes through one of these functions, so no name can end a comment, close
a string or start a line of its own:

* ``check_name`` refuses control characters (line breaks included), format characters (bidirectional
  overrides) and separators at the front door: a name is one line of visible text;
* ``identifier`` maps a name to an ASCII C identifier (``[A-Za-z_][A-Za-z0-9_]*``);
* ``comment`` makes any text safe inside a line comment of C, C++, OpenCL, Make, Tcl, shell or CMake and in
  a Markdown code span: characters outside a small visible set are percent-encoded (``%0A``, ``%5C``,
  ``%60``), so no newline, backslash (a comment's line continuation), backtick, quote, ``$`` or ``*/``
  survives (``<`` and ``>`` stay: HTML needs its own escaping, outside a code span);
* ``c_string`` is the body of a C/C++/OpenCL string literal (``"`` ``\\`` ``?`` and every non-printable or
  non-ASCII byte as an octal escape);
* ``dot_string`` is a Graphviz double-quoted string.
"""

from __future__ import annotations

import re
import unicodedata

from stencilmap.errors import Location, StencilmapError

#: Unicode categories a name must not contain: controls, format characters (bidi overrides, zero-width
#: joiners), line and paragraph separators, surrogates, private use, unassigned.
_REFUSED = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"})
#: The ASCII a comment keeps as it is; everything else outside letters and digits is percent-encoded.
_COMMENT_ASCII = frozenset(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789 _-.,:;=+()[]<>'!@#^|~/*"
)
_C_STRING_ASCII = frozenset(chr(c) for c in range(0x20, 0x7F)) - {'"', "\\", "?"}


def bad_character(name: str) -> str | None:
    """The first character of ``name`` that no name may hold, shown as ``U+XXXX``; None if it is fine."""
    for ch in name:
        if unicodedata.category(ch) in _REFUSED:
            return f"U+{ord(ch):04X}"
    return None


def visible(text: str) -> str:
    """``text`` on one line with every control, format or separator character written as ``\\xHH`` /
    ``\\uHHHH``: what an error line may print of a name (a file named with a terminal escape must not
    re-title or recolour the user's terminal)."""
    text = " ".join(text.split())
    return "".join(ascii(ch)[1:-1] if unicodedata.category(ch) in _REFUSED else ch for ch in text)


def path_argument(path: str) -> str:
    """A relative path as a command line's argument: ``./`` before one that starts with ``-`` (a program
    ``-o.json`` would read as an option in a reproduce command)."""
    return f"./{path}" if path.startswith("-") else path


def check_name(name: str, what: str, where: str | Location | None = None) -> None:
    """Refuse a name holding a control, format or separator character (one line naming it)."""
    bad = bad_character(name)
    if bad is not None:
        raise StencilmapError(f"{what} {name!a} holds the control or format character {bad}", where)


def identifier(name: str) -> str:
    """An ASCII C identifier for a name: ``stage0.b.in.c1.tap[-5]`` → ``stage0_b_in_c1_tap_m5``."""
    text = name.replace("-", "m").replace("@", "_at_")
    text = re.sub(r"[^A-Za-z0-9_]+", "_", text).strip("_")
    return text if text and not text[0].isdigit() else f"m_{text}"


def _keeps(ch: str) -> bool:
    if ch in _COMMENT_ASCII:
        return True
    return ord(ch) > 0x7F and unicodedata.category(ch)[0] in "LN"


def comment(text: str) -> str:
    """``text`` safe inside a line comment of any generated language and in Markdown prose."""
    out = "".join(ch if _keeps(ch) else "".join(f"%{b:02X}" for b in ch.encode("utf-8")) for ch in text)
    return out.replace("*/", "*%2F").replace("/*", "/%2A")


def c_string(text: str) -> str:
    """The body of a C string literal spelling ``text`` (UTF-8 bytes outside printable ASCII as octal)."""
    return "".join(
        ch if ch in _C_STRING_ASCII else "".join(f"\\{b:03o}" for b in ch.encode("utf-8")) for ch in text
    )


def dot_string(text: str, line_breaks: bool = False) -> str:
    """A Graphviz ``"…"`` string for ``text``; with ``line_breaks`` each ``\\n`` in it is a DOT line break."""
    parts = text.split("\n") if line_breaks else [text]
    body = "\\n".join(p.replace("\\", "\\\\").replace('"', '\\"') for p in parts)
    return f'"{body}"'
