"""Runs SMI's code generator (``codegen/main.py`` of the SMI checkout in ``$SMI_CODEGEN``) under networkx >= 3.5.

SMI was written against networkx 2.x, where ``shortest_path(G)`` (all pairs) returned a dict; since networkx
3.5 it returns an iterator, and SMI's ``route`` (``routing_table.closest_path_to_fpga``) indexes it. This
launcher gives it the dict again (``dict(...)`` of the same pairs: networkx's own documented equivalent) and
changes nothing else: ``python smi_codegen.py codegen-device|route|codegen-host ...`` as ``main.py``.
"""

from __future__ import annotations

import os
import runpy
import sys
from typing import Any

import networkx

_shortest_path = networkx.shortest_path


def _all_pairs_as_dict(*args: Any, **kwargs: Any) -> Any:
    paths = _shortest_path(*args, **kwargs)
    return paths if isinstance(paths, (dict, list)) else dict(paths)


if __name__ == "__main__":
    networkx.shortest_path = _all_pairs_as_dict
    codegen = os.environ["SMI_CODEGEN"]
    sys.path.insert(0, codegen)
    sys.argv[0] = os.path.join(codegen, "main.py")
    runpy.run_path(sys.argv[0], run_name="__main__")
