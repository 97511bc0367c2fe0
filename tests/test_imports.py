"""Dependencies point down: the model never imports serving, training never imports serving, the pictures
need neither torch nor gradio nor SentencePiece, and only ui/ and app.py import gradio.

Layers, from the bottom: the torch-free core (config, pieces, trace, doubt, examples, ...) -> model/ (the
paper and decoding) -> probes/ (what the app measures inside the model) and io/ -> training/ and serving/
(translator, batcher, trace cache, decoding processes) -> cli/ -> ui/ -> app.py. viz/ sits on the core only.
The page reaches the model only through serving's Translator: ui/ imports model/ and probes/ only to show
their code. bench/, tools/ and tests/ may import anything of the product, the product none of them; what the
three share lives in harness/ (which imports none of them), and none of the three imports another.
"""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SERVING = ("transformer.serving",)
PROBES = ("transformer.probes",)
OUTSIDE = ("ui", "app", "bench", "tools", "tests", "harness", "gradio")
# module prefix -> what it may never import (a prefix matches the module and everything under it)
FORBIDDEN = {
    "transformer": OUTSIDE,
    "transformer.model": ("transformer.io", "transformer.training", "transformer.cli", "transformer.viz",
                          *PROBES, *SERVING),
    "transformer.probes": ("transformer.io", "transformer.training", "transformer.cli", "transformer.viz",
                           *SERVING),
    "transformer.io": ("transformer.training", "transformer.cli", "transformer.viz", *PROBES, *SERVING),
    "transformer.training": ("transformer.cli", "transformer.viz", *SERVING),
    "transformer.serving": ("transformer.cli", "transformer.training", "transformer.viz"),
    "transformer.viz": ("torch", "sentencepiece", "transformer.model", "transformer.io",
                        "transformer.training", "transformer.cli", *PROBES, *SERVING),
    "ui": ("bench", "tools", "tests", "harness", "app"),
    "harness": ("bench", "tools", "tests"),   # what the three share: it imports none of them
    "tests": ("bench", "tools"),
    "bench": ("tools", "tests"),
    "tools": ("bench", "tests"),
}
TORCH_FREE = ["transformer.config", "transformer.params", "transformer.pieces", "transformer.trace",
              "transformer.doubt", "transformer.examples", "transformer.steering", "transformer.why",
              "transformer.causal", "transformer.votes", "transformer.replay", "transformer.positional",
              "transformer.viz.views", "transformer.viz.report", "transformer.viz.why",
              "transformer.viz.steering", "transformer.viz.learning", "transformer.viz.links",
              "transformer.viz.analysis", "transformer.viz.figure", "transformer.viz.plots",
              "transformer.viz.positional_plots", "transformer.viz.style", "transformer.viz.layer",
              "transformer.viz.votes", "transformer.viz.toy", "transformer.viz.narrow",
              "transformer.viz.inside_plots", "transformer.viz.presenter", "ui.settings"]


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, root: Path = ROOT) -> set[str]:
    """Every module a file imports (relative imports resolved), at any depth of the file."""
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module
            out.add(mod)
            out |= {f"{mod}.{a.name}" for a in node.names}     # `from . import plots` names a module
    return out


def product_files() -> list[Path]:
    return sorted(ROOT.glob("transformer/**/*.py")) + sorted(ROOT.glob("ui/**/*.py"))


def checked_files() -> list[Path]:
    """The product, and the tests, benchmarks and tools around it."""
    return product_files() + sorted(p for d in ("tests", "bench", "tools", "harness")
                                    for p in ROOT.glob(f"{d}/**/*.py"))


def matches(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def upward_imports(path: Path, root: Path = ROOT) -> list[tuple[str, str]]:
    """(what the file imports, the rule it breaks) for each import that points up."""
    name = module_name(path, root)
    return sorted({(imp, rule) for prefix, rules in FORBIDDEN.items() if matches(name, prefix)
                   for imp in imports_of(path, root) for rule in rules if matches(imp, rule)})


@pytest.mark.parametrize("path", checked_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_upward_import(path):
    bad = upward_imports(path)
    assert not bad, f"{module_name(path)} imports {bad[0][0]} ({bad[0][1]} is above it)"


def test_the_rule_catches_an_upward_import(tmp_path):
    """The check itself: a model module that imported the translator, or a view that imported torch."""
    model = tmp_path / "transformer" / "model" / "probe.py"
    view = tmp_path / "transformer" / "viz" / "probe.py"
    model.parent.mkdir(parents=True), view.parent.mkdir(parents=True)
    model.write_text("from ..serving.translator import Translator\n", encoding="utf-8")
    view.write_text("def f():\n    import torch\n", encoding="utf-8")
    assert ("transformer.serving.translator", "transformer.serving") in upward_imports(model, tmp_path)
    assert upward_imports(view, tmp_path) == [("torch", "torch")]
    helper = tmp_path / "tests" / "probe.py"
    helper.parent.mkdir()
    helper.write_text("from bench.load_test import Ids\n", encoding="utf-8")
    assert ("bench.load_test", "bench") in upward_imports(helper, tmp_path)
    script = tmp_path / "bench" / "probe.py"
    script.parent.mkdir()
    script.write_text("from tests.conftest import tiny_cfg\n", encoding="utf-8")
    assert ("tests.conftest", "tests") in upward_imports(script, tmp_path)


def test_the_core_and_the_pictures_load_without_torch_gradio_or_sentencepiece():
    code = ("import sys; sys.path.insert(0, '.')\n" + "".join(f"import {m}\n" for m in TORCH_FREE)
            + "print(sorted(m for m in ('torch', 'gradio', 'sentencepiece') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_page_reaches_the_model_only_through_the_translator():
    """ui/ may import model/ and probes/ only to show their code in a code panel (`code_panel(fn, ...)`):
    every use of a name it imports from them is inside such a call (or reads a constant of theirs, like the
    forms whose code the Inside tab shows), and no ui file reads a translator's `.model`."""
    for path in sorted(ROOT.glob("ui/**/*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {a.asname or a.name for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) and node.module
                 and node.module.startswith(("transformer.model", "transformer.probes")) for a in node.names}
        shown = {id(n) for call in ast.walk(tree) if isinstance(call, ast.Call)
                 and getattr(call.func, "id", None) == "code_panel" for arg in call.args
                 for n in ast.walk(arg)}
        # a module's constant (FORMS: the code shown)
        shown |= {id(node.value) for node in ast.walk(tree)
                  if isinstance(node, ast.Attribute) and node.attr.isupper()
                  and isinstance(node.value, ast.Name)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and node.id in names and isinstance(node.ctx, ast.Load):
                assert id(node) in shown, \
                    f"{path.relative_to(ROOT)}:{node.lineno} uses {node.id} outside a code panel"
            if isinstance(node, ast.Attribute) and node.attr == "model" and \
                    "translator" in ast.unparse(node.value):
                assert False, f"{path.relative_to(ROOT)}:{node.lineno} reaches into {ast.unparse(node)}"
