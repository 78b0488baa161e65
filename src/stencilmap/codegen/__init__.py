"""Code generation: one emitter per target behind a registry (``registry``), each taking a Design IR.

Targets: ``hls`` (Vitis HLS C++ dataflow kernels, ``hls``) and ``opencl`` (Intel FPGA OpenCL,
``opencl``). ``verify`` runs generated code here: HLS C++ as a g++ C simulation, OpenCL on PoCL.
"""

from stencilmap.codegen.registry import Generated, Port, emit, target, targets

__all__ = ["Generated", "Port", "emit", "target", "targets"]
