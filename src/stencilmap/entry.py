"""The ``stencilmap`` executable: answers SIGINT and SIGTERM from the very start (while the package and
its libraries load, nothing is written yet: exit at once, one line), then runs the command line."""

from __future__ import annotations

import os
import signal
import sys
from types import FrameType


def _early_exit(signum: int, _frame: FrameType | None) -> None:
    sys.stderr.write(f"error: interrupted ({signal.Signals(signum).name})\n")
    sys.stderr.flush()
    os._exit(128 + signum)


def main() -> None:
    """Entry point of the ``stencilmap`` script and of ``python -m stencilmap``."""
    previous = {s: signal.signal(s, _early_exit) for s in (signal.SIGINT, signal.SIGTERM)}
    from stencilmap.cli import main as cli

    for s, handler in previous.items():
        signal.signal(s, handler)
    cli()
