"""From a TranslationTrace to what the app shows: figures and escaped HTML. No torch, no gradio.

Every function here redraws from the trace alone (no model run), so moving a slider is cheap.
"""
from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Optional

import numpy as np

from . import analysis, plots
from .analysis import KIND_TITLES


@dataclass
class Look:
    dark: bool = False
    large: bool = False            # presenter mode: larger type everywhere
    colorscale: str = plots.DEFAULT_SCALE

    @property
    def font(self) -> int:
        return 19 if self.large else 14


def kind_data(trace, kind: str):
    """(probs, scaled scores, query labels, key labels, masked cells or None, axis titles) of one kind."""
    if kind == "encoder":
        return (trace.encoder_attn, trace.encoder_scores, trace.src_pieces, trace.src_pieces, None,
                ("source piece (query)", "source piece (key)"))
    T = len(trace.tgt_out_pieces)
    if kind == "decoder":
        masked = ~np.tril(np.ones((T, T), dtype=bool))
        return (trace.decoder_self_attn, trace.decoder_self_scores, trace.tgt_in_pieces, trace.tgt_in_pieces, masked,
                ("decoder input (query)", "decoder input (key; blank = future, masked)"))
    if kind == "cross":
        rows = [f"→ {p}" for p in trace.tgt_out_pieces]
        return (trace.cross_attn, trace.cross_scores, rows, trace.src_pieces, None,
                ("target step (→ token it produced)", "source piece"))
    raise ValueError(f"unknown attention kind {kind!r}")


def pieces_html(trace) -> str:
    """Source and target pieces as chips (escaped: markup in the input is shown as text)."""
    def chips(pieces, cls):
        return "".join(f'<span class="piece {cls}">{html.escape(p)}</span>' for p in pieces)
    notes = "".join(f'<div class="note">{html.escape(n)}</div>' for n in trace.notes)
    return (f'<div class="pieces"><div><b>Source pieces</b> ({len(trace.src_pieces)}): {chips(trace.src_pieces, "src")}</div>'
            f'<div><b>Target pieces</b> ({len(trace.tgt_out_pieces)}): {chips(trace.tgt_out_pieces, "tgt")}</div>{notes}</div>')


def run_info(trace) -> str:
    where = "GPU" if trace.device.startswith("cuda") else "CPU"
    msg = f"{where} ({trace.device}) · {trace.seconds * 1000:.0f} ms · {len(trace.steps)} decoding steps"
    if not trace.finished:
        msg += " · stopped at the output length limit"
    return msg


def n_steps(trace) -> int:
    return len(trace.steps) if trace is not None else 0


def head_choice(head: str | int | None) -> Optional[int]:
    """'mean' -> None, '3' -> 2 (0-based)."""
    if head is None or str(head).lower().startswith("mean"):
        return None
    return int(head) - 1


def step_view(trace, step: int, layer: int, head, look: Look):
    """Step `step` (1-based): prefix HTML, top-k bar figure, cross-attention bar figure."""
    n = n_steps(trace)
    step = int(min(max(1, step), n))
    s = trace.steps[step - 1]
    prefix = trace.tgt_out_pieces[: step - 1]
    prefix_html = "".join(f'<span class="piece tgt">{html.escape(p)}</span>' for p in prefix) or "<i>(nothing yet)</i>"
    chosen = html.escape(s.piece)
    info = (f'<div class="stepinfo"><div><b>Step {step} of {n}</b> · decoder input so far: '
            f'<span class="piece">&lt;s&gt;</span>{prefix_html}</div>'
            f'<div>chosen token: <span class="piece chosen">{chosen}</span> with p = {s.prob:.1%}</div>'
            f'<div>French so far: <b>{html.escape(_detok(trace.tgt_out_pieces[:step]))}</b></div></div>')
    topk = plots.topk_bar(s.topk_pieces, s.topk_probs, 0, f"Top-{len(s.topk_pieces)} next pieces, step {step}",
                          look.dark, look.font)
    h = head_choice(head)
    L = trace.cross_attn.shape[0]
    layer = int(min(max(1, layer), L))
    w = trace.cross_attn[layer - 1, :, step - 1]
    w = w.mean(0) if h is None else w[h]
    who = "mean over heads" if h is None else f"head {h + 1}"
    cross = plots.source_attention_bar(trace.src_pieces, w, f"Step {step}: layer {layer}, {who}",
                                       look.dark, look.font)
    return info, topk, cross


def _detok(pieces) -> str:
    text = "".join(p for p in pieces if p not in ("</s>", "<s>", "<pad>")).replace("▁", " ").strip()
    return text


def explorer_figure(trace, kind: str, layer: int, head, mode: str, shared: bool, look: Look):
    """The large map: one head, the mean over heads, or the rollout up to `layer`."""
    attn, _, q, k, masked, (ytitle, xtitle) = kind_data(trace, kind)
    L = attn.shape[0]
    layer = int(min(max(1, layer), L))
    h = head_choice(head)
    if mode == "rollout":
        if kind == "cross":
            z = analysis.cross_rollout(trace.cross_attn, trace.encoder_attn)[layer - 1]
            title = f"{KIND_TITLES[kind]}: rollout through the encoder, decoder layer {layer}"
        else:
            z = analysis.attention_rollout(attn)[layer - 1]
            title = f"{KIND_TITLES[kind]}: attention rollout, layers 1–{layer}"
        zmax = None
    else:
        if h is None or mode == "mean":
            z = attn[layer - 1].mean(0)
            title = f"{KIND_TITLES[kind]}: layer {layer}, mean over heads"
        else:
            z = attn[layer - 1, h]
            title = f"{KIND_TITLES[kind]}: layer {layer}, head {h + 1}"
        zmax = float(attn[layer - 1].max()) if shared else None
    return plots.attention_heatmap(z, q, k, title, masked, zmax, look.colorscale, look.dark, look.font,
                                   xaxis_title=xtitle, yaxis_title=ytitle)


def grid_figure(trace, kind: str, shared: bool, look: Look):
    attn, _, q, k, masked, _ = kind_data(trace, kind)
    scale = "one colour scale for all heads" if shared else "each head scaled to its own maximum"
    return plots.attention_grid(attn, q, k, f"{KIND_TITLES[kind]}: every layer × head ({scale})", masked, shared,
                                look.colorscale, look.dark, max(11, look.font - 2))


def summary_view(trace, kind: str, look: Look):
    attn = kind_data(trace, kind)[0]
    rows = analysis.head_summary(attn, kind)
    L, H = attn.shape[:2]
    ent = np.array([[r["entropy"] for r in rows[l * H:(l + 1) * H]] for l in range(L)])
    labels = [[rows[l * H + h]["label"] for h in range(H)] for l in range(L)]
    fig = plots.summary_heatmap(ent, labels, f"{KIND_TITLES[kind]}: entropy (0 = focused, 1 = uniform) and pattern",
                                "entropy", "Cividis", look.dark, look.font)
    table = [[r["layer"], r["head"], r["entropy"], r["label"], r["pattern"], r["pattern_score"]] for r in rows]
    return fig, table


def positional_views(trace, d_model: int, dims, look: Look, max_pos: int = 64):
    n = len(trace.src_pieces) if trace is not None else 0
    T = max(max_pos, n + 4)
    pe = analysis.sinusoidal_matrix(T, d_model)
    dims = [int(d) for d in dims if str(d).strip().lstrip("-").isdigit()] or [0, 1, 8, 9, 64, 65]
    return (plots.positional_heatmap(pe, n, dark=look.dark, font_size=look.font),
            plots.positional_curves(pe, dims, n, look.dark, look.font),
            plots.positional_similarity(pe, n, look.dark, look.font))


def inside_view(trace, kind: str, layer: int, head, query: int, unscaled: bool, look: Look):
    _, scores, q, k, _, _ = kind_data(trace, kind)
    L, H = scores.shape[:2]
    layer = int(min(max(1, layer), L))
    h = head_choice(head)
    h = 0 if h is None else h
    steps = analysis.inside_head(scores[layer - 1, h], trace.d_head, causal=(kind == "decoder"))
    fig = plots.inside_head_figure(steps, q, k, trace.d_head, scaled=not unscaled,
                                   title=f"Inside {KIND_TITLES[kind].lower()}, layer {layer}, head {h + 1} (d_k = {trace.d_head})",
                                   dark=look.dark, font_size=max(11, look.font - 1))
    qi = int(min(max(1, query), len(q))) - 1
    row = plots.softmax_temperature_figure(
        steps["scaled"][qi], steps["softmax_unscaled"][qi], steps["softmax"][qi], k,
        f"Query {qi + 1} ({q[qi]}): scaling keeps the softmax from saturating", look.dark, look.font)
    sm_s, sm_u = steps["softmax"][qi], steps["softmax_unscaled"][qi]
    ent = lambda p: float(-(p[p > 0] * np.log(p[p > 0])).sum())
    text = (f"For this query the largest weight is {sm_s.max():.2f} with scaling and {sm_u.max():.2f} without; "
            f"entropy {ent(sm_s):.2f} vs {ent(sm_u):.2f} nats. Dot products grow with √d_k, so without the "
            f"division the softmax becomes nearly one-hot and its gradients vanish (paper, section 3.2.1).")
    return fig, row, text


def architecture_html(cfg, n_params: int) -> str:
    """A diagram of the layers, drawn from the config (no image files)."""
    def box(title, body, cls):
        return f'<div class="arch-box {cls}"><div class="arch-title">{title}</div><div>{body}</div></div>'
    enc = "".join(box(f"Encoder layer {i + 1}", "multi-head self-attention → add &amp; norm<br>feed-forward → add &amp; norm", "enc")
                  for i in range(cfg.n_encoder_layers))
    dec = "".join(box(f"Decoder layer {i + 1}", "masked self-attention → add &amp; norm<br>cross-attention → add &amp; norm"
                      "<br>feed-forward → add &amp; norm", "dec") for i in range(cfg.n_decoder_layers))
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
<p class="arch-sizes">d_model = {cfg.d_model} · heads h = {cfg.n_heads} (d_k = d_v = {cfg.d_head}) · d_ff = {cfg.d_ff} ·
N = {cfg.n_encoder_layers} encoder + {cfg.n_decoder_layers} decoder layers · dropout {cfg.dropout} ·
{n_params:,} parameters · post-norm, ReLU, greedy decoding with a KV cache</p>"""
