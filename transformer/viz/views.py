"""From a TranslationTrace to what the app shows: figures and escaped HTML. No torch, no gradio.

Every function here redraws from the trace alone (no model run), so moving a slider is cheap.
"""
from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..config import (BROAD_ENTROPY, PATTERN_THRESHOLD, PE_DEFAULT_DIMS, PE_MIN_POSITIONS,
                      PREFIX_SHOWN_PIECES, RARE_PIECE_COUNT)
from .style import BASE_FONT, PRESENTER_FONT
from ..pieces import EOS_PIECE, detokenize
from ..positional import sinusoidal_encoding
from .. import examples
from ..doubt import UNSURE_PIECE_P
from ..trace import AttentionKind, AttentionMaps, TranslationTrace
from . import analysis, figure, inside_plots, links, plots, positional_plots
from .presenter import smaller

KIND_TITLES = {
    "encoder": "Encoder self-attention",
    "decoder": "Decoder masked self-attention",
    "cross": "Cross-attention (decoder → source)",
}
AXIS_TITLES = {   # (query axis, key axis)
    "encoder": ("source piece (query)", "source piece (key)"),
    "decoder": ("decoder input (query)", "decoder input (key; hatched grey = future, masked)"),
    "cross": ("step → piece produced", "source piece"),
}


@dataclass
class Look:
    dark: bool = False
    large: bool = False            # presenter mode: larger type everywhere
    colorscale: str = figure.DEFAULT_SCALE
    narrow: bool = False           # a phone's column: multi-panel figures stack their panels

    @property
    def font(self) -> int:
        return PRESENTER_FONT if self.large else BASE_FONT


def query_labels(trace: TranslationTrace, maps: AttentionMaps) -> list[str]:
    """Row labels: the query pieces; for cross-attention, the piece each step produced ("→ chat")."""
    return [f"→ {figure.shown_piece(p)}" for p in trace.tgt_pieces] if maps.kind == "cross" else maps.queries


def clamp(value, lo: int, hi: int) -> int:
    return int(min(max(lo, int(value)), hi))


def head_choice(head: str | int | None) -> Optional[int]:
    """'mean' -> None, '3' -> 2 (0-based)."""
    if head is None or str(head).lower().startswith("mean"):
        return None
    return int(head) - 1


def n_steps(trace: Optional[TranslationTrace]) -> int:
    return len(trace.steps) if trace is not None else 0


def chips(pieces, cls: str) -> str:
    """Pieces as HTML chips (escaped: markup in the input is shown as text)."""
    return "".join(f'<span class="piece {cls}">{html.escape(figure.shown_piece(p))}</span>' for p in pieces)


def source_chips(trace: TranslationTrace) -> tuple[str, list[tuple[str, int]]]:
    """Source pieces as chips; pieces seen fewer than RARE_PIECE_COUNT times in training are marked,
    with their count on hover. Returns the HTML and the rare (piece, count) pairs."""
    counts = trace.source.train_counts
    if not counts:
        return chips(trace.src_pieces, "src"), []
    out, rare = [], []
    for p, c in zip(trace.src_pieces, counts):
        if c < RARE_PIECE_COUNT and p != EOS_PIECE:
            rare.append((p, c))
            out.append(f'<span class="piece src rare" title="seen {c} times in training">'
                       f'{html.escape(figure.shown_piece(p))}<sup>{c}</sup></span>')
        else:
            out.append(f'<span class="piece src" title="seen {c:,} times in training">'
                       f'{html.escape(figure.shown_piece(p))}</span>')
    return "".join(out), rare


def rare_note(rare: list[tuple[str, int]]) -> str:
    if not rare:
        return ""
    listed = ", ".join(f"{p} ({c}×)" for p, c in rare[:6])
    return (f'<div class="note rare-note">Marked pieces were rare in the training data (seen fewer than '
            f'{RARE_PIECE_COUNT} times; the small number is the count): {html.escape(listed)}. The model has '
            f'learned little about them, so expect a weaker translation there.</div>')


def target_chips(trace: TranslationTrace) -> str:
    """Target pieces as chips with their probability on hover; the unsure ones (doubt.py) marked."""
    unsure = {i for i, _, _ in trace.confidence.unsure}
    return "".join(f'<span class="piece tgt{" unsure" if i in unsure else ""}" title="p = {s.prob:.1%}">'
                   f'{html.escape(figure.shown_piece(s.piece))}</span>' for i, s in enumerate(trace.steps))


def confidence_line(trace: TranslationTrace) -> str:
    """One line on how sure the model was: the geometric mean of the chosen pieces' probabilities and
    the least likely pieces."""
    if trace.forced or not trace.steps:
        return ""
    conf = trace.confidence
    least = ", ".join(f"{html.escape(figure.shown_piece(p))} ({prob:.0%})" for _, p, prob in conf.unsure[:3])
    return (f'<div class="confidence"><b>Confidence</b>: the chosen pieces have a mean probability of '
            f'{conf.mean_prob:.0%} (geometric mean; mean log-probability {conf.mean_logprob:.2f})'
            + (f'; least sure, marked: {least}' if least else '; every piece above '
               f'{UNSURE_PIECE_P:.0%}') + '</div>')


def classic_link(c: examples.Classic) -> str:
    """The link (query string) of the view a classic names, as Copy link writes links."""
    view = dict(kv.split("=", 1) for kv in c.view.split("&"))
    return links.query_string(c.text, view.pop("tab"), **view)


def classic_line(text: str, link: bool = True) -> str:
    """For a classic of the attention literature (examples.py): where it is from and what to look at, and a
    link to that view (not in a standalone report, where a relative link leads nowhere); then what the
    training data holds of it (``.in-data``: presenter mode leaves it to the lecturer)."""
    c = examples.classic(text)
    if c is None:
        return ""
    data = f' <span class="in-data">{html.escape(c.in_data)}</span>' if c.in_data else ""
    return (f'<div class="classic"><b>A classic</b> ({html.escape(c.source)}): {html.escape(c.look)} '
            + (f'<a href="{html.escape(classic_link(c))}">Open that view</a>.' if link else "")
            + f'{data}</div>')


def pieces_html(trace: TranslationTrace, links: bool = True) -> str:
    """Source and target pieces as chips, the model's confidence, and the notes for the user."""
    notes = classic_line(trace.source.text, links) + "".join(f'<div class="note">{html.escape(n)}</div>'
                                                             for n in trace.notes)
    src, rare = source_chips(trace)
    notes = rare_note(rare) + notes
    return (f'<div class="pieces"><div><b>Source pieces</b> ({len(trace.src_pieces)}): {src}</div>'
            f'<div><b>Target pieces</b> ({len(trace.tgt_pieces)}): {target_chips(trace)}</div>'
            f'{confidence_line(trace)}{notes}</div>')


def run_info(trace: TranslationTrace) -> str:
    where = "GPU" if trace.device.startswith("cuda") else "CPU"
    msg = f"{where} ({trace.device}) · {trace.seconds * 1000:.0f} ms · {len(trace.steps)} decoding steps"
    if trace.timed_out:
        msg += " · stopped at the time limit"
    elif not trace.finished:
        msg += " · stopped at the output length limit"
    return msg


def prefix_chips(prefix: list[str], shown: int = PREFIX_SHOWN_PIECES) -> str:
    """The last `shown` pieces of the prefix as chips; earlier ones behind "…", whole on hover, so a
    long prefix never pushes the figures down."""
    if not prefix:
        return "<i>(nothing yet)</i>"
    if len(prefix) <= shown:
        return chips(prefix, "tgt")
    full = html.escape(" ".join(figure.shown_piece(p) for p in prefix), quote=True)
    return (f'<span class="piece" title="{full}">… {len(prefix) - shown} earlier</span>'
            + chips(prefix[-shown:], "tgt"))


def step_info_html(trace: TranslationTrace, step: int) -> str:
    """Step `step` (1-based): the decoder input so far, the chosen piece, the French so far."""
    s = trace.steps[step - 1]
    bos, *prefix = s.prefix
    prefix_html = prefix_chips(prefix)
    return (f'<div class="stepinfo"><div><b>Step {step} of {n_steps(trace)}</b> · decoder input so far: '
            f'<span class="piece">{html.escape(bos)}</span>{prefix_html}</div>'
            + ('<div>your piece: <span class="piece chosen">'
               f'{html.escape(figure.shown_piece(s.piece))}</span> with p = {figure.percent(s.prob)} '
               f'(the model\'s top choice: {html.escape(figure.shown_piece(s.topk_pieces[0]))})</div>'
               if trace.forced else
               '<div>chosen token: <span class="piece chosen">'
               f'{html.escape(figure.shown_piece(s.piece))}</span> with p = '
               f'{figure.percent(s.prob)}</div>')
            + f'<div>French so far: <b>{html.escape(detokenize(trace.tgt_pieces[:step]))}</b></div></div>')


def step_view(trace: TranslationTrace, step: int, layer: int, head, look: Look):
    """Step `step` (1-based): info HTML, top-k bar figure, cross-attention bar figure."""
    step = clamp(step, 1, n_steps(trace))
    s = trace.steps[step - 1]
    # a forced piece may be elsewhere
    chosen = s.topk_ids.index(s.token_id) if s.token_id in s.topk_ids else -1
    topk = plots.topk_bar(s.topk_pieces, s.topk_probs, chosen,
                          f"Top-{len(s.topk_pieces)} next pieces, step {step}", look.dark, look.font)
    h = head_choice(head)
    layer = clamp(layer, 1, trace.cross.layers)
    w = trace.cross.probs[layer - 1, :, step - 1]
    w = w.mean(0) if h is None else w[h]
    who = "mean over heads" if h is None else f"head {h + 1}"
    cross = plots.source_attention_bar(trace.src_pieces, w,
                                       f"Cross-attention at step {step}: layer {layer}, {who}", look.dark,
                                       look.font)
    return step_info_html(trace, step), topk, cross


def cross_steps_figure(trace: TranslationTrace, step: int, layer: int, head, look: Look):
    """Cross-attention of steps 1..step (one layer, one head or the mean), growing as the steps advance."""
    step = clamp(step, 1, n_steps(trace))
    layer = clamp(layer, 1, trace.cross.layers)
    h = head_choice(head)
    a = trace.cross.probs[layer - 1]
    a = a.mean(0) if h is None else a[h]
    who = "mean over heads" if h is None else f"head {h + 1}"
    return plots.cross_steps_heatmap(a, step, query_labels(trace, trace.cross), trace.src_pieces,
                                     f"Cross-attention, steps 1–{step} (layer {layer}, {who})",
                                     look.colorscale, look.dark, look.font)


def explorer_figure(trace: TranslationTrace, kind: AttentionKind, layer: int, head, mode: str, shared: bool,
                    look: Look):
    """The large map: one head, the mean over heads, or the rollout up to `layer`."""
    maps = trace.attention(kind)
    layer = clamp(layer, 1, maps.layers)
    h = head_choice(head)
    if mode == "rollout":
        if kind == "cross":
            z = analysis.cross_rollout(maps.probs, trace.encoder.probs)[layer - 1]
            title = (f"Cross-attention through the encoder's rollout (this app's extension), decoder layer "
                     f"{layer}")
        else:
            z = analysis.attention_rollout(maps.probs)[layer - 1]
            title = f"{KIND_TITLES[kind]}: attention rollout, layers 1–{layer}"
        zmax = None
    else:
        if h is None or mode == "mean":
            z = maps.probs[layer - 1].mean(0)
            title = f"{KIND_TITLES[kind]}: layer {layer}, mean over heads"
        else:
            z = maps.probs[layer - 1, h]
            title = f"{KIND_TITLES[kind]}: layer {layer}, head {h + 1}"
        zmax = float(maps.probs[layer - 1].max()) if shared else None
    ytitle, xtitle = AXIS_TITLES[kind]
    return plots.attention_heatmap(z, query_labels(trace, maps), maps.keys, title, maps.future, zmax,
                                   look.colorscale, look.dark, look.font, xaxis_title=xtitle,
                                   yaxis_title=ytitle)


def grid_figure(trace: TranslationTrace, kind: AttentionKind, shared: bool, look: Look):
    maps = trace.attention(kind)
    scale = "one colour scale for all heads" if shared else "each head scaled to its own maximum"
    if maps.causal:
        scale += "; grey = masked"
    return plots.attention_grid(maps.probs, query_labels(trace, maps), maps.keys,
                                f"{KIND_TITLES[kind]}: every layer × head ({scale})", maps.future, shared,
                                look.colorscale, look.dark, smaller(look.font, 2, 11))


def summary_view(trace: TranslationTrace, kind: AttentionKind, look: Look):
    maps = trace.attention(kind)
    rows = analysis.head_summary(maps.probs, kind)
    L, H = maps.layers, maps.heads
    ent = np.array([[r.entropy for r in rows[l * H:(l + 1) * H]] for l in range(L)])
    labels = [[rows[l * H + h].label for h in range(H)] for l in range(L)]
    scores = np.array([[rows[l * H + h].pattern_score for h in range(H)] for l in range(L)])
    patterns = [[rows[l * H + h].pattern for h in range(H)] for l in range(L)]
    ranks = np.array([[rows[l * H + h].rank for h in range(H)] for l in range(L)])
    # a phone: turned, one line a fact
    draw = plots.summary_heatmap_narrow if look.narrow else plots.summary_heatmap
    fig = draw(ent, labels, f"{KIND_TITLES[kind]}: entropy (0 = focused, 1 = uniform), label and "
                "rank (#1 = most distinctive)", "entropy", "Cividis", look.dark, look.font, scores, patterns,
                ranks)
    table = [[r.rank, r.layer, r.head, f"{r.distinct:.3f}", f"{r.entropy:.3f}", r.label, r.pattern,
              f"{r.pattern_score:.0%}"] for r in sorted(rows, key=lambda r: r.rank)]
    return fig, table


def summary_legend() -> str:
    """How the head summary's labels are made (thresholds from config.py), for the app and the report."""
    return (f"**How to read it.** A head is **labelled** with a pattern (*prev.* = previous piece, *next*, "
            f"*itself*, `</s>`, `<s>`, *diag.* = diagonal / monotonic) only when that pattern gets at least "
            f"{PATTERN_THRESHOLD:.0%} of its attention on average (the % in the cell); otherwise *broad* if "
            f"its entropy is above {BROAD_ENTROPY:.0%} of the maximum, else *mixed*, with the strongest "
            f"pattern in brackets. The table's *strongest pattern* is the best of the simple patterns even "
            f"when it is too weak to be the label. **#1, #2…** rank the heads by how much their attention "
            f"differs from the average head's (Jensen-Shannon divergence, 0 to 1, averaged over query rows; "
            f"the table's *distinctiveness*): a *mixed* head with a high rank is still worth a look. The "
            f"decoder's first row (which can only see `<s>`) is left out.")


def parse_dims(dims) -> list[int]:
    """The dimensions picked for the curves (strings from the app), or the default ones."""
    return [int(d) for d in dims if str(d).strip().lstrip("-").isdigit()] or list(PE_DEFAULT_DIMS)


def positional_views(trace: Optional[TranslationTrace], d_model: int, dims, look: Look,
                     max_pos: int = PE_MIN_POSITIONS):
    n = len(trace.src_pieces) if trace is not None else 0
    pe = sinusoidal_encoding(max(max_pos, n + 4), d_model)
    return (positional_plots.positional_heatmap(pe, n, dark=look.dark, font_size=look.font),
            positional_plots.positional_curves(pe, parse_dims(dims), n, look.dark, look.font,
                                    between=sinusoidal_encoding(0, d_model,
                                                                np.arange(0, len(pe) - 1 + 1e-9, 0.5))),
            positional_plots.positional_similarity(pe, n, look.dark, look.font))


def inside_view(trace: TranslationTrace, kind: AttentionKind, layer: int, head, query: int, unscaled: bool,
                look: Look):
    maps = trace.attention(kind)
    layer = clamp(layer, 1, maps.layers)
    h = head_choice(head)
    h = 0 if h is None else h
    q, k = query_labels(trace, maps), maps.keys
    steps = analysis.inside_head(maps.scores[layer - 1, h], trace.d_k, causal=maps.causal,
                                 scaled=trace.scaled)
    qi = clamp(query, 1, len(q)) - 1
    how = ("QKᵀ, ÷√d_k, mask, softmax" if trace.scaled
           else "QKᵀ, mask, softmax: this model does not divide by √d_k")
    fig = inside_plots.inside_head_figure(steps, q, k, trace.d_k, scaled=trace.scaled and not unscaled,
                                   title=f"Inside {KIND_TITLES[kind].lower()}, layer {layer}, head {h + 1} "
                                         f"(d_k = {trace.d_k}): {how}",
                                   dark=look.dark, font_size=smaller(look.font, 1, 11),
                                   colorscale=look.colorscale, query=qi, columns=1 if look.narrow else 2)
    sm_s, sm_u = steps.softmax[qi], steps.softmax_unscaled[qi]
    row = inside_plots.softmax_temperature_figure(steps.scaled[qi], sm_u, sm_s, k,
                                           f"Query {qi + 1} ({figure.esc(q[qi])}): scaling keeps the softmax "
                                           f"from saturating",
                                           look.dark, look.font)
    text = (f"For this query the largest weight is {sm_s.max():.2f} with scaling and {sm_u.max():.2f} "
            f"without; entropy {float(analysis.row_entropy(sm_s)):.2f} vs "
            f"{float(analysis.row_entropy(sm_u)):.2f} nats. Dot products grow with √d_k, so without the "
            f"division the softmax becomes nearly one-hot and its gradients vanish (paper, section 3.2.1)."
            + ("" if trace.scaled
               else " This model was trained without the division (the no-scaling variant): its "
               "weights are the ones without, panel 4."))
    return fig, row, text


def architecture_html(cfg, n_params: int) -> str:
    """A diagram of the layers, drawn from the config (no image files)."""
    def box(title, body, cls):
        return f'<div class="arch-box {cls}"><div class="arch-title">{title}</div><div>{body}</div></div>'
    def stacked(n):   # drawn once with "N ×", as in the paper's figure 1
        return f"<br><i>{n} such layers, one after the other, each with its own weights</i>"
    enc = box(f"Encoder layer × {cfg.n_encoder_layers}",
              "multi-head self-attention → add &amp; norm<br>feed-forward → add &amp; norm"
              + stacked(cfg.n_encoder_layers),
              "enc stack")
    dec = box(f"Decoder layer × {cfg.n_decoder_layers}",
              "masked self-attention → add &amp; norm<br>cross-attention → add &amp; norm<br>feed-forward → "
              "add &amp; norm"
              + stacked(cfg.n_decoder_layers), "dec stack")
    return f"""<div class="arch">
<div class="arch-col"><div class="arch-head">Encoder (English)</div>
{box("Input embedding × √d_model", f"{cfg.vocab_size:,} pieces × {cfg.d_model}", "emb")}
{box("+ positional encoding", "sinusoidal, fixed", "emb")}{enc}</div>
<div class="arch-arrow">memory ⟶<br>(keys &amp; values of<br>every cross-attention)</div>
<div class="arch-col"><div class="arch-head">Decoder (French)</div>
{box("Output embedding × √d_model", "shared with the encoder, tied to the output layer", "emb")}
{box("+ positional encoding", "sinusoidal, fixed", "emb")}{dec}
{box("Linear (tied) → softmax", f"next-piece probabilities over {cfg.vocab_size:,} pieces", "out")}</div>
</div>
<p class="arch-sizes">d_model = {cfg.d_model} · heads h = {cfg.n_heads} (d_k = d_v = {cfg.d_k}) ·
d_ff = {cfg.d_ff} · N = {cfg.n_encoder_layers} encoder + {cfg.n_decoder_layers} decoder layers ·
dropout {cfg.dropout} · {n_params:,} parameters · post-norm, ReLU, greedy decoding with a KV cache</p>"""
