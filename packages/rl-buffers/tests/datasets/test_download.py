"""Resumable, checked downloads over a real local HTTP server."""

from __future__ import annotations

import hashlib
import os
import socket
import subprocess
import sys
import time

import pytest

from rl_buffers.datasets import _download
from rl_buffers.datasets._download import download, partial_path


def _payload(size: int) -> bytes:
    return os.urandom(size)


def test_download_writes_the_file_and_checks_its_digest(http_server, tmp_path):
    data = _payload(100_000)
    (http_server.folder / "a.bin").write_bytes(data)
    base, _ = http_server()
    dest = tmp_path / "root" / "a.bin"
    download(f"{base}/a.bin", dest, sha256=hashlib.sha256(data).hexdigest(), progress=True)
    assert dest.read_bytes() == data
    assert sorted(p.name for p in dest.parent.iterdir()) == ["a.bin"]


def test_a_killed_download_resumes_where_it_stopped(http_server, tmp_path):
    data = _payload(400_000)
    (http_server.folder / "big.bin").write_bytes(data)
    base, log = http_server(rate=200_000)  # about 2 s for the whole file
    dest = tmp_path / "root" / "big.bin"
    part = partial_path(dest)
    # The first download runs in its own process (the module alone: no torch import), which
    # the test kills half-way.
    code = (
        "import importlib.util, sys\n"
        f"spec = importlib.util.spec_from_file_location('dl', {_download.__file__!r})\n"
        "module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)\n"
        f"module.download({base + '/big.bin'!r}, {str(dest)!r}, progress=False)\n"
    )
    client = subprocess.Popen([sys.executable, "-c", code])
    try:
        deadline = time.monotonic() + 30
        while not (part.exists() and part.stat().st_size >= 100_000):
            assert client.poll() is None, "the download ended before it could be interrupted"
            assert time.monotonic() < deadline
            time.sleep(0.01)
    finally:
        client.kill()
        client.wait()
    kept = part.stat().st_size
    assert 0 < kept < len(data)
    assert not dest.exists()
    download(f"{base}/big.bin", dest, sha256=hashlib.sha256(data).hexdigest(), progress=False)
    assert dest.read_bytes() == data
    assert not part.exists()
    requests = log.read_text().splitlines()
    assert requests[0] == "/big.bin None"
    assert requests[-1] == f"/big.bin bytes={kept}-"  # the rest only


def test_a_wrong_digest_removes_the_file_and_names_the_url(http_server, tmp_path):
    (http_server.folder / "a.bin").write_bytes(b"x" * 1000)
    base, _ = http_server()
    dest = tmp_path / "root" / "a.bin"
    with pytest.raises(ValueError, match=rf"the file from {base}/a\.bin has SHA-256 .*expected 00"):
        download(f"{base}/a.bin", dest, sha256="00" * 32, progress=False)
    assert list(dest.parent.iterdir()) == []


def test_offline_errors_name_the_url_and_leave_nothing(tmp_path):
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/hopper-medium-v2.hdf5"
    dest = tmp_path / "root" / "hopper-medium-v2.hdf5"
    with pytest.raises(ConnectionError, match=rf"cannot reach {url}"):
        download(url, dest, progress=False)
    assert list(dest.parent.iterdir()) == []


def test_a_missing_file_names_the_url(http_server, tmp_path):
    base, _ = http_server()
    with pytest.raises(ConnectionError, match=rf"{base}/nope\.hdf5 answered HTTP 404"):
        download(f"{base}/nope.hdf5", tmp_path / "nope.hdf5", progress=False)
