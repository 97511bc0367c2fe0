"""The load script, short: the lecture scenario (several users, the same sentence within a second,
then each steps through it) driven as a browser drives the page; no errors, no crossed results."""
from __future__ import annotations

import json
import subprocess
import sys

from conftest import ROOT


def run_load(*args) -> dict:
    r = subprocess.run([sys.executable, "bench/load_test.py", *args, "--json"], cwd=ROOT, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_lecture_scenario_short_run(bundled_checkpoint):
    res = run_load("--scenario", "lecture", "--users", "4", "--think", "0.2")
    assert res["errors"] == 0 and res["crossed"] == 0
    acts = res["per_action"]
    assert acts["translate"]["n"] == 4 and acts["next step"]["n"] >= 4
