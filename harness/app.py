"""Start app.py on 127.0.0.1 and a free port, for the tests and the benchmarks."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]   # the checkout: harness/app.py


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_app(extra_args=(), env=None, timeout: float = 120.0, cwd: Path = ROOT, port: int = 0):
    """Returns (process, url) once the app answers HTTP; its output goes to a temporary log file
    (``process.log_path``), never to an unread pipe that could fill up and stall it. `cwd`: the checkout
    whose app.py runs (another version, for before/after comparisons); `port`: a given one (an app restarted
    where it was), else a free one."""
    port = port or free_port()
    log = tempfile.NamedTemporaryFile("w", prefix="app-", suffix=".log", delete=False)
    proc = subprocess.Popen([sys.executable, "app.py", "--host", "127.0.0.1", "--port", str(port),
                             *extra_args],
                            cwd=cwd, stdout=log, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "GRADIO_ANALYTICS_ENABLED": "False", **(env or {})})
    proc.log_path = log.name
    url = f"http://127.0.0.1:{port}/"
    t0 = time.time()
    while time.time() - t0 < timeout:
        if proc.poll() is not None:
            raise RuntimeError(f"app exited with {proc.returncode}:\n{Path(log.name).read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return proc, url
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError(f"app did not answer within {timeout:.0f} s:\n{Path(log.name).read_text()[-3000:]}")


def stop_app(proc) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
