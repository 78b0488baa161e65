"""stencilmap's SODA designs next to SODA's own compiler: on-chip storage per corpus kernel, in elements.

Usage: .venv/bin/python benchmarks/sodac_compare.py [--sodac PATH] [--corpus DIR] [--markdown]

Needs sodac (`make sodac` installs sodac 0.0.20220505.dev2, the release the issue tried, into .sodac/; the
benchmark says so and stops when it is missing). For every corpus kernel and k = 1, 2, 4 it runs
``sodac KERNEL --unroll-factor k --xocl-kernel K.cpp`` and reads from the generated HLS C++:

* **reuse**: the ``*_delayed_N_buf[N]`` arrays of every module instance the top function calls (sodac's
  reuse-chain FIFOs between two tapped offsets);
* **streams**: Σ of the ``#pragma HLS stream ... depth = N`` of the streams between modules (sodac sizes
  them from its schedule: 2 + what the consumer may lag, i.e. its latency-balancing delay), not counting
  the 32-beat DRAM burst buffers.

stencilmap's **total** counts its own design: the shared reuse chains (``design.soda.chain_storage``: taps and
FIFO segments) plus Σ depth × width of every channel. Its chains also hold the PE-latency skew between a
field's readers (a late reader taps deeper, see ``analysis.sharing``), which sodac keeps in stream FIFOs;
so that the columns compare like with like, stencilmap's **reuse** is the window part of its chains, D_r + k − 1
over each producer's union of reads with every PE latency 0 (``analysis.storage.soda_method_storage``),
and its **streams** the rest: the skew held in the chains plus the channels.
The burst width passed to sodac is the kernel's, raised to k elements where sodac cannot split a burst
narrower than its k lanes (denoise3d: 64 bits); it does not change the on-chip buffers.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from table import print_table

from stencilmap.analysis.storage import Storage, soda_method_storage
from stencilmap.design.common import live_graph
from stencilmap.design.registry import BuildConfig, build
from stencilmap.design.soda import chain_storage
from stencilmap.program import load_program
from stencilmap.program.data import bind_shape

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus" / "soda"
COLUMNS = (
    "kernel",
    "k",
    "sodac reuse",
    "ours reuse",
    "sodac streams",
    "ours streams",
    "sodac total",
    "ours total",
    "ours / sodac",
)


def sodac_storage(kernel_cpp: str) -> Storage:
    """Reuse buffers and stream depths (``Storage.delay``: what sits in streams between modules) of one
    sodac-generated Xilinx HLS kernel (see the module doc)."""
    per_module = {
        m.group(1): sum(int(n) for n in re.findall(r"_delayed_\d+_buf\[(\d+)\]", m.group(2)))
        for m in re.finditer(r"^void (Module\d+Func)\((.*?)^\} // \1", kernel_cpp, re.S | re.M)
    }
    top = kernel_cpp[kernel_cpp.index('extern "C"') :]
    reuse = sum(per_module[name] for name in re.findall(r"^\s+(Module\d+Func)\(", top, re.M))
    depths = re.findall(r"stream variable = (\w+) depth = (\d+)", top)
    streams = sum(int(d) for name, d in depths if not re.fullmatch(r"bank_\d+_\w+_buf", name))
    return Storage(reuse, streams)


def run_sodac(sodac: Path, kernel: Path, k: int, burst: int) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "kernel.cpp"
        cmd = [str(sodac), str(kernel), "--unroll-factor", str(k), "--burst-width", str(burst)]
        subprocess.run([*cmd, "--xocl-kernel", str(out)], check=True, capture_output=True)
        return out.read_text()


def ours(kernel: Path, k: int) -> Storage:
    program = bind_shape(load_program(kernel), {}, None)
    design = build("soda", program, BuildConfig(unroll=k))
    total = chain_storage(design).reuse + sum(c.depth * c.width for c in design.channels)
    shape = tuple(int(n or 0) for n in program.shape)
    window = soda_method_storage(program, live_graph(program).graph, shape, k).reuse
    return Storage(window, total - window)


def rows(sodac: Path, corpus: Path) -> list[tuple[str, int, Storage, Storage]]:
    out = []
    for path in sorted(corpus.glob("*.soda")):
        burst = load_program(path).hints.burst_width or 512
        for k in (1, 2, 4):
            theirs = sodac_storage(run_sodac(sodac, path, k, max(burst, 32 * k)))
            out.append((path.stem, k, theirs, ours(path, k)))
    return out


def soda_folder(corpus: Path) -> Path:
    """The folder of ``.soda`` kernels: ``corpus`` itself or its ``soda/`` (the corpus root works too);
    none there is an error (exit 2), never an empty table."""
    for folder in (corpus, corpus / "soda"):
        if folder.is_dir() and any(folder.glob("*.soda")):
            return folder
    print(f"error: no .soda kernels in {corpus} or {corpus / 'soda'}", file=sys.stderr)
    sys.exit(2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sodac", type=Path, default=ROOT / ".sodac" / "bin" / "sodac")
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--markdown", action="store_true", help="a Markdown table (the README's)")
    args = parser.parse_args()
    if not args.sodac.exists():
        sys.exit(f"{args.sodac} not found: `make sodac` installs SODA's compiler into .sodac/")
    args.corpus = soda_folder(args.corpus)
    table = [
        (
            name,
            str(k),
            *(f"{n:,}" for n in (s.reuse, m.reuse, s.delay, m.delay, s.total, m.total)),
            f"{m.total / s.total:.2f}",
        )
        for name, k, s, m in rows(args.sodac, args.corpus)
    ]
    print_table(COLUMNS, table, args.markdown)


if __name__ == "__main__":
    main()
