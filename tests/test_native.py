"""``native``: one module builds native code (the cache is private, its entries are checked before they are
loaded or run), runs it (verification executables in a scratch folder with no network) and cleans up after
itself on every path (issue 19 items 1, 5, 7)."""

from __future__ import annotations

import os
import re
import socket
import stat
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from stencilmap import native
from stencilmap.cli import main
from stencilmap.codegen.registry import Generated
from stencilmap.codegen.verify import run_csim
from stencilmap.errors import StencilmapError
from tests.conftest import EXAMPLES, ROOT

JACOBI = str(EXAMPLES / "jacobi2d.soda")
SRC = ROOT / "src" / "stencilmap"

SQUARE_C = "int square(int x) { return x * x; }\n"


def _unit(text: str = SQUARE_C) -> native.Unit:
    cc = native.find_compiler(["cc", "gcc"])
    assert cc is not None
    return native.Unit("square", cc, (("square.c", text),), ("square.c",), ("-O1", "-fPIC", "-shared"))


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh cache for this test, with nothing loaded from it yet."""
    monkeypatch.setenv("STENCILMAP_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(native, "_LOADED", {})
    return tmp_path / "cache"


# -------------------------------------------------------------------------------------------- one builder


def test_only_native_runs_a_compiler() -> None:
    """``native`` starts every process (compilers, verification runs, Graphviz): nothing else imports
    subprocess."""
    users = sorted(
        str(p.relative_to(SRC))
        for p in SRC.rglob("*.py")
        if re.search(r"^\s*(import|from) subprocess", p.read_text(), re.M)
    )
    assert users == ["native.py"]
    assert not (SRC / "backends" / "ccompile.py").exists() and not (SRC / "cache.py").exists()


def test_a_library_is_built_once_cached_and_loaded(cache: Path) -> None:
    lib, fresh = native.library(_unit(), ("t",))
    assert fresh and lib.square(7) == 49
    (entry,) = (cache / "t").iterdir()  # no temporary left beside it
    assert stat.S_IMODE(entry.stat().st_mode) == 0o700
    assert stat.S_IMODE(cache.stat().st_mode) == stat.S_IMODE((cache / "t").stat().st_mode) == 0o700
    assert native.library(_unit(), ("t",))[1] is False  # this process: loaded already
    native._LOADED.clear()
    again, fresh = native.library(_unit(), ("t",))
    assert not fresh and again.square(3) == 9  # a new process would find it on disk


PARTS_C = """\
#ifdef ONE
int twice(int x);
int square(int x) { return twice(x) / 2 * x; }
#endif
#ifdef TWO
int twice(int x) { return 2 * x; }
#endif
"""


def test_a_unit_in_parts_is_compiled_part_by_part_and_linked(cache: Path) -> None:
    """Each part compiles the source with its own flags (in parallel), the objects are linked into one library;
    the parts are in the key; a unit of two sources cannot be split."""
    unit = replace(_unit(PARTS_C), parts=(("-DONE",), ("-DTWO",)))
    lib, fresh = native.library(unit, ("t",))
    assert fresh and lib.square(7) == 49 and lib.twice(4) == 8
    assert unit.key() != replace(unit, parts=(("-DONE", "-DTWO"),)).key()
    with pytest.raises(ValueError, match="one source"):
        replace(unit, sources=("a.c", "b.c")).part_commands(cache, cache / "out.so")


def test_the_key_covers_flags_files_and_the_compiler(monkeypatch: pytest.MonkeyPatch) -> None:
    unit = _unit()
    keys = {
        unit.key(),
        native.Unit(unit.name, unit.compiler, unit.files, unit.sources, ("-O2", "-fPIC", "-shared")).key(),
        _unit(SQUARE_C + "\n").key(),
    }
    monkeypatch.setattr(native, "compiler_identity", lambda cc: "another compiler, another CPU")
    keys.add(unit.key())
    assert len(keys) == 4


def test_a_compile_error_says_what_the_compiler_said(cache: Path) -> None:
    with pytest.raises(native.CompileError) as info:
        native.library(_unit("int square(int x) { return x * ; }\n"), ("t",))
    assert "error" in info.value.first_error
    assert [p.name for p in (cache / "t").iterdir()] == []


# --------------------------------------------------------------------------------------------- the cache


def test_a_cache_writable_by_others_is_refused(cache: Path) -> None:
    cache.mkdir(mode=0o700)
    cache.chmod(0o777)
    with pytest.raises(
        StencilmapError, match=f"refusing the compile cache {cache}: it is writable by other users"
    ):
        native.library(_unit(), ("t",))
    result = CliRunner().invoke(main, ["simulate", JACOBI, "--shape", "8,8"])
    assert result.exit_code == 2 and result.stderr.count("\n") == 1
    assert f"refusing the compile cache {cache}" in result.stderr


def test_a_tampered_entry_is_refused(cache: Path) -> None:
    native.library(_unit(), ("t",))
    (entry,) = (cache / "t").iterdir()
    with open(entry, "ab") as f:
        f.write(b"\0")  # the same owner and mode: only the hash can tell
    native._LOADED.clear()
    with pytest.raises(StencilmapError, match=f"refusing the compile cache {cache / 't'}: .* does not hash"):
        native.library(_unit(), ("t",))
    entry.chmod(0o722)
    with pytest.raises(StencilmapError, match="is writable by other users"):
        native.library(_unit(), ("t",))


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_an_entry_owned_by_another_user_is_refused(cache: Path) -> None:
    native.library(_unit(), ("t",))
    (entry,) = (cache / "t").iterdir()
    os.chown(entry, 65534, 65534)
    native._LOADED.clear()
    with pytest.raises(StencilmapError, match="is owned by another user"):
        native.library(_unit(), ("t",))


# ------------------------------------------------------------------------------- running generated code

PROBE_CPP = r"""
#include <arpa/inet.h>
#include <cstdio>
#include <cstdlib>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
// Usage: probe DATA OUT [PORT]: writes leak.txt where it runs, prints that folder, connects to PORT.
int main(int argc, char **argv) {
    FILE *f = fopen("leak.txt", "w");
    if (f) { fputs("x", f); fclose(f); }
    char cwd[4096];
    if (getcwd(cwd, sizeof cwd)) puts(cwd);
    if (argc < 4) return 0;
    int s = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(atoi(argv[3]));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return connect(s, (sockaddr *)&a, sizeof a) == 0 ? 0 : 3;
}
"""


def _probe() -> Generated:
    return Generated("hls", (("probe.cpp", PROBE_CPP),), "probe", (), "csim", ("probe.cpp",), ())


def test_generated_code_runs_in_a_scratch_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A C simulation that writes a relative path writes it in a scratch folder, removed after the run."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr("tempfile.tempdir", None)
    result = run_csim(_probe(), tmp_path, tmp_path, ())
    assert result.status == "done", result.message
    assert not (tmp_path / "leak.txt").exists()
    assert list((tmp_path / "tmp").iterdir()) == []  # scratch, build and output folders all removed


@pytest.mark.skipif(not native.network_isolation(), reason="unshare --net --map-root-user does not work here")
def test_generated_code_runs_without_network(tmp_path: Path) -> None:
    """The probe reaches a port listening on this machine when run plainly, not when run as verification."""
    cxx = native.find_compiler(["g++"])
    assert cxx is not None
    unit = native.Unit("probe", cxx, (("probe.cpp", PROBE_CPP),), ("probe.cpp",), ("-O0",))
    with socket.create_server(("127.0.0.1", 0)) as server, native.executable(unit, None) as (exe, _):
        port = str(server.getsockname()[1])
        plain = native.run([str(exe), "-", "-", port], cwd=tmp_path)
        isolated = native.run([str(exe), "-", "-", port], isolate=True)
    assert plain.returncode == 0 and not plain.isolated
    assert isolated.returncode == 3 and isolated.isolated
    assert not Path(isolated.stdout.strip()).exists()  # its scratch folder is gone
    assert run_csim(_probe(), tmp_path, tmp_path, ()).message == ""  # no "ran with the network" note


def test_without_unshare_verification_runs_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(native, "network_isolation", lambda: False)
    result = run_csim(_probe(), tmp_path, tmp_path, ())
    assert (
        result.status == "done"
        and result.message == "ran with the network: unshare --net is not available here"
    )


def test_a_crash_is_named_by_its_signal(tmp_path: Path) -> None:
    crash = Generated(
        "hls", (("c.cpp", "int main() { return *(volatile int *)0; }\n"),), "c", (), "csim", ("c.cpp",), ()
    )
    result = run_csim(crash, tmp_path, tmp_path, ())
    assert result.status == "failed" and result.message == "killed by SIGSEGV"


def test_a_crashing_opencl_kernel_is_a_failed_run(tmp_path: Path) -> None:
    """PoCL runs the kernel in a child process: a kernel that faults fails the run, stencilmap goes on."""
    from stencilmap.codegen.opencl_run import pocl_available, run_pocl

    if not pocl_available():
        pytest.skip("no OpenCL CPU runtime")
    kernel = "__kernel void far(__global float *out) { out[(long)1 << 40] = 1.0f; }\n"
    (tmp_path / "kernel.cl").write_text(kernel)
    from stencilmap.codegen.registry import Port

    gen = Generated("opencl", (("kernel.cl", kernel),), "far", (Port("out", "out", "float32", 4, 0),), "pocl",
                    ("kernel.cl",), (".",))  # fmt: skip
    result = run_pocl(gen, tmp_path, tmp_path, (4,))
    assert result.status == "failed" and result.message == "killed by SIGSEGV"


# --------------------------------------------------------------------------------------------- cleaning up


def _stencilmap(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "stencilmap", *args], capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=600)  # fmt: skip


@pytest.mark.parametrize("target", ["hls", "opencl"])
def test_codegen_verify_leaves_no_temporary(tmp_path: Path, target: str) -> None:
    if target == "opencl":
        from stencilmap.codegen.opencl_run import pocl_available

        if not pocl_available():
            pytest.skip("no OpenCL CPU runtime")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {"TMPDIR": str(tmp), "STENCILMAP_CACHE_DIR": str(tmp_path / "cache")}
    args = (
        "codegen",
        JACOBI,
        "--target",
        target,
        "--shape",
        "16,16",
        "--verify",
        "--out",
        str(tmp_path / "o"),
    )
    done = _stencilmap(*args, env=env)
    assert done.returncode == 0 and "valid, bit-exact" in done.stdout, done.stderr
    assert list(tmp.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "cache") == ["o", "tmp"]  # no staging left


def test_compile_leaves_no_temporary(tmp_path: Path) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {"TMPDIR": str(tmp), "STENCILMAP_CACHE_DIR": str(tmp_path / "cache")}
    done = _stencilmap(
        "compile", JACOBI, "--device", "ku060", "--shape", "16,16", "--out", str(tmp_path / "c"), env=env
    )
    assert done.returncode == 0, done.stderr
    assert list(tmp.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "cache") == ["c", "tmp"]  # no staging left


FAKE_CC = """#!/bin/sh
if [ "$1" = --version ]; then echo "fake cc 1.0"; exit 0; fi
echo $$ > "{marker}"
exec sleep 600
"""


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie does not count)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return False
    return fields[0] != "Z"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_sigterm_kills_the_compiler_and_removes_its_folder(tmp_path: Path) -> None:
    """SIGTERM while the simulator's engine compiles: the compiler's process group is killed, its build folder
    removed, and the exit is one line with status 143."""
    marker = tmp_path / "compiling"
    fake = tmp_path / "fake-cc"
    fake.write_text(FAKE_CC.format(marker=marker))
    fake.chmod(0o755)
    env = {**os.environ, "CC": str(fake), "STENCILMAP_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.Popen([sys.executable, "-m", "stencilmap", "simulate", JACOBI, "--shape", "8,8"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)  # fmt: skip
    try:
        while not (marker.is_file() and marker.read_text().strip()) and proc.poll() is None:
            time.sleep(0.01)  # the readiness marker: the compiler has started
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        compiler = int(marker.read_text())
        assert os.getpgid(compiler) == compiler != os.getpgid(proc.pid)  # a process group of its own
        proc.terminate()
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 143 and err.strip().splitlines()[-1:] == ["error: interrupted (SIGTERM)"]
    assert [line for line in err.splitlines() if line.startswith("error")] == ["error: interrupted (SIGTERM)"]
    assert not _alive(compiler)
    assert [p.name for p in (tmp_path / "cache" / "sim").iterdir()] == []  # no build folder left
