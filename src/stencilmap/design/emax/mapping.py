"""The EMAX library's mapping as data (EMAX §3.3, Fig. 3): one ``Instruction`` per PE unit and the
``EmaxMapping`` of a program onto one device."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Unit = Literal["EAG", "EX1", "EX2"]
Op = Literal["LD", "ST", "FIFO", "FMUL", "FMA", "FADD"]
Offset = tuple[int, int, int]  # (dz, dy, dx), C order

#: EMAX §3.1: the data of one LMM can be sent to at most 8 FIFOs of its row.
FIFOS_PER_ROW = 8
RGI_ZERO = "0"


@dataclass(frozen=True, slots=True)
class Instruction:
    """One mnemonic (Fig. 3): the PE (row, col), its unit, the ALU or MEM op, operands, RGI and dist.

    ``dst`` names the register (or LMM) written; ``srcs`` the registers read. Loads name their stream by
    (``dz``, ``dy``) relative to the group's first plane and the current Y; FIFO taps by ``dx``;
    ``coeff`` is the RGI constant of FMUL / FMA.
    """

    row: int
    col: int
    unit: Unit
    op: Op
    dst: str
    srcs: tuple[str, ...] = ()
    rgi: str = RGI_ZERO
    dist: int = 0
    plane: int = 0
    dz: int = 0
    dy: int = 0
    dx: int = 0
    coeff: float = 0.0


@dataclass(frozen=True, slots=True)
class EmaxMapping:
    """The library's mapping of one program onto one EMAX device."""

    program: str
    field: str  # the input read
    output: str
    dtype: str
    shape: tuple[int, int, int]  # (Z, Y, X); a 2-D program has Z = 1
    degree: int
    p: int
    rows: int
    columns: int
    dist: int
    x_chunks: int
    chunk: int  # X points one execution computes (the last chunk may be shorter)
    lmm_words: int  # words of one LMM
    constant: float
    coefficients: tuple[tuple[Offset, float], ...]
    instructions: tuple[Instruction, ...]
    device: str

    @property
    def stream_words(self) -> int:
        """Words of one LMM stream: a chunk and its 2d halo."""
        return self.chunk + 2 * self.degree

    def loads(self) -> tuple[Instruction, ...]:
        return tuple(i for i in self.instructions if i.op == "LD")
