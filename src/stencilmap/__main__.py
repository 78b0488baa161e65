"""``python -m stencilmap`` runs the CLI."""

from stencilmap.entry import main

main()
