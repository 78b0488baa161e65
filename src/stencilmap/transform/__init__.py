"""Program → Program passes (ARCHITECTURE.md: transforms), one per file."""

from stencilmap.transform.fusion import Fusion, fuse, fuse_if

__all__ = ["Fusion", "fuse", "fuse_if"]
