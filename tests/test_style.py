"""The house's limits (issue 42), checked on every run: ruff with the repository's ruff.toml (lines of at most
110 characters, pyflakes' checks), and no module over 400 lines in transformer/ and ui/, no function over 60
lines, app.py at most 100 lines."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_ruff_finds_nothing():
    run = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", str(ROOT)], cwd=ROOT,
                         capture_output=True, text=True)
    if "No module named ruff" in run.stderr:
        pytest.fail("ruff is not installed: python3 -m pip install -r requirements-dev.txt")
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]


def test_modules_and_functions_keep_their_size():
    big, long = [], []
    for path in [*ROOT.glob("transformer/**/*.py"), *ROOT.glob("ui/**/*.py"), ROOT / "app.py"]:
        text = path.read_text(encoding="utf-8")
        limit = 100 if path.name == "app.py" and path.parent == ROOT else 400
        if text.count("\n") > limit:
            big.append((str(path.relative_to(ROOT)), text.count("\n")))
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                    node.end_lineno - node.lineno >= 60:
                long.append((str(path.relative_to(ROOT)), node.name, node.end_lineno - node.lineno + 1))
    assert not big, big
    assert not long, long
