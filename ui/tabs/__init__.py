"""One module per tab: each ``build_<name>_tab(page)`` lays out its controls, wires them and returns a
``TabView`` (``ui/page.py``). A tab uses only the parts ``Page`` declares, never another tab's internals."""
from __future__ import annotations

from .compare import build_compare_tab
from .explorer import build_explorer_tab
from .inside import build_inside_tab
from .knockout import build_knockout_tab
from .learning import build_learning_tab
from .positional import build_positional_tab
from .steering import build_steering_tab
from .steps import build_steps_tab
from .summary import build_summary_tab
from .why import build_why_tab

# (title, id in links, builder), in the order of the tab bar; "About" comes last (ui/demo.py).
TABS = [("Step by step", "steps", build_steps_tab), ("Attention explorer", "explorer", build_explorer_tab),
        ("Head summary", "summary", build_summary_tab),
        ("Positional encoding", "positional", build_positional_tab),
        ("Inside one head", "inside", build_inside_tab), ("Why this word", "why", build_why_tab),
        ("Knock it out", "knockout", build_knockout_tab),
        ("Your French & beams", "steer", build_steering_tab),
        ("How it learned", "learned", build_learning_tab), ("Compare", "compare", build_compare_tab)]
TAB_IDS = [tab_id for _, tab_id, _ in TABS] + ["about"]
DEFAULT_TAB = "steps"
