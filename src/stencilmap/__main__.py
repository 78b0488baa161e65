"""``python -m stencilmap`` runs the CLI."""

from stencilmap.cli import main

main()
