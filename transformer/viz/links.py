"""Links that open a view: ``?text=...&tab=...&step=...&kind=...&layer=...&head=...``.

Pure functions (no gradio, no torch): read a URL query into a checked :class:`ViewQuery`, and
write the query of what is on screen. A value that is missing keeps the view's default; a value
that is wrong also keeps the default and is named in a note, never an error.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Mapping, Optional, Sequence
from urllib.parse import urlencode

from ..causal import MAX_PARTS_TEXT, METHODS, parse_parts, parts_text
from ..config import MAX_INPUT_CHARS
from ..trace import KINDS
from .figure import COLORSCALES
from .toy import PARAGRAPHS as TOY_CHOICES

LINK_KEYS = ("text", "tab", "step", "kind", "layer", "head", "mode", "scale", "choice",
             "knockout", "method", "rank", "b", "at", "piece")   # the last six: Knock it out's (causal.py)
MODES = ("head", "mean", "rollout")     # the explorer's "Show": one head, the mean over heads, rollout
MEAN = "mean"
# Links made before the Compare view's English → French companions went (their variant=, now the
# toy run's choice=)
OLD_VARIANTS = {"learned-positions": "positions", "no-scaling": "scale", "pre-norm": "norm",
                "one-head": "heads"}


@dataclass(frozen=True)
class ViewQuery:
    """What a link asks for; None = not asked (or not valid): the view keeps its default."""

    text: str
    tab: str
    step: Optional[int] = None
    kind: Optional[str] = None
    layer: Optional[int] = None
    head: Optional[str] = None      # "mean" or "1".."H"
    mode: Optional[str] = None      # the explorer's: "head", "mean" or "rollout"
    scale: Optional[str] = None     # the colour scale (figure.COLORSCALES)
    choice: Optional[str] = None    # the Compare view's design choice (viz/toy.py: positions, scale, ...)
    knockout: Optional[str] = None  # Knock it out: the parts switched off ("cross L3 H6, enc L2 ffn")
    method: Optional[str] = None    # ... zeroed or mean-replaced
    rank: Optional[int] = None      # ... every head ranked: for the whole translation (0) or one step's piece
    b: Optional[str] = None         # ... patching: sentence B
    at: Optional[int] = None        # ... the step read (0: the first where A's and B's translations differ)
    piece: Optional[str] = None     # ... the piece read (empty: A's there)


def _whole(value: str) -> Optional[int]:
    v = str(value).strip()
    return int(v) if v.isascii() and v.isdigit() and len(v) <= 4 else None


def _positive_int(value: str) -> Optional[int]:
    try:
        n = int(str(value).strip())
    except ValueError:
        return None
    return n if n >= 1 else None


def parse_query(params: Mapping[str, str], tabs: Sequence[str], default_text: str,
                default_tab: str) -> tuple[ViewQuery, list[str]]:
    """Check the form of each value (the ranges need the model and trace: :func:`fit_ranges`)."""
    notes = []
    get = lambda k: (params.get(k) or "").strip()   # noqa: E731
    text = get("text")[:4 * MAX_INPUT_CHARS]
    if "text" in params and not text:
        notes.append("The link's text is empty: showing an example instead.")
    tab = get("tab").lower() or default_tab
    if tab not in tabs:
        notes.append(f"The link asks for a view 'tab={get('tab')[:40]}' that does not exist: "
                     f"showing '{default_tab}' (views: {', '.join(tabs)}).")
        tab = default_tab
    values = {}
    for key in ("step", "layer"):
        if get(key):
            values[key] = _positive_int(get(key))
            if values[key] is None:
                notes.append(f"The link's {key}={get(key)[:40]} is not a number from 1 up: using the "
                             f"default.")
    kind = get("kind").lower() or None
    if kind is not None and kind not in KINDS:
        notes.append(f"The link's kind={get('kind')[:40]} is not one of {', '.join(KINDS)}: using the "
                     f"default.")
        kind = None
    head = get("head").lower() or None
    if head is not None and not (head.startswith(MEAN) or _positive_int(head)):
        notes.append(f"The link's head={get('head')[:40]} is neither 'mean' nor a head number: using the "
                     f"default.")
        head = None
    head = MEAN if head and head.startswith(MEAN) else (str(_positive_int(head)) if head else None)
    mode = get("mode").lower() or None
    if mode is not None and mode not in MODES:
        notes.append(f"The link's mode={get('mode')[:40]} is not one of {', '.join(MODES)}: using the "
                     f"default.")
        mode = None
    scale = (next((s for s in COLORSCALES if s.lower() == get("scale").lower()), None) if get("scale")
             else None)
    if get("scale") and scale is None:
        notes.append(f"The link's scale={get('scale')[:40]} is not one of {', '.join(COLORSCALES)}: using "
                     f"the default.")
    choice = get("choice").lower() or OLD_VARIANTS.get(get("variant").lower()) or None
    if get("variant") and not get("choice") and get("variant").lower() not in OLD_VARIANTS:
        notes.append(f"The link's variant={get('variant')[:40]} names an English → French companion model "
                     f"that "
                     "is no longer bundled: showing the first design choice.")
    if choice is not None and choice not in TOY_CHOICES:
        notes.append(f"The link's choice={get('choice')[:40]} is not one of {', '.join(TOY_CHOICES)}: "
                     "using the default.")
        choice = None
    causal, more = causal_query(get)
    return ViewQuery(text or default_text, tab, values.get("step"), kind, values.get("layer"), head, mode,
                     scale, choice, **causal), notes + more


def causal_query(get) -> tuple[dict, list[str]]:
    """Knock it out's values, each checked (a part list as causal.parse_parts reads it); notes for the wrong
    ones."""
    out, notes = {}, []
    if get("method"):
        out["method"] = get("method").lower() if get("method").lower() in METHODS else None
        if out["method"] is None:
            notes.append(f"The link's method={get('method')[:40]} is not zero or mean: using zero.")
    if get("knockout"):
        try:
            ko = parse_parts(get("knockout")[:MAX_PARTS_TEXT], out.get("method") or "zero")
            out["knockout"] = parts_text(ko) or None
        except ValueError as e:
            notes.append(f"The link's knockout: {e}")
    for key in ("rank", "at"):
        if get(key):
            out[key] = _whole(get(key))
            if out[key] is None:
                notes.append(f"The link's {key}={get(key)[:40]} is not a whole number: left out.")
    if get("b"):
        out["b"] = get("b")[:MAX_INPUT_CHARS]
    if get("piece"):
        out["piece"] = get("piece")[:100]
    return out, notes


def fit_ranges(q: ViewQuery, n_steps: int, n_layers: int, n_heads: int, mean_allowed: bool = True
               ) -> tuple[ViewQuery, list[str]]:
    """Drop the values out of range for this sentence and model (naming each in a note)."""
    notes, changes = [], {}
    if q.step is not None and q.step > n_steps:
        notes.append(f"This translation has {n_steps} steps, not {q.step}: showing step 1.")
        changes["step"] = None
    if q.layer is not None and q.layer > n_layers:
        notes.append(f"This attention has {n_layers} layers, not {q.layer}: using the default layer.")
        changes["layer"] = None
    if q.head == MEAN and not mean_allowed:
        notes.append("This view shows one head at a time, not the mean: using head 1.")
        changes["head"] = None
    elif q.head is not None and q.head != MEAN and int(q.head) > n_heads:
        notes.append(f"The model has {n_heads} heads, not {q.head}: using the default head.")
        changes["head"] = None
    return replace(q, **changes), notes


def view_params(text: str, tab: str, **view) -> dict[str, str]:
    """The link parameters of a view: text, tab, and the view's values that are set (None and empty ones are
    left out; "mean over heads" is ``mean``)."""
    params = {"text": text, "tab": tab}
    for key in LINK_KEYS[2:]:
        value = view.get(key)
        if value is not None and str(value) != "":
            if key == "head":
                value = MEAN if str(value).lower().startswith(MEAN) else value
            params[key] = str(int(value)) if isinstance(value, float) else str(value)
    return params


def query_string(text: str, tab: str, **view) -> str:
    """``?text=...&tab=...`` plus the view's values that are set."""
    return "?" + urlencode(list(view_params(text, tab, **view).items()))
