"""The ``stencilmap`` executable: answers SIGINT and SIGTERM from the very start (while the package and
its libraries load, nothing is written yet: exit at once, one line), then runs the command line, whose group
replaces these handlers by its own (``cli.common``; keeping them until then leaves no moment where a signal
would find Python's defaults)."""

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
    for s in (signal.SIGINT, signal.SIGTERM):
        signal.signal(s, _early_exit)
    from stencilmap.cli import main as cli

    cli()
