"""The page's wiring: the order of the tab bar is free (a tab uses only the parts the page declares, never
another tab's internals), and the public API needs no hidden component."""
from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def wiring(demo) -> list:
    """Every event's name (without the number Gradio appends to repeated names, which follows the order of
    building), inputs and outputs, by the components' elem_id (or their kind, for those without one)."""
    cfg = demo.config
    names = {c["id"]: c.get("props", {}).get("elem_id") or c["type"] for c in cfg["components"]}
    return sorted((re.sub(r"_\d+$", "", d.get("api_name") or ""), sorted(names[i] for i in d["inputs"]),
                   sorted(names[o] for o in d["outputs"])) for d in cfg["dependencies"])


def test_tabs_built_in_reverse_order_wire_the_same_events(tiny_translator, tmp_path, monkeypatch):
    import ui.demo
    from ui.tabs import TABS
    forward = wiring(ui.demo.build_demo(tiny_translator, tmp_path))
    monkeypatch.setattr(ui.demo, "TABS", list(reversed(TABS)))
    backward = wiring(ui.demo.build_demo(tiny_translator, tmp_path))
    forced = [outputs for name, _, outputs in forward if name == "forced_decoding"]
    assert forced and "step-slider" in forced[0]          # your French sets the step range
    assert backward == forward


def test_the_public_api_needs_no_hidden_component(tiny_translator, tmp_path):
    """Endpoints without page state are Gradio API routes (gr.api); those with it (/translate keeps this
    session's trace for /step_view) have no trigger on the page. No hidden button or number carries them."""
    import ui.demo
    cfg = ui.demo.build_demo(tiny_translator, tmp_path).config
    comps = {c["id"]: c for c in cfg["components"]}
    hidden = {i for i, c in comps.items() if c.get("props", {}).get("visible") is False}
    public = {d["api_name"]: d for d in cfg["dependencies"] if d.get("api_visibility", "public") == "public"}
    assert {"translate", "step_view", "explorer", "attribution", "what_if", "beam_search",
            "forced_decoding"} <= set(public)
    for name, d in public.items():
        used = {t[0] for t in d["targets"] if t[0] is not None} | set(d["inputs"]) | set(d["outputs"])
        assert not used & hidden, \
            f"/{name} uses hidden components {[comps[i]['type'] for i in used & hidden]}"
    assert not public["translate"]["targets"] and not public["what_if"]["targets"]   # no trigger on the page


def test_every_view_has_a_code_panel_with_the_functions_behind_it(tiny_translator, tmp_path):
    """Under every view (the About tab aside) a collapsed "Code" panel with the project's own source of what
    it draws; the attention panels show the line with the softmax (issue 42, item 5)."""
    import ui.demo
    cfg = ui.demo.build_demo(tiny_translator, tmp_path).config
    comps = {c["id"]: c for c in cfg["components"]}

    def below(node):
        for child in node.get("children", []):
            yield child["id"]
            yield from below(child)

    def tabs(node):
        if comps.get(node["id"], {}).get("type") == "tabitem":
            yield node
        for child in node.get("children", []):
            yield from tabs(child)

    seen = {}
    for tab in tabs(cfg["layout"]):
        label = comps[tab["id"]]["props"]["label"]
        codes = [comps[i]["props"].get("value") or "" for i in below(tab) if comps[i]["type"] == "code"]
        panels = [i for i in below(tab)
                  if comps[i]["type"] == "accordion" and comps[i]["props"].get("label") == "Code"]
        seen[label] = (panels, "\n".join(codes))
    views = {label: v for label, v in seen.items() if label != "About"}
    assert len(views) >= 9, sorted(seen)
    for label, (panels, code) in views.items():
        assert panels and "def " in code, label
    for label in ("Attention explorer", "Inside one head", "Compare", "Why this word"):
        assert "probs = torch.softmax(masked" in views[label][1], label
    assert "def record_replay" in views["How it learned"][1] and \
        "def beam_search" in views["Your French & beams"][1]


def test_every_view_has_a_code_panel_with_the_projects_own_source(tiny_translator, tmp_path):
    """Issue 42: a Code panel under every tab's view, holding the project's own functions (not an empty
    box)."""
    import ui.demo
    from ui.tabs import TAB_IDS
    cfg = ui.demo.build_demo(tiny_translator, tmp_path).config
    comps = {c["id"]: c for c in cfg["components"]}

    def within(node):
        yield node["id"]
        for child in node.get("children", []):
            yield from within(child)

    def tab_nodes(node):
        c = comps.get(node["id"], {})
        if c.get("type") == "tabitem" and c.get("props", {}).get("id") in TAB_IDS:
            yield c["props"]["id"], node
        for child in node.get("children", []):
            yield from tab_nodes(child)

    tabs = dict(tab_nodes(cfg["layout"]))
    assert set(tabs) == set(TAB_IDS), sorted(tabs)
    for tab, node in tabs.items():
        code = [comps[i] for i in within(node) if comps.get(i, {}).get("type") == "code"]
        assert code and all("def " in str(c["props"].get("value")) for c in code), tab
