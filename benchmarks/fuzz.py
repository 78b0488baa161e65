"""Fuzz the real ``stencilmap`` CLI with hostile and careless input (issue 19): mutated programs (the
examples and the shared corpus), file names with newlines, backticks, markup and control characters, huge
numbers, deep nesting, special files (FIFOs, symbolic links, ``/dev/zero``) and bad options, through every
command. Each call runs as its own process (``python -m stencilmap``) in a scratch folder with a private
TMPDIR and a memory limit, and breaks the promise if it

- prints a traceback, exits with a status outside {0, 1, 2}, or dies by a signal;
- hangs (the per-call timeout is a generous safety net, not a speed requirement);
- writes or deletes files outside its scratch folder (sentinel files and symbolic links pointing out of it,
  the repository's examples), or deletes a user's file inside it (``precious.txt``);
- leaves temporaries behind (anything in its TMPDIR, or ``.*.tmp`` / ``.stencilmap-*`` / ``*.old.*`` names).

Usage: ``python benchmarks/fuzz.py --calls 3000 --seed 19 --out /tmp/fuzz`` prints a table of the outcomes
per command; the failing cases stay in ``--out`` (``failures.txt`` lists them with their commands)."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import resource
import shutil
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
CORPUS = ROOT.parent / "shared" / "corpus"
if not CORPUS.is_dir():
    CORPUS = Path("/work/shared/corpus")
DEVICE_FILES = ROOT / "src" / "stencilmap" / "device" / "files"

COMMANDS = ("run", "analyze", "simulate", "estimate", "roofline", "explore", "codegen", "compile",
            "calibrate", "devices")  # fmt: skip
DEVICES = ("ku060", "de5", "u280", "stratix10", "emax", "cgra-tia", "v100", "xeon-e5-2690v3")
FPGAS = ("ku060", "de5", "u280", "stratix10")

#: Text a mutation may insert into a program.
TOKENS = [
    "&", "|", "^", "**", "//", "%", "<<", "(", ")", "[", "]", "{", "}", ",", ":", ";", "=", "0", "-1",
    "1e400", "nan", "inf", "9" * 30, "9" * 5000, "9223372036854775808", "-9223372036854775809",
    "18446744073709551616", "0x" + "f" * 40, "1.5f", "max", "min", "sqrt(", "select(", "int64", "float64",
    "`", "<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "|", "\x1b[31m", "\x00", "\t", "\n",
    "\u202e", "\ud800", "(" * 3000, "[" * 3000, "iterate: 1000000\n", "unroll factor: 1000000000\n",
    "v(1000000000000, 0)", "/../../tmp/x",
]  # fmt: skip
JSON_VALUES: list[Any] = [
    None, True, 0, -1, 1.5, 2**63, -(2**63) - 1, 10**30, 10**300,
    float("inf"), "", "x", "max", "`", "<script>alert(1)</script>", "../outside.dat", "/dev/zero",
    "random:0-1e400", "constant:1e400", [], {}, "a" * 300, [1] * 64, 100000,
]  # fmt: skip
#: File-name stems a program, a DOT file or an output folder may get.
NAMES = ["prog", "we`ird", "a\nb", "<script>x</script>", "x|y", "tab\there", "esc\x1b[31m", "sp ace", "-dash",
         "ünï", "back\\slash", "$(touch PWNED)", "**bold**", "[link](x)", "'quote\""]  # fmt: skip
HUGE = ["0", "-1", "1", "2", "1024", str(2**31), str(2**63), str(10**23), "9" * 5000, "1e3", "abc", "", "nan"]

LEFTOVER = re.compile(r"(^\..*\.tmp$|^\.stencilmap-(?!out$)|\.old\.)")


# ---------------------------------------------------------------------------------------------- generation


def _seeds() -> list[Path]:
    files = [p for p in sorted(EXAMPLES.iterdir()) if p.suffix in (".soda", ".json")]
    files += sorted((CORPUS / "soda").glob("*.soda")) + sorted((CORPUS / "stencilflow").glob("*.json"))
    return files


def mutate_text(rng: random.Random, text: str) -> str:
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(text) + 1)
        j = min(len(text), i + rng.randint(0, 12))
        kind = rng.randrange(4)
        if kind == 0:
            text = text[:i] + rng.choice(TOKENS) + text[i:]
        elif kind == 1:
            text = text[:i] + text[j:]
        elif kind == 2:
            text = text[:i] + text[i:j] * rng.randint(2, 50) + text[j:]
        else:
            text = text[:i] + rng.choice(TOKENS) + text[j:]
    return text


def mutate_json(rng: random.Random, text: str) -> str:
    doc = json.loads(text)
    paths: list[tuple[Any, Any]] = []
    stack: list[Any] = [doc]
    while stack:
        node = stack.pop()
        items = (
            list(node.items())
            if isinstance(node, dict)
            else list(enumerate(node))
            if isinstance(node, list)
            else []
        )
        for key, value in items:
            paths.append((node, key))
            stack.append(value)
    if paths:
        node, key = rng.choice(paths)
        r = rng.random()
        if isinstance(node, dict) and r < 0.2:
            node[rng.choice(["max", "<b>x</b>", "a`b", "", "a\nb"])] = node.pop(key)
        elif isinstance(node[key], str) and r < 0.6:
            node[key] = mutate_text(rng, node[key])
        elif r < 0.7:
            node[key] = "__DEEP__"
            n = rng.choice([50, 5000])
            return json.dumps(doc, allow_nan=True).replace('"__DEEP__"', "[" * n + "1" + "]" * n)
        else:
            node[key] = rng.choice(JSON_VALUES)
    return json.dumps(doc, allow_nan=True)


@dataclass
class Case:
    """One call: the command line and the files to lay out in its scratch folder before it runs."""

    index: int
    command: str
    args: list[str]
    files: dict[str, bytes] = field(default_factory=dict)
    fifos: list[str] = field(default_factory=list)
    links: dict[str, str] = field(default_factory=dict)  # name → target (relative to the scratch folder)
    folders: list[str] = field(default_factory=list)
    dims: int = 2  # the program's grid dimensions (for a --shape that fits)


_DIMS: dict[Path, int] = {}


def _dims(source: Path) -> int:
    """The number of dimensions of a seed program (its grid), 2 if it does not load."""
    if source not in _DIMS:
        try:
            from stencilmap.program import load_program

            _DIMS[source] = len(load_program(source).shape)
        except Exception:  # a seed that does not load gets the common case
            _DIMS[source] = 2
    return _DIMS[source]


def _program(rng: random.Random, case: Case) -> str:
    """Lay out a (usually mutated) program; returns its name in the scratch folder."""
    source = rng.choice(_seeds())
    case.dims = _dims(source)
    text = source.read_text(encoding="utf-8")
    r = rng.random()
    if r < 0.5:
        pass  # the program as it is: the options and file names do the damage
    elif source.suffix == ".json" and r < 0.75:
        try:
            text = mutate_json(rng, text)
        except (ValueError, RecursionError):
            text = mutate_text(rng, text)
    else:
        text = mutate_text(rng, text)
    stem = rng.choice(NAMES) if rng.random() < 0.3 else "prog"
    name = f"{stem}{source.suffix}"
    data = text.encode("utf-8", errors="surrogatepass")
    if rng.random() < 0.03:
        data = b"\xff\xfe" + data  # invalid UTF-8
    case.files[name] = data
    if source.suffix == ".json" and (source.parent / "data").is_dir():
        case.links["data"] = str(source.parent / "data")
    return name


def _number(rng: random.Random, good: list[str]) -> str:
    return rng.choice(HUGE) if rng.random() < 0.25 else rng.choice(good)


def _shape(rng: random.Random, dims: int) -> list[str]:
    r = rng.random()
    if r < 0.55:
        return ["--shape", ",".join(rng.choice(["8", "16", "12", "10", "32"]) for _ in range(dims))]
    if r < 0.62:
        return [
            "--shape",
            rng.choice(
                ["16,16", "8,8,8", "0,0", "-1,4", "99999999999,9999999999", "1e9", ",", "4,4,4,4,4,4"]
            ),
        ]
    return []


def _out_target(rng: random.Random, case: Case, kind: str) -> str:
    """An output path: usually fresh, sometimes special (a FIFO, a symbolic link out of the scratch
    folder, a user's folder, the current folder)."""
    r = rng.random()
    if kind == "file":
        if r < 0.1:
            case.fifos.append("fifo.out")
            return "fifo.out"
        if r < 0.2:
            case.links["link.out"] = "../../sentinel/target.txt"
            return "link.out"
        if r < 0.25:
            return rng.choice(["/dev/full", "/dev/null"])
        if r < 0.3:
            return "missing/dir/x.out"
        return f"{rng.choice(NAMES)}.out"
    if r < 0.15:
        case.folders.append("userdir")
        case.files["userdir/precious.txt"] = b"user data\n"
        return "userdir"
    if r < 0.2:
        return "."
    if r < 0.25:
        case.links["linkdir"] = "../../sentinel"
        return "linkdir"
    if r < 0.3:
        return rng.choice(["..", "/dev/null"])
    return rng.choice(["out", "o`ut", "o\nut", "<i>out</i>"])


def _input_file(rng: random.Random, case: Case, kind: str) -> str:
    """A user file given by an option (partition, reports, device, .npy): sometimes special."""
    r = rng.random()
    if r < 0.08:
        case.fifos.append("fifo.in")
        return "fifo.in"
    if r < 0.14:
        return "/dev/zero"
    if r < 0.18:
        return "."
    if r < 0.22:
        case.files[f"bad.{kind}"] = b"\xff\xfe\x00garbage"
        return f"bad.{kind}"
    return ""


def make_case(seed: int, index: int) -> Case:
    rng = random.Random(f"{seed}:{index}")
    command = rng.choice(COMMANDS)
    case = Case(index, command, [])
    a = case.args
    if command == "devices":
        a += rng.choice([[], ["--json"], ["--format", "csv"], ["--format", "xml"]])
        return case
    if command == "calibrate":
        device = rng.choice(["de5", "ku060"])
        csv = (EXAMPLES / "calibration" / ("de5_laplace_table2.csv" if device == "de5" else
                                           "ku060_jacobi2d_soda_synthetic.csv")).read_text()  # fmt: skip
        special = _input_file(rng, case, "csv")
        if not special:
            if rng.random() < 0.5:
                csv = mutate_text(rng, csv)
            if rng.random() < 0.1:
                csv += "9" * 5000 + ",1,1,1,1\n"
            special = f"{rng.choice(NAMES)}.csv"
            case.files[special] = csv.encode("utf-8", errors="surrogatepass")
        program = "laplace2d.soda" if device == "de5" else "jacobi2d.soda"
        case.files[program] = (EXAMPLES / program).read_bytes()
        if rng.random() < 0.3:
            case.files[program] = mutate_text(rng, case.files[program].decode()).encode(
                "utf-8", "surrogatepass"
            )
        a += [
            program,
            "--device",
            device,
            "--arch",
            "pcm" if device == "de5" else "soda",
            "--reports",
            special,
        ]
        a += ["--shape", "32768,4096"] if device == "de5" else ["--shape", "1024,4096"]
        if rng.random() < 0.5:
            a += ["--holdout", _number(rng, ["0", "1", "2"])]
        if rng.random() < 0.5:
            a += ["--out", _out_target(rng, case, "file")]
        a += rng.choice([[], ["--json"]])
        return case
    prog = _program(rng, case)
    a.append(prog if rng.random() < 0.97 else rng.choice(["/dev/zero", ".", "missing.soda"]))
    if command == "run":
        a += _shape(rng, case.dims)
        if rng.random() < 0.5:
            a += ["--out", _out_target(rng, case, "dir")]
        if rng.random() < 0.3:
            a += ["--seed", _number(rng, ["0", "1", "7"])]
        if rng.random() < 0.3:
            a += ["--iterate", _number(rng, ["1", "2", "3"])]
        if rng.random() < 0.2:
            a += ["--backend", rng.choice(["numpy", "cpu", "numpy", "bogus"])]
        if rng.random() < 0.15:
            name = rng.choice(["v", "in_img", "a", "max", "x"])
            src = _input_file(rng, case, "npy")
            if not src:
                src = "arr.npy"
                case.files[src] = _npy(rng)
            a += ["--input", f"{name}={src}"]
    elif command == "analyze":
        a += rng.choice([[], ["--json"], ["--format", "csv"]])
        if rng.random() < 0.3:
            a += ["--dot", _out_target(rng, case, "file")]
        if rng.random() < 0.15:
            a += ["--arch", "emax", "--asm", _out_target(rng, case, "file")]
        elif rng.random() < 0.2:
            a += ["--arch", rng.choice(["soda", "stencilflow", "pcm", "cgra"])]
        if rng.random() < 0.3:
            a += ["--iterate", _number(rng, ["1", "2", "4"])]
        if rng.random() < 0.2:
            a += ["--unroll", _number(rng, ["1", "2", "4"])]
        a += _shape(rng, case.dims)
        if rng.random() < 0.12:
            src = _input_file(rng, case, "json")
            if not src:
                text = (EXAMPLES / "partitions" / "dag_listing1.json").read_text()
                src = "part.json"
                case.files[src] = (mutate_json(rng, text) if rng.random() < 0.7 else text).encode(
                    "utf-8", errors="surrogatepass"
                )
            a += ["--partition", src, "--device", rng.choice(FPGAS)]
    elif command == "simulate":
        a += _shape(rng, case.dims) or ["--shape", ",".join(["16"] * case.dims)]
        if rng.random() < 0.4:
            a += ["--out", _out_target(rng, case, "dir")]
        if rng.random() < 0.2:
            a += ["--max-cycles", _number(rng, ["10", "100", "100000"])]
        if rng.random() < 0.15:
            a += ["--trace", _out_target(rng, case, "file")]
        if rng.random() < 0.2:
            a += ["--seed", _number(rng, ["0", "3"])]
        if rng.random() < 0.2:
            a += ["--device", rng.choice(FPGAS)]
        a += rng.choice([[], ["--json"]])
    elif command in ("estimate", "roofline"):
        a += ["--device", _device(rng, case)]
        a += _shape(rng, case.dims)
        if command == "estimate":
            if rng.random() < 0.3:
                a += ["--iterations", _number(rng, ["1", "10", "100"])]
            if rng.random() < 0.2:
                a += ["--unroll", _number(rng, ["1", "4", "16"])]
            if rng.random() < 0.2:
                a += ["--iterate", _number(rng, ["1", "4", "16"])]
            if rng.random() < 0.1:
                a += ["--clock-mhz", _number(rng, ["100", "250"])]
        else:
            if rng.random() < 0.2:
                a += ["--plot", f"{rng.choice(NAMES)}.{rng.choice(['png', 'svg', 'pdf'])}"]
            if rng.random() < 0.2:
                a += ["--iterate", _number(rng, ["1", "4"])]
        a += rng.choice([[], ["--json"]])
    elif command == "explore":
        a += [
            "--device",
            rng.choice(FPGAS),
            *(_shape(rng, case.dims) or ["--shape", ",".join(["32"] * case.dims)]),
        ]
        a += ["--no-simulate"] if rng.random() < 0.7 else ["--sim-points", "256"]
        if rng.random() < 0.2:
            a += ["--max-iterate", _number(rng, ["1", "4", "16"])]
        if rng.random() < 0.2:
            a += ["--iterations", _number(rng, ["1", "10"])]
        if rng.random() < 0.3:
            a += ["--save", _out_target(rng, case, "dir")]
        a += rng.choice([[], ["--json"]])
    elif command == "codegen":
        a += ["--target", rng.choice(["hls", "hls", "opencl", "verilog"])]
        a += ["--out", _out_target(rng, case, "dir") if rng.random() < 0.5 else "code"]
        a += _shape(rng, case.dims) or ["--shape", ",".join(["16"] * case.dims)]
        if rng.random() < 0.3:
            a += ["--verify"]
        if rng.random() < 0.25:
            a += ["--seed", _number(rng, ["0", "5"])]
        a += rng.choice([[], ["--json"]])
    elif command == "compile":
        a += ["--device", _device(rng, case)]
        a += _shape(rng, case.dims) or ["--shape", ",".join(["16"] * case.dims)]
        if rng.random() < 0.25:
            a += ["--iterations", _number(rng, ["1", "4"])]
        a += ["--out", _out_target(rng, case, "dir") if rng.random() < 0.5 else "build"]
        a += rng.choice([[], ["--json"]])
    return case


def _device(rng: random.Random, case: Case) -> str:
    if rng.random() < 0.8:
        return rng.choice(DEVICES)
    special = _input_file(rng, case, "json")
    if special:
        return special
    doc = json.loads((DEVICE_FILES / f"{rng.choice(FPGAS)}.json").read_text())
    r = rng.random()
    if r < 0.3:
        doc["name"] = rng.choice(
            ["<script>alert(1)</script>", "a`b|c", "x\ny", "<img src=x onerror=alert(1)>"]
        )
        doc["description"] = "<script>alert('d')</script> | `tick` ![i](javascript:alert(1))"
    elif r < 0.5:
        doc["clock_mhz"] = rng.choice([float("inf"), float("nan"), 1e308, 0, -5, 1e400])
    else:
        text = mutate_json(rng, json.dumps(doc))
        return _store(case, "dev.json", text)
    return _store(case, "dev.json", json.dumps(doc, allow_nan=True))


def _store(case: Case, name: str, text: str) -> str:
    case.files[name] = text.encode("utf-8", errors="surrogatepass")
    return name


def _npy(rng: random.Random) -> bytes:
    import io

    import numpy as np

    buf = io.BytesIO()
    shape = rng.choice([(16, 16), (8,), (0, 0), (64, 4), (16, 16, 16)])
    dtype = rng.choice(["float32", "float64", "int32", "uint8", "complex64"])
    np.save(buf, np.zeros(shape, dtype=dtype), allow_pickle=False)
    data = buf.getvalue()
    return data if rng.random() < 0.8 else data[: rng.randrange(len(data))]


# ----------------------------------------------------------------------------------------------- running


@dataclass
class Result:
    case: Case
    returncode: int | None
    seconds: float
    problems: list[str]
    stderr: str


def _snapshot(paths: list[Path]) -> dict[str, tuple[int, int, str]]:
    """(size, mtime, first bytes' hash) of every file under ``paths`` (not following links)."""
    out: dict[str, tuple[int, int, str]] = {}
    for top in paths:
        if top.is_file():
            st = top.stat()
            out[str(top)] = (st.st_size, st.st_mtime_ns, hashlib.sha1(top.read_bytes()).hexdigest())
        for dirpath, dirs, files in os.walk(top):
            dirs[:] = [d for d in dirs if d not in ("__pycache__", ".git", ".venv")]
            for name in files:
                p = Path(dirpath) / name
                try:
                    st = p.lstat()
                    digest = hashlib.sha1(p.read_bytes()[:4096]).hexdigest() if p.is_file() else "special"
                except OSError:
                    continue
                out[str(p)] = (st.st_size, st.st_mtime_ns, digest)
    return out


def _lay_out(case: Case, folder: Path) -> None:
    folder.mkdir(parents=True)
    for d in case.folders:
        (folder / d).mkdir(parents=True, exist_ok=True)
    for name, data in case.files.items():
        p = folder / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    for name in case.fifos:
        if not (folder / name).exists():
            os.mkfifo(folder / name)
    for name, target in case.links.items():
        (folder / name).symlink_to(target)


def _limits() -> None:
    os.setsid()
    cap = 4 * 2**30
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))


def run_case(case: Case, out: Path, timeout_s: float, python: str) -> Result:
    folder = out / "calls" / f"{case.index:05d}"
    tmp = out / "tmp" / f"{case.index:05d}"
    _lay_out(case, folder)
    tmp.mkdir(parents=True)
    before = {n: (folder / n).read_bytes() for n in case.files}
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONSTARTUP",)}
    env.update(TMPDIR=str(tmp), PYTHONPATH=str(ROOT / "src"), NO_COLOR="1", COLUMNS="120", MPLBACKEND="Agg",
               XDG_CACHE_HOME=str(out / "cache"))  # fmt: skip
    start = time.monotonic()
    problems: list[str] = []
    try:
        proc = subprocess.Popen(
            [python, "-m", "stencilmap", case.command, *case.args], cwd=folder, env=env,
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=_limits,
        )  # fmt: skip
        try:
            _, err_b = proc.communicate(timeout=timeout_s)
            code: int | None = proc.returncode
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            _, err_b = proc.communicate()
            code = None
            problems.append(f"hang (> {timeout_s:.0f} s)")
    finally:
        seconds = time.monotonic() - start
    stderr = err_b.decode("utf-8", errors="replace")
    if "Traceback (most recent call last)" in stderr:
        last = [line for line in stderr.splitlines() if line.strip()][-1:]
        problems.append(f"traceback: {last[0][:160] if last else ''}")
    if code is not None and code < 0:
        problems.append(f"signal {-code}")
    elif code is not None and code not in (0, 1, 2):
        problems.append(f"exit {code}")
    for name, data in before.items():
        p = folder / name
        try:
            if p.is_symlink() or not p.is_file() or p.read_bytes() != data:
                problems.append(f"changed or deleted a user file: {name!r}")
        except OSError:
            problems.append(f"changed or deleted a user file: {name!r}")
    for name in case.fifos:
        if not (folder / name).is_fifo():
            problems.append(f"replaced the FIFO {name!r}")
    for name in case.links:
        if not (folder / name).is_symlink():
            problems.append(f"replaced the symbolic link {name!r}")
    left = sorted(p.name for p in tmp.rglob("*"))
    if left:
        problems.append(f"left {len(left)} file(s) in TMPDIR: {left[:3]}")
    for p in folder.rglob("*"):
        if LEFTOVER.search(p.name) and not p.is_symlink():
            problems.append(f"left a temporary: {str(p.relative_to(folder))!r}")
            break
    if not problems:
        shutil.rmtree(folder, ignore_errors=True)
    shutil.rmtree(tmp, ignore_errors=True)
    return Result(case, code, seconds, problems, stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--seed", type=int, default=19)
    parser.add_argument("--out", type=Path, default=Path("fuzz-out"))
    parser.add_argument("--jobs", type=int, default=2, choices=(1, 2))
    parser.add_argument("--timeout", type=float, default=600.0, help="per call: a safety net against hangs")
    parser.add_argument("--start", type=int, default=0, help="first case index (to resume)")
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--report", action="store_true", help="only print the table of --out's results.jsonl")
    ns = parser.parse_args(argv)
    out: Path = ns.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    sentinel = out / "sentinel"
    sentinel.mkdir(exist_ok=True)
    (sentinel / "target.txt").write_text("outside the scratch folder\n")
    watched = [sentinel / "target.txt", EXAMPLES, CORPUS]
    before = _snapshot(watched)
    outside = {p.name for p in out.iterdir()}
    results: list[Result] = []
    lock = threading.Lock()
    if ns.report:
        _print(
            [_from_json(json.loads(line)) for line in (out / "results.jsonl").open(encoding="utf-8")], [], []
        )
        return 0
    log = (out / "failures.txt").open("a", encoding="utf-8")
    record = (out / "results.jsonl").open("a", encoding="utf-8")

    def one(i: int) -> None:
        case = make_case(ns.seed, i)
        result = run_case(case, out, ns.timeout, ns.python)
        with lock:
            results.append(result)
            record.write(
                json.dumps(
                    {
                        "index": i,
                        "command": case.command,
                        "returncode": result.returncode,
                        "seconds": round(result.seconds, 2),
                        "problems": result.problems,
                    }
                )
                + "\n"
            )
            record.flush()
            if result.problems:
                log.write(f"case {i}: {case.command} {json.dumps(case.args)} (exit {result.returncode}, "
                          f"{result.seconds:.1f} s): {'; '.join(result.problems)}\n")  # fmt: skip
                log.flush()
            if len(results) % 50 == 0:
                bad = sum(1 for r in results if r.problems)
                print(f"{len(results)} calls, {bad} failing", file=sys.stderr, flush=True)

    with ThreadPoolExecutor(ns.jobs) as pool:
        list(pool.map(one, range(ns.start, ns.start + ns.calls)))
    log.close()
    record.close()
    after = _snapshot(watched)
    changed = sorted(set(before) ^ set(after) | {k for k in before if k in after and before[k] != after[k]})
    new_top = sorted({p.name for p in out.iterdir()} - outside - {"calls", "tmp", "cache", "failures.txt"})
    _print(results, changed, new_top)
    return 1 if changed or new_top or any(r.problems for r in results) else 0


def _from_json(doc: dict[str, Any]) -> Result:
    return Result(
        Case(doc["index"], doc["command"], []), doc["returncode"], doc["seconds"], doc["problems"], ""
    )


def _print(results: list[Result], changed: list[str], new_top: list[str]) -> None:
    rows: dict[str, Counter[str]] = defaultdict(Counter)
    kinds: Counter[str] = Counter()
    for r in results:
        row = rows[r.case.command]
        row["calls"] += 1
        row[{0: "exit 0", 1: "exit 1", 2: "exit 2"}.get(r.returncode or 0 if r.returncode is not None else -9,
                                                    "other")] += 1  # fmt: skip
        row["seconds"] += int(r.seconds)
        if r.problems:
            row["failing"] += 1
            for p in r.problems:
                kinds[p.split(":")[0].split(" (")[0]] += 1
    columns = ["command", "calls", "exit 0", "exit 1", "exit 2", "failing", "seconds"]
    table = [[cmd, *(str(rows[cmd][c]) for c in columns[1:])] for cmd in COMMANDS if cmd in rows]
    total = ["total", *(str(sum(rows[c][k] for c in rows)) for k in columns[1:])]
    table.append(total)
    widths = [max(len(c), *(len(r[i]) for r in table)) for i, c in enumerate(columns)]
    for row in (columns, *table):
        print("  ".join(cell.rjust(w) for cell, w in zip(row, widths, strict=True)))
    print()
    for kind, n in kinds.most_common():
        print(f"{n:6d}  {kind}")
    print(f"files changed outside the scratch folders: {len(changed)} {changed[:5]}")
    print(f"new entries in --out: {len(new_top)} {new_top[:5]}")


if __name__ == "__main__":
    sys.exit(main())
