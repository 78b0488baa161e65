"""Stand-in for SMI's clang source rewriter (spcl/SMI ``source-rewriter``), for the SMI calls stencilmap emits.

Called as SMI's ``codegen/rewrite.py`` calls the real one: ``rewriter FILE [-extra-arg=-I<dir>]...``. For every
``SMI_Channel chan = SMI_Open_{send,receive}_channel(count, SMI_<TYPE>, rank, port, comm)`` it prints the JSON
line the real one prints (``ChannelExtractor::OutputMetadata``: type push/pop, port, data type, no buffer
size, no args) and, like it, rewrites FILE in place: the open call and the ``SMI_Push`` / ``SMI_Pop`` calls on
that channel get their port- and type-specialised names (``renamePortDataType``: ``<call>_<port>_<type>``).
The real one reads the arguments from clang's AST (integer literals, enum constants); this one reads the
literal text, which is all stencilmap writes. It fails (exit 1) on an SMI call it cannot resolve.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

#: SMI_Datatype's values (include/smi/data_types.h) as the rewriter's formatDataType names them.
TYPES = {
    "SMI_INT": "int",
    "SMI_FLOAT": "float",
    "SMI_DOUBLE": "double",
    "SMI_CHAR": "char",
    "SMI_SHORT": "short",
}
OPEN = re.compile(
    r"SMI_Channel\s+(\w+)\s*=\s*SMI_Open_(send|receive)_channel\(\s*(\d+)\s*,\s*(SMI_\w+)\s*,\s*(\d+)\s*,"
    r"\s*(\d+)\s*,\s*(\w+)\s*\)"
)
CALL = re.compile(r"\bSMI_(Push|Pop|Open_send_channel|Open_receive_channel)\b(?!_)")


def rewrite(text: str) -> tuple[str, list[dict[str, object]]]:
    ops: list[dict[str, object]] = []
    out: list[str] = []
    for kernel in re.split(r"(?=__kernel\b)", text):
        opened = OPEN.search(kernel)
        if opened is None:
            if CALL.search(re.sub(r"//[^\n]*", "", kernel)):  # the real one reads the AST, not comments
                raise SystemExit(f"rewriter stand-in: an SMI call without a channel it can read:\n{kernel}")
            out.append(kernel)
            continue
        if len(OPEN.findall(kernel)) != 1:
            raise SystemExit("rewriter stand-in: more than one SMI channel in one kernel")
        chan, role, _count, dtype, _rank, port, _comm = opened.groups()
        if dtype not in TYPES:
            raise SystemExit(f"rewriter stand-in: unknown SMI data type {dtype}")
        suffix = f"_{port}_{TYPES[dtype]}"
        kind = "push" if role == "send" else "pop"
        ops.append(
            {"type": kind, "port": int(port), "data_type": TYPES[dtype], "buffer_size": None, "args": {}}
        )
        for call in re.findall(r"\bSMI_(?:Push|Pop)\(\s*&?(\w+)", kernel):
            if call != chan:
                raise SystemExit(f"rewriter stand-in: SMI call on {call}, not on the channel {chan}")
        if ("SMI_Pop(" if kind == "push" else "SMI_Push(") in kernel:
            raise SystemExit(f"rewriter stand-in: a {role} channel used the other way")
        out.append(CALL.sub(lambda m, s=suffix: f"SMI_{m.group(1)}{s}", kernel))
    return "".join(out), ops


def main(argv: list[str]) -> int:
    path = Path(argv[1])
    text, ops = rewrite(path.read_text())
    path.write_text(text)
    for op in ops:
        print(json.dumps(op))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
