"""Reaching a Dask cluster: ``--scheduler-file`` (a LocalCluster's own file), Dask's security
configuration (``distributed.comm.tls.*``, ``require-encryption``, a security loader) and ``tls://``
clusters (a LocalCluster over TLS with an openssl certificate), bad files and options as one-line errors."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from stencilmap.cli import main
from stencilmap.errors import StencilmapError
from tests.conftest import EXAMPLES

distributed = pytest.importorskip("distributed")
dask = pytest.importorskip("dask")

JACOBI = str(EXAMPLES / "jacobi2d.soda")


def _run(tmp_path: Path, name: str, *extra: str) -> tuple[int, str]:
    args = ["run", JACOBI, "--backend", "dask", "--chunks", "24,24", "--iterate", "3",
            "--out", str(tmp_path / name), *extra]  # fmt: skip
    res = CliRunner().invoke(main, args)
    return res.exit_code, res.output


def _reference(tmp_path: Path) -> np.ndarray[Any, Any]:
    res = CliRunner().invoke(main, ["run", JACOBI, "--iterate", "3", "--out", str(tmp_path / "ref")])
    assert res.exit_code == 0, res.output
    out: np.ndarray[Any, Any] = np.load(tmp_path / "ref" / "w.npy")
    return out


@pytest.fixture(scope="module")
def scheduler_file(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The scheduler file of a small in-process LocalCluster (tcp://), as its scheduler writes it."""
    path = tmp_path_factory.mktemp("cluster") / "scheduler.json"
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=1, processes=False, protocol="tcp://", dashboard_address=None,
        scheduler_kwargs={"scheduler_file": str(path), "dashboard": False},
    ):  # fmt: skip
        yield path


def test_scheduler_file_runs_on_the_cluster(tmp_path: Path, scheduler_file: Path) -> None:
    assert json.loads(scheduler_file.read_text())["address"].startswith("tcp://")
    code, output = _run(tmp_path, "o", "--scheduler-file", str(scheduler_file), "--json")
    assert code == 0, output
    np.testing.assert_array_equal(np.load(tmp_path / "o" / "w.npy"), _reference(tmp_path))


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no such file"),
        ("{", "not JSON: Expecting property name enclosed in double quotes at line 1, column 2"),
        ("[1, 2]", 'not a Dask scheduler file: no "address" string at $.address'),
        ('{"type": "Scheduler"}', 'not a Dask scheduler file: no "address" string at $.address'),
        ('{"address": 8786}', 'not a Dask scheduler file: no "address" string at $.address'),
        (b"\xff\xfe{", "cannot read it"),
    ],
)
def test_bad_scheduler_files_are_one_line(tmp_path: Path, content: str | bytes | None, message: str) -> None:
    path = tmp_path / "scheduler.json"
    if isinstance(content, str):
        path.write_text(content)
    elif isinstance(content, bytes):
        path.write_bytes(content)
    code, output = _run(tmp_path, "o", "--scheduler-file", str(path))
    assert code == 2
    assert output.startswith(f"error: --scheduler-file {path}: {message}") and output.count("\n") == 1
    assert not (tmp_path / "o").exists()


def test_a_folder_is_no_scheduler_file(tmp_path: Path) -> None:
    code, output = _run(tmp_path, "o", "--scheduler-file", str(tmp_path))
    assert code == 2 and output == f"error: --scheduler-file {tmp_path}: no such file\n"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--scheduler", "tcp://127.0.0.1:9"], "give --scheduler or --scheduler-file, not both"),
        (["--backend", "cpu"], "--scheduler-file applies to --backend dask only"),
    ],
)
def test_option_conflicts_are_one_line(
    tmp_path: Path, scheduler_file: Path, extra: list[str], message: str
) -> None:
    code, output = _run(tmp_path, "o", "--scheduler-file", str(scheduler_file), *extra)
    assert code == 2 and output == f"error: {message}\n"


def test_tls_address_without_tls_configuration_is_one_line(tmp_path: Path) -> None:
    code, output = _run(tmp_path, "o", "--scheduler", "tls://127.0.0.1:9")
    assert code == 2 and output.count("\n") == 1
    assert output.startswith(
        "error: the Dask scheduler at tls://127.0.0.1:9 speaks TLS: set distributed.comm.tls"
    )


def _tls_config(ca: str, cert: str, key: str) -> dict[str, Any]:
    """A client's Dask configuration for TLS (as ``DASK_DISTRIBUTED__COMM__TLS__CA_FILE`` etc. set it)."""
    return {
        "distributed.comm.tls.ca-file": ca,
        "distributed.comm.tls.client.cert": cert,
        "distributed.comm.tls.client.key": key,
        "distributed.comm.require-encryption": True,
    }


def test_security_comes_from_dask_configuration(tmp_path: Path) -> None:
    from stencilmap.backends.distributed import client_security

    ca, cert, key = (str(tmp_path / n) for n in ("ca.pem", "client.pem", "client.key"))
    with dask.config.set(_tls_config(ca, cert, key)):
        security = client_security("tls://10.0.0.1:8786")
        assert isinstance(security, distributed.Security)
        assert (security.tls_ca_file, security.tls_client_cert, security.tls_client_key) == (ca, cert, key)
        with pytest.raises(StencilmapError, match=r"requires encryption .* not tls://"):
            client_security("tcp://10.0.0.1:8786")
    with dask.config.set({"distributed.client.security-loader": "some.module.loader"}):
        assert client_security("tls://10.0.0.1:8786") is None  # the client calls the loader itself
    assert client_security("tcp://10.0.0.1:8786").require_encryption in (False, None)


def test_the_client_gets_the_file_and_the_security(
    monkeypatch: pytest.MonkeyPatch, scheduler_file: Path
) -> None:
    """``Client(scheduler_file=..., security=Security from config)``, closed after use."""
    from stencilmap.backends import distributed as backend
    from stencilmap.backends.registry import HostOptions

    made: list[dict[str, Any]] = []

    class FakeClient:
        def __init__(self, **kwargs: Any) -> None:
            made.append(kwargs)
            self.closed = False

        def close(self) -> None:
            self.closed = True

    monkeypatch.setattr(distributed, "Client", FakeClient)
    with backend._client(HostOptions("dask", scheduler_file=str(scheduler_file))) as client:
        assert isinstance(client, FakeClient)
    assert client.closed
    (kwargs,) = made
    assert kwargs["scheduler_file"] == str(scheduler_file) and kwargs["timeout"] == "10s"
    assert isinstance(kwargs["security"], distributed.Security)
    with backend._client(HostOptions("dask")) as none:
        assert none is None


@pytest.fixture(scope="module")
def tls_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, Any]]]:
    """A LocalCluster speaking only TLS (one self-signed certificate for every role) and the client's
    Dask configuration for it."""
    if shutil.which("openssl") is None:
        pytest.skip("no openssl to make a certificate")
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=dask-test",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    roles = {
        f"tls_{r}_{k}": str(p)
        for r in ("scheduler", "worker", "client")
        for k, p in (("cert", cert), ("key", key))
    }
    security = distributed.Security(tls_ca_file=str(cert), require_encryption=True, **roles)
    path = folder / "scheduler.json"
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=1, processes=False, protocol="tls://", security=security,
        dashboard_address=None, scheduler_kwargs={"scheduler_file": str(path), "dashboard": False},
    ):  # fmt: skip
        yield path, _tls_config(str(cert), str(cert), str(key))


def test_tls_cluster_through_dask_configuration(
    tmp_path: Path, tls_cluster: tuple[Path, dict[str, Any]]
) -> None:
    path, config = tls_cluster
    assert json.loads(path.read_text())["address"].startswith("tls://")
    code, output = _run(tmp_path, "bare", "--scheduler-file", str(path))
    assert code == 2 and "speaks TLS" in output and output.count("\n") == 1
    with dask.config.set(config):
        code, output = _run(tmp_path, "o", "--scheduler-file", str(path))
    assert code == 0, output
    np.testing.assert_array_equal(np.load(tmp_path / "o" / "w.npy"), _reference(tmp_path))
