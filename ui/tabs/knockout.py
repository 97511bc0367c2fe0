"""Knock it out: switch parts of the model off for the sentence on screen and translate again; rank every head
by what the translation loses without it; patch parts of a second sentence's run into the first's (issue 40).
"""
from __future__ import annotations

import functools
import html
from types import SimpleNamespace

import gradio as gr
import numpy as np

from transformer import causal, examples, params
from transformer.probes import knockout, patching
from transformer.serving.trace_cache import TraceCache
from transformer.serving.translator import Translator
from transformer.viz import causal as causal_views
from transformer.viz.analysis import head_summary
from transformer.viz.figure import empty_figure

from ..inputs import ChoiceDropdown, ChoiceRadio, TextInput, WholeSlider
from ..page import Fit, Page, TabView, code_panel, look_of, safe_view
from ..settings import APP_CAUSAL_CONCURRENCY

PART_CHOICES = [("cross-attention", "cross"), ("encoder self-attention", "enc"),
                ("decoder masked self-attention", "dec"), ("encoder feed-forward", "enc ffn"),
                ("decoder feed-forward", "dec ffn"), ("positional encoding, source", "positions source"),
                ("positional encoding, target", "positions target")]
METHOD_CHOICES = [("zero it", "zero"), ("its mean over the positions", "mean")]
ALL_HEADS = "every head"
CLASSIC_A = next(c.text for c in examples.CLASSICS if c.text.endswith("too wide."))
CLASSIC_B = next(c.text for c in examples.CLASSICS if c.text.endswith("too tired."))
TABLE_HEADERS = ["rank", "kind", "layer", "head", "Δ log p", "entropy", "head summary", "ρ with attribution"]
WHOLE = 0                                   # the "For" choice: the whole translation
FIRST_DIFFERENCE = ("the first step where A's and B's translations differ", 0)


def part_text(part: str, layer: int, head: str) -> str:
    """The picker's part as the box writes it (causal.parse_parts reads it)."""
    if part.startswith("positions"):
        return part
    kind, *ffn = part.split()
    if ffn:
        return f"{kind} L{layer} ffn"
    return f"{kind} L{layer}" if head == ALL_HEADS else f"{kind} L{layer} H{head}"


def add_part(current: str, part: str, layer, head) -> str:
    new = part_text(str(part or "cross"), int(layer or 1), str(head or "1"))
    have = [p.strip() for p in str(current or "").split(",") if p.strip()]
    return ", ".join(have if new in have else [*have, new])


def user_error(fn):
    """A ValueError (the user's mistake, said in words) as Gradio's one-line message, without a traceback; the
    wrapped function's name, signature and types kept (the API's page reads them)."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except ValueError as e:
            raise gr.Error(str(e), print_exception=False) from None
    return wrapper


def knockout_api(translator: Translator):
    @user_error
    def switch_off(english: str, parts: str, method: str = "zero") -> dict:
        """`english` translated again with `parts` switched off (e.g. "cross L3 H6, enc L2 ffn, positions
        source"), each zeroed (`method` = zero) or replaced by its mean over the sentence's positions (mean):
        both translations, and each original piece's probability before and after (teacher forcing)."""
        ko = causal.parse_parts(parts, method)
        if ko.empty:
            raise ValueError(f"Name at least one part to switch off. {causal.PART_HELP}")
        return causal.knockout_json(translator.knock_out(english, ko))
    return switch_off


def importance_api(translator: Translator):
    @user_error
    def head_importance(english: str, method: str = "zero", step: int = 0) -> dict:
        """Every head of `english`'s translation knocked out alone: Δ log p of the whole translation (or, with
        `step` ≥ 1, of that step's piece), ranked, and per step."""
        n = len(translator.limited_trace(english).tgt_pieces)             # the step checked before any work
        s = None if step in (None, 0, "") else params.whole_number(step, "step", 1, n)
        return causal.importance_json(translator.head_importance(english, method), s)
    return head_importance


def patching_api(translator: Translator):
    @user_error
    def patch(english_a: str, english_b: str, step: int = 0, piece: str = "") -> dict:
        """Sentence A's run with each part of sentence B's copied in (B: A with one word changed, as many
        pieces): p(piece) at `step` (0: the first step where their translations differ; piece: A's there)
        after each patch."""
        return causal.patch_json(translator.patching(english_a, english_b, step, piece))
    return patch


def importance_extras(translator: Translator, trace, text: str) -> dict:
    """What the ranking is drawn beside: each head's entropy and label (the head summary, from the trace) and
    each cross-attention head's agreement with gradient × input (one backward pass)."""
    entropy, labels = {}, {}
    for kind in causal.HEAD_KINDS:
        maps = trace.attention(kind)
        rows = head_summary(maps.probs, kind)
        L, H = maps.layers, maps.heads
        entropy[kind] = np.array([[rows[l * H + h].entropy for h in range(H)] for l in range(L)])
        labels[kind] = [[rows[l * H + h].label for h in range(H)] for l in range(L)]
    try:
        _, attrs = translator.attribution(text, "gradient_x_input")
        agreement = {"cross": causal_views.head_agreement(attrs[0].scores, trace.cross.probs)}
    except ValueError:                        # beyond attribution's limits: the column stays empty
        agreement = {}
    return dict(entropy=entropy, labels=labels, agreement=agreement)


def error_html(message: str) -> str:
    return f'<div class="knockout-result"><p><b>{html.escape(message)}</b></p></div>'


class CausalCache:
    """The experiments of the sentences asked lately, computed once for everyone (a room's followers in their
    four looks, a change of look, the page's redraws): single-flight and bounded like the translator's traces
    (``TraceCache``; results are small). Each answer is (result, None) or (None, the reason it
    could not run)."""

    def __init__(self, translator: Translator, size: int = 96, maxbytes: int = 64 * 2**20) -> None:
        self.tr = translator
        self.cache = TraceCache(size, frozen=lambda r: r, maxbytes=maxbytes)

    def knock_out(self, text: str, parts: str, method: str):
        return self.cache.get(("knockout", text, parts, method), lambda: self._knock_out(text, parts, method))

    def importance(self, text: str, method: str):
        return self.cache.get(("importance", text, method), lambda: self._importance(text, method))

    def patching(self, text: str, b: str, step: int, piece: str):
        return self.cache.get(("patching", text, b, step, piece),
                              lambda: self._patching(text, b, step, piece))

    def _knock_out(self, text: str, parts: str, method: str):
        try:
            return self.tr.knock_out(text, causal.parse_parts(parts, method)), None
        except ValueError as e:
            return None, str(e)

    def _importance(self, text: str, method: str):
        hi = self.tr.head_importance(text, method)
        return hi, importance_extras(self.tr, self.tr.trace(text), text)

    def _patching(self, text: str, b: str, step: int, piece: str):
        try:
            return self.tr.patching(text, b, step or None, piece), None
        except ValueError as e:
            return None, str(e)


def knockout_section(page: Page) -> SimpleNamespace:
    """The parts to switch off (picked or typed), how, the button, the two translations and their figure."""
    gr.Markdown("Switch parts of the model off for the sentence above and translate again: attention shows "
                "where the model looked, a knock-out shows what it needs. A part is **zeroed** (its output "
                "replaced by nothing; a head's output counts its 1/h share of the sub-layer's bias) or "
                "replaced by **its mean** over the sentence's positions (the decoder's parts: over the "
                "original translation's; a gentler test).", elem_classes="view-caption")
    c = SimpleNamespace()
    with gr.Row(equal_height=True):
        c.part = ChoiceDropdown(PART_CHOICES, value="cross", label="Part", scale=3, min_width=240,
                                elem_id="ko-part")
        c.layer = WholeSlider(1, max(page.cfg.n_encoder_layers, page.cfg.n_decoder_layers), value=1, step=1,
                              label="Layer", scale=2, min_width=160, elem_id="ko-layer")
        c.head = ChoiceDropdown([ALL_HEADS] + page.head_choices[1:], value="1", label="Head", scale=1,
                                min_width=130, elem_id="ko-head")
        c.add = gr.Button("Add", scale=0, min_width=100, elem_id="ko-add")
    with gr.Row(equal_height=True):
        c.parts = TextInput(label="Switched off (type or add; e.g. cross L3 H6, enc L2 ffn, positions "
                                  "source)",
                            scale=4, max_length=causal.MAX_PARTS_TEXT, elem_id="ko-parts")
        c.method = ChoiceRadio(METHOD_CHOICES, value="zero", label="Each part: replace it by", scale=2,
                               min_width=260, elem_id="ko-method")
        with gr.Column(scale=1, min_width=180):
            c.run = gr.Button("Knock out and translate", variant="primary", elem_id="ko-btn")
            c.clear = gr.Button("Clear", size="sm", elem_id="ko-clear")
    c.ko_html = gr.HTML(elem_id="ko-result")            # the two translations, whole, above their figure
    c.ko_plot = gr.Plot(show_label=False, label="The original translation through the knocked-out model",
                        elem_id="ko-plot")
    return c


def rank_section(c: SimpleNamespace) -> None:
    """Which heads matter: the piece to rank for, the button, the map, entropy against loss, the table."""
    gr.Markdown("**Which heads matter?** Every head knocked out alone (the method above), in batched passes: "
                "how much log-probability the translation loses without it, beside how focused the head "
                "looks.")
    with gr.Row(equal_height=True):
        c.target = ChoiceDropdown([("the whole translation", WHOLE)], value=WHOLE, label="For", scale=3,
                                  min_width=240, elem_id="ko-target")
        c.rank = gr.Button("Rank every head", variant="primary", scale=1, elem_id="ko-rank-btn")
    c.rank_text = gr.Markdown(elem_id="ko-rank-text")
    with gr.Row():
        c.rank_plot = gr.Plot(show_label=False, label="Each head knocked out alone", elem_id="ko-rank-plot")
        c.scatter = gr.Plot(show_label=False, label="Entropy against loss", elem_id="ko-scatter")
    c.table = gr.Dataframe(headers=TABLE_HEADERS, label="The heads the translation needs most",
                           interactive=False, wrap=True, elem_id="ko-table")


def patch_section(c: SimpleNamespace) -> None:
    """Patching: sentence B, the step and piece read, the button, the result and its three maps."""
    gr.Markdown("**Patching between two sentences.** Type sentence B: sentence A (above) with one word "
                "changed, as many pieces. Each part of B's run is copied alone into A's, and the map shows "
                "how far it moves the piece's probability from A's value towards B's: where the difference "
                "is carried.")
    with gr.Row(equal_height=True):
        c.other = TextInput(label="Sentence B", scale=4, max_length=500, elem_id="ko-other")
        c.classic = gr.Button("The classic pair", scale=1, min_width=150, elem_id="ko-classic")
    with gr.Row(equal_height=True):
        c.pstep = ChoiceDropdown([FIRST_DIFFERENCE], value=0, label="Read at", scale=2, min_width=240,
                                 elem_id="ko-patch-step")
        c.piece = TextInput(label="Piece (empty: A's piece there)", scale=2, max_length=100,
                            elem_id="ko-patch-piece")
        c.patch_btn = gr.Button("Patch", variant="primary", scale=1, elem_id="ko-patch-btn")
    c.patch_html = gr.HTML(elem_id="ko-patch-result")
    c.patch_plot = gr.Plot(show_label=False, label="The encoder's residual stream", elem_id="ko-patch-plot")
    with gr.Row():
        c.patch_parts = gr.Plot(show_label=False, label="Sub-layers", elem_id="ko-patch-parts")
        c.patch_heads = gr.Plot(show_label=False, label="Heads", elem_id="ko-patch-heads")


def drawer(cached: CausalCache):
    """The tab's view from plain values (a link's, a room's): each experiment through the shared cache."""
    @safe_view
    def draw_knockout(trace, parts_v, method_v, rank_v, b_v, at_v, piece_v, look, large, scale, narrow=False):
        lk = look_of(look, large, scale, narrow)
        note = lambda text: empty_figure(text, lk.dark, lk.font)   # noqa: E731
        text, method_v = (trace.source.text if trace is not None else ""), method_v or "zero"
        ko = ("", note("Add the parts to switch off, then press Knock out and translate."))
        ranked = ("", note("Press Rank every head."), note("Press Rank every head."), [])
        patched = ("", *(note("Type sentence B and press Patch.") for _ in range(3)))
        if trace is not None and parts_v:
            r, error = cached.knock_out(text, parts_v, method_v)
            ko = (causal_views.knockout_html(r),
                  causal_views.knockout_figure(r, lk.dark, lk.font)) if r else \
                (error_html(error), note("This knock-out could not be run."))
        if trace is not None and rank_v is not None:
            ranked = ranking_view(*cached.importance(text, method_v), rank_v, lk)
        if trace is not None and b_v:
            pm, error = cached.patching(text, b_v, int(at_v or 0), piece_v or "")
            patched = ((causal_views.patch_html(pm), causal_views.patch_residual_figure(pm, lk.dark, lk.font),
                        causal_views.patch_parts_figure(pm, lk.dark, lk.font),
                        causal_views.patch_heads_figure(pm, lk.dark, lk.font)) if pm else
                       (error_html(error), *(note("This patching could not be run.") for _ in range(3))))
        return (*ko, *ranked, *patched)
    return draw_knockout


def ranking_view(hi, extras: dict, rank_v: int, lk) -> tuple:
    step = None if int(rank_v) == WHOLE else min(int(rank_v), len(hi.tgt_pieces))
    return (causal_views.importance_caption(hi, step),
            causal_views.importance_figure(hi, step, lk.dark, lk.font),
            causal_views.importance_scatter(hi, step, extras["entropy"], extras["agreement"], lk.dark,
                                            lk.font),
            causal_views.importance_table(hi, step, extras["entropy"], extras["labels"], extras["agreement"]))


def fit_steps(trace, ranked_v=None, at_v=0):
    """A new sentence: its steps to choose from, showing the ranking's and the patching's as they stand (set
    by a button, or by a link: the knock-out, the ranking and sentence B stay; the view says when B no longer
    fits the new sentence)."""
    steps = [] if trace is None else [(f"step {i}: {p}", i) for i, p in enumerate(trace.tgt_pieces, 1)]
    inside = lambda v: int(v) if v is not None and 0 < int(v) <= len(steps) else 0   # noqa: E731
    return (gr.update(choices=[("the whole translation", WHOLE), *steps], value=inside(ranked_v)),
            gr.update(choices=[FIRST_DIFFERENCE, *steps], value=inside(at_v)))


def shown(trace) -> str:
    if trace is None:
        raise ValueError("Translate a sentence first.")
    return trace.source.text


def appliers(cached: CausalCache):
    """The buttons' handlers: each checks and computes (a mistake said at once; the draw then reads the cache)
    and sets the tab's plain values."""
    @user_error
    def apply_knockout(trace, parts_v, method_v):
        ko = causal.parse_parts(parts_v or "", method_v or "zero")
        if ko.empty:
            raise ValueError("Add at least one part to switch off (or type one, e.g. cross L3 H6).")
        parts_v = causal.parts_text(ko)
        r, error = cached.knock_out(shown(trace), parts_v, ko.method)
        if r is None:
            raise ValueError(error)
        return parts_v, parts_v

    @user_error
    def apply_rank(trace, method_v, target_v):
        cached.importance(shown(trace), method_v or "zero")
        return int(target_v or WHOLE)

    @user_error
    def apply_patch(trace, b_v, step_v, piece_v):
        b_v = params.text(b_v, "sentence B").strip()
        if not b_v:
            raise ValueError("Type sentence B: the sentence above with one word changed.")
        pm, error = cached.patching(shown(trace), b_v, int(step_v or 0), piece_v or "")
        if pm is None:
            raise ValueError(error)
        return b_v, int(step_v or 0), piece_v or ""
    return apply_knockout, apply_rank, apply_patch


def build_knockout_tab(page: Page) -> TabView:
    c = knockout_section(page)
    rank_section(c)
    patch_section(c)
    code_panel(knockout.EditedRun.attention, knockout.EditedRun.sublayer, knockout.knockout_edits,
               knockout.head_importance, patching.patching)
    # What is shown, as plain values (a link and a live room carry them, and everyone who asks for the same
    # draws it once): the parts applied, the rank's target (None: not ranked; 0: the whole translation),
    # sentence B, the step and piece read. The method is the radio's.
    applied, ranked = gr.State(""), gr.State(None)
    other_b, at, at_piece = gr.State(""), gr.State(0), gr.State("")
    cached = CausalCache(page.translator)
    outputs = [c.ko_html, c.ko_plot, c.rank_text, c.rank_plot, c.scatter, c.table, c.patch_html, c.patch_plot,
               c.patch_parts, c.patch_heads]
    tab = TabView(drawer(cached), [applied, c.method, ranked, other_b, at, at_piece], outputs,
                  [Fit(fit_steps, [ranked, at], [c.target, c.pstep], after_branch=False)])
    tab.link = dict(knockout=applied, method=c.method, rank=ranked, b=other_b, at=at, piece=at_piece)
    apply_knockout, apply_rank, apply_patch = appliers(cached)
    quiet = dict(api_visibility="undocumented")
    draw = dict(fn=tab.draw, inputs=tab.inputs(page), outputs=outputs, concurrency_id="draw", **quiet)
    causal_events = dict(concurrency_id="causal", concurrency_limit=APP_CAUSAL_CONCURRENCY, **quiet)
    c.add.click(add_part, [c.parts, c.part, c.layer, c.head], c.parts, queue=False, **quiet)
    c.clear.click(lambda: ("", ""), None, [c.parts, applied], queue=False, **quiet).then(**draw)
    gr.on([c.run.click, c.parts.submit], apply_knockout, [page.trace, c.parts, c.method], [applied, c.parts],
          **causal_events).success(**draw)
    c.rank.click(apply_rank, [page.trace, c.method, c.target], ranked, **causal_events).success(**draw)
    c.target.input(lambda r, t: None if r is None else int(t or WHOLE), [ranked, c.target], ranked,
                   queue=False, **quiet).then(**draw)
    c.method.input(**draw)
    c.classic.click(lambda: (CLASSIC_A, CLASSIC_B), None, [page.english, c.other], queue=False, **quiet).then(
        None, js="() => document.getElementById('translate-btn').click()", **quiet)   # A translated; B ready
    gr.on([c.patch_btn.click, c.other.submit], apply_patch, [page.trace, c.other, c.pstep, c.piece],
          [other_b, at, at_piece], **causal_events).success(**draw)
    api = dict(concurrency_id="causal", concurrency_limit=APP_CAUSAL_CONCURRENCY)
    gr.api(knockout_api(page.translator), api_name="knockout", **api)
    gr.api(importance_api(page.translator), api_name="head_importance", **api)
    gr.api(patching_api(page.translator), api_name="patching", **api)
    return tab
