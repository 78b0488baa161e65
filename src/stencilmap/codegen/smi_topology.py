"""The topology file SMI's code generator reads for a design split over devices (StencilFlow §VI-B).

SMI (spcl/SMI, ``codegen/main.py route`` / ``codegen-device``; ``serialization.parse_routing_file``)
takes one JSON object: ``fpgas`` maps every FPGA (``"<node>:<fpga>"``) to the name of the program it
runs — the basename of that program's kernel file, and of the metadata ``codegen-device`` writes for it
— and ``connections`` maps a QSFP channel (``"<node>:<fpga>:ch<k>"``, k < 4) to the one it is cabled to.
SMI numbers the ranks by sorting the FPGA keys, so device d is ``fpga-<d, 4 digits>:acl0`` and gets rank d.

The cabling is StencilFlow's (§VII): the devices form a chain "with two 40 Gbit/s links between each
consecutive device" — device d's ch0 and ch1 go to device d+1's ch2 and ch3. SMI routes a stream
between devices that are not neighbours through the ones between (its CKS/CKR kernels forward it).
A board room cabled otherwise edits ``connections``; the programs and ranks stay.
"""

from __future__ import annotations

import json


def program_names(top: str, devices: int) -> tuple[str, ...]:
    """Device d's SMI program: ``<top>_rank<d>`` (its kernel file ``<top>_rank<d>.cl``, its
    ``SmiInit_<top>_rank<d>``, its CMake targets), as SMI's own MPMD examples name theirs."""
    return tuple(f"{top}_rank{d}" for d in range(devices))


def fpga(device: int) -> str:
    """The FPGA key of ``device`` (one FPGA per node; the sorted keys give rank = device)."""
    return f"fpga-{device:04d}:acl0"


def topology(programs: tuple[str, ...]) -> str:
    """The topology JSON of a chain of ``len(programs)`` devices, device d running ``programs[d]``."""
    connections: dict[str, str] = {}
    for d in range(len(programs) - 1):
        for out, into in ((0, 2), (1, 3)):  # two links between consecutive devices (§VII)
            connections[f"{fpga(d)}:ch{out}"] = f"{fpga(d + 1)}:ch{into}"
    fpgas = {fpga(d): name for d, name in enumerate(programs)}
    return json.dumps({"fpgas": fpgas, "connections": connections}, indent=2) + "\n"
