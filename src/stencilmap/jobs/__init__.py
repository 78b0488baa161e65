"""The user-level jobs, each a short driver over the pipeline's stages that returns a result object:
``run``, ``analyze``, ``simulate``, ``codegen`` (``estimate``, ``roofline`` and ``explore`` are their stages'
own entry points, ``stencilmap.model`` and ``stencilmap.explore``). The command line (``stencilmap.cli``)
calls these; so can Python."""
