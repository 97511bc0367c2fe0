"""A real redis-server for the tests: started on a port, stopped, hung (SIGSTOP) and started again."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time

import pytest


def redis_binary() -> str:
    server = shutil.which("redis-server")
    if server is None:
        if os.environ.get("CI"):
            pytest.fail("redis-server is not installed (CI installs it: apt-get install redis-server)")
        pytest.skip("redis-server is not installed (apt-get install redis-server); CI runs this test")
    return server


def start_redis(port: int) -> subprocess.Popen:
    """redis-server on 127.0.0.1:`port`, without persistence (a restart starts it empty); returns once it
    answers."""
    proc = subprocess.Popen([redis_binary(), "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "no"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return proc
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError(f"redis-server did not answer on port {port}")


def stop_redis(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
