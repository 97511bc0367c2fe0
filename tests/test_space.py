"""Ready to push to a Hugging Face Space: binaries and big files under Git LFS, a CPU build of torch at the
pinned version, and the Space's front matter complete."""
from __future__ import annotations

import fnmatch
import re
import subprocess

from conftest import ROOT

BINARY_SUFFIXES = {".safetensors", ".npz", ".model", ".png", ".jpg", ".gif", ".pt", ".bin", ".gz", ".zip"}


def lfs_patterns() -> list[str]:
    lines = (ROOT / ".gitattributes").read_text(encoding="utf-8").splitlines()
    return [ln.split()[0] for ln in lines if ln.strip() and not ln.startswith("#") and "filter=lfs" in ln]


def tracked_files() -> list[str]:
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True)
    if out.returncode != 0:   # not a git checkout: every file of the tree
        return [str(p.relative_to(ROOT)) for p in ROOT.rglob("*") if p.is_file() and ".git" not in p.parts]
    return out.stdout.splitlines()


def test_every_binary_and_big_file_is_stored_with_lfs():
    patterns = lfs_patterns()
    for name in tracked_files():
        path = ROOT / name
        if not path.is_file():
            continue
        binary = path.suffix in BINARY_SUFFIXES or b"\0" in path.read_bytes()[:8000]
        if binary or path.stat().st_size > 10_000_000:
            assert any(fnmatch.fnmatch(path.name, p) for p in patterns), \
                f"{name} is not covered by .gitattributes"


def test_the_space_installs_the_cpu_build_of_the_pinned_torch():
    pinned = re.search(r"^torch==([\d.]+)\s*$", (ROOT / "requirements.txt").read_text(), re.M).group(1)
    pre = (ROOT / "pre-requirements.txt").read_text()
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in pre
    assert re.search(rf"^torch=={re.escape(pinned)}\+cpu\s*$", pre, re.M)


def test_front_matter_names_the_python_version_and_the_app():
    front = (ROOT / "README.md").read_text(encoding="utf-8").split("---")[1]
    assert re.search(r'^python_version: "3\.\d+"$', front, re.M)
    assert re.search(r"^app_file: app\.py$", front, re.M) and re.search(r"^sdk: gradio$", front, re.M)
