"""2-D 5-point Jacobi relaxation, four sweeps chained on chip: examples/jacobi2d.soda written in Python.

stencilmap reads this file with Python's ``ast`` and never runs it. A function is a stencil: its name is
the field it defines, its parameters the fields it reads, ``v[-1, 0]`` the point one row up (first index:
the slowest axis, as NumPy). ``border = "preserve"`` keeps the boundary cells at their input value, as an
iterative solver needs.
"""

from stencilmap.lang import float32, literal

semantics = "c"  # C's typing, as SODA's (the default, "numpy", would read 0.2 as a weak Python float)
shape = (None, 64)  # rows given at run time (--shape; 64 by default), 64 columns
iterate = 4
border = "preserve"
unroll = 4  # SODA's hints: unroll factor, burst width, tile, cluster, DRAM banks
burst_width = 512
tile = (64,)
cluster = "none"
dram = {"v": 0, "w": 1}


def w(v: float32) -> float32:
    return (v[-1, 0] + v[0, -1] + v[0, 0] + v[0, 1] + v[1, 0]) * literal(0.2, float32)  # SODA's 0.2f
