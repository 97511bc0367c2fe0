"""The README's file map ("The package") matches the tree (issue 42): every file or folder it names exists,
and every module of the package, the page, bench/ and tools/ is named in it, so a newcomer finds each from the
map alone."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SKIP = {"__init__.py", "__main__.py"}


def file_map() -> list[tuple[str, str]]:
    """(file column, role column) of each row of the README's file map."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    table = text[text.index("| group | file | role |"):].split("\n\n")[0]
    rows = [line.split(" | ") for line in table.splitlines()[2:]]
    return [(cells[1], cells[2]) for cells in rows]


def named_paths() -> set[Path]:
    """Each name in backticks in the file column: the first of a row is a path from the root, the next ones
    are beside it (`transformer/steering.py`, `why.py` names transformer/why.py)."""
    out = set()
    for files, _ in file_map():
        names = re.findall(r"`([^`]+)`", files)
        base = None
        for name in names:
            top = name.split("/")[0]
            path = ROOT / name if base is None or ("/" in name and (ROOT / top).is_dir()) else base / name
            base = base if base is not None else path.parent
            out.add(path)
    return out


def test_every_path_the_map_names_exists():
    missing = sorted(str(p.relative_to(ROOT)) for p in named_paths() if "<" not in str(p) and not p.exists())
    assert not missing, missing


def test_every_module_is_in_the_map():
    named = named_paths()
    folders = {p for p in named if p.is_dir()}
    tabs = next(role for files, role in file_map() if "ui/tabs/<tab>.py" in files)
    unnamed = []
    for pattern in ("transformer/**/*.py", "ui/*.py", "ui/static/*.js", "bench/*.py", "tools/*.py",
                    "tools/*.sh", "harness/*.py"):
        for path in sorted(ROOT.glob(pattern)):
            if path.name in SKIP or path in named or any(f in path.parents for f in folders):
                continue
            unnamed.append(str(path.relative_to(ROOT)))
    for path in sorted((ROOT / "ui" / "tabs").glob("*.py")):
        if path.name not in SKIP and f"`{path.stem}`" not in tabs:
            unnamed.append(str(path.relative_to(ROOT)))
    assert not unnamed, unnamed
