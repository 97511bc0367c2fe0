"""The load script, short: several users at once, no errors, no crossed results."""
from __future__ import annotations

import json
import subprocess
import sys

from conftest import ROOT


def test_load_script_short_run(bundled_checkpoint):
    r = subprocess.run([sys.executable, "bench/load_test.py", "--users", "4", "--duration", "8", "--json"],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    res = json.loads(r.stdout.strip().splitlines()[-1])
    assert res["errors"] == 0 and res["crossed"] == 0
    assert res["translate"]["n"] >= 4 and res["slider"]["n"] >= 4
