"""The order of the tab bar is free: a tab uses only the parts the page declares, never another tab's
internals, so building the tabs in another order wires every event to the same components."""
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
