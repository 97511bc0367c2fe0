"""The "Why this word" views: attention as lines, attribution beside attention, the vectors behind
one score, and the KV cache. From the trace and the typed results of transformer/why.py only
(no torch, no gradio)."""
from __future__ import annotations

import html
from typing import Sequence

import numpy as np
from scipy.stats import spearmanr

from ..config import LINES_MIN_WEIGHT
from .style import PALETTE
from ..why import METHOD_TITLES, Attribution, HeadVectors, InputParts, Lens
from . import figure, plots
from .presenter import legend_below, presenter

ROW_PX, COL_GAP = 24, 260    # the lines view: row height and the distance between the two columns


# ---------------------------------------------------------------- lines (BertViz's head view)
def line_segments(probs: np.ndarray, heads: Sequence[int], min_weight: float = LINES_MIN_WEIGHT):
    """(head, query, key, weight) for every drawn line; probs (heads, queries, keys), heads 0-based."""
    out = []
    for h in heads:
        qs, ks = np.nonzero(probs[h] >= min_weight)
        out += [(int(h), int(i), int(j), float(probs[h, i, j])) for i, j in zip(qs, ks)]
    return out


def _isolate_css(uid: str, n_q: int, n_k: int) -> str:
    """Hovering (or tapping: focus) a piece hides every line that does not touch it (CSS :has, no script)."""
    rules = [f"#{uid}:has(.tq.q{i}:hover) line:not(.q{i}),#{uid}:has(.tq.q{i}:focus) line:not(.q{i})"
             for i in range(n_q)]
    rules += [f"#{uid}:has(.tk.k{j}:hover) line:not(.k{j}),#{uid}:has(.tk.k{j}:focus) line:not(.k{j})"
              for j in range(n_k)]
    return ",".join(rules) + "{display:none}"


def lines_html(probs: np.ndarray, heads: Sequence[int], queries: Sequence[str], keys: Sequence[str],
               title: str, uid: str = "lines-view") -> str:
    """Queries on the left, keys on the right, a line per weight: opacity = weight, colour = head."""
    n = max(len(queries), len(keys), 1)
    h_px, x0, x1 = n * ROW_PX + 10, 150, 150 + COL_GAP
    y = lambda i: 14 + i * ROW_PX
    segs = line_segments(probs, heads)
    lines = "".join(f'<line class="q{i} k{j}" data-h="{h + 1}" data-q="{i}" data-k="{j}" data-w="{w:.6f}" '
                    f'x1="{x0 + 6}" y1="{y(i) - 4}" x2="{x1 - 6}" y2="{y(j) - 4}" '
                    f'stroke="{PALETTE[h % len(PALETTE)]}" stroke-opacity="{w:.3f}" '
                    f'stroke-width="2.5"><title>head {h + 1}: {w:.3f}</title></line>'
                    for h, i, j, w in segs)
    text = lambda cls, x, anchor, labels: "".join(
        f'<text class="{cls} {cls[1]}{i}" tabindex="0" x="{x}" y="{y(i)}" '
        f'text-anchor="{anchor}">{html.escape(p)}</text>'
        for i, p in enumerate(labels))
    legend = " ".join(f'<span style="color:{PALETTE[h % len(PALETTE)]}">■ head {h + 1}</span>' for h in heads)
    return (f'<div class="lines-view" id="{uid}"><style>{_isolate_css(uid, len(queries), len(keys))}</style>'
            f'<div class="lines-title"><b>{html.escape(title)}</b> · {legend}</div>'
            f'<div class="lines-hint">Hover or tap a piece to see only its lines. Lines under '
            f'{LINES_MIN_WEIGHT} are left out.</div><svg viewBox="0 0 {x1 + 150} {h_px}" '
            f'style="max-width:{x1 + 150}px;width:100%">{lines}{text("tq", x0, "end", queries)}'
            f'{text("tk", x1, "start", keys)}</svg></div>')


def lines_caption(probs: np.ndarray, heads: Sequence[int], queries: Sequence[str],
                  keys: Sequence[str]) -> str:
    """One line of Markdown: how many lines are drawn and the strongest one (pieces escaped)."""
    segs = line_segments(probs, heads)
    if not segs:
        return ("No head selected: pick one or more heads." if not heads
                else "No weight is large enough to draw.")
    h, i, j, w = max(segs, key=lambda s: s[3])
    return (f"{len(segs)} lines from {len(heads)} head(s); the strongest: head {h + 1}, "
            f"«{html.escape(queries[i])}» → «{html.escape(keys[j])}» ({w:.2f}).")


# ---------------------------------------------------------------- attribution beside attention
def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's rank correlation (scipy); NaN when either side is constant."""
    if len(a) < 2 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return float("nan")
    return float(spearmanr(a, b).statistic)


def agreement(attr: Attribution, cross_layer: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Per target step, the rank correlation of |attribution| with the mean cross-attention over heads
    and with the best head's (the head with the highest mean correlation). cross_layer: (heads, T, S)."""
    T = attr.scores.shape[0]
    mag = np.abs(attr.scores)
    mean = np.array([spearman(mag[t], cross_layer[:, t].mean(0)) for t in range(T)])
    per_head = np.array([[spearman(mag[t], cross_layer[h, t]) for t in range(T)]
                         for h in range(cross_layer.shape[0])])
    best = int(np.nanargmax(np.nanmean(np.where(np.isnan(per_head), -1.0, per_head), axis=1)))
    return mean, per_head[best], best


def attribution_heatmap(attr: Attribution, dark: bool, font_size: int):
    m = float(np.abs(attr.scores).max(initial=0.0)) or 1.0
    title = f"{METHOD_TITLES[attr.method]} (red: raises p, blue: lowers it) · gap {attr.relative_gap:.1%}"
    return plots.attention_heatmap(attr.scores, [f"→ {figure.shown_piece(p)}" for p in attr.tgt_pieces],
                                   attr.src_pieces, title, zmin=-m, zmax=m, colorscale=figure.SIGNED_SCALE,
                                   dark=dark, font_size=font_size, value_name="attribution",
                                   xaxis_title="source piece", yaxis_title="step → piece produced")


def agreement_figure(attr: Attribution, cross_layer: np.ndarray, layer: int, dark: bool, font_size: int):
    mean, best, h = agreement(attr, cross_layer)
    x = [f"{t + 1}: {figure.esc(p)}" for t, p in enumerate(attr.tgt_pieces)]
    data = [dict(type="scatter", mode="lines+markers", x=x, y=np.nan_to_num(r, nan=0.0).round(3).tolist(),
                 name=name)
            for r, name in ((mean, f"mean over heads, layer {layer}"),
                            (best, f"best head ({h + 1}), layer {layer}"))]
    layout = dict(yaxis=dict(title=dict(text="Spearman ρ with |attribution|"), range=[-1.05, 1.05]),
                  xaxis=dict(title=dict(text="target step"), tickangle=-45),
                  legend=dict(orientation="h", y=-0.35))
    title = (f"Rank agreement with |{METHOD_TITLES[attr.method]}|: mean ρ {np.nanmean(mean):.2f} (heads' "
             f"mean), {np.nanmean(best):.2f} (best head)")
    height = 420
    # a projector: the legend in room of its own, under the (upright at worst) step labels
    if presenter(font_size):
        height = legend_below(layout, font_size, figure.top_margin(font_size, title), 12 * font_size,
                              figure.label_room(x, font_size, 90) + int(1.5 * font_size), rows=2)
    return figure.fast_figure(data, layout, dark, font_size, height, title)


# ---------------------------------------------------------------- the vectors behind one score
def vectors_figure(hv: HeadVectors, qi: int, kj: int, dark: bool, font_size: int):
    """q_i, k_j, their element-wise product and its sum = the score before ÷√d_k."""
    q, k = hv.q[qi], hv.k[kj]
    prod = q * k
    d = list(range(len(q)))
    data = [dict(type="bar", x=d, y=v.round(4).tolist(), name=name, marker=dict(color=c))
            for v, name, c in ((q, f"query q ({figure.esc(hv.queries[qi])})", "#0072B2"),
                               (k, f"key k ({figure.esc(hv.keys[kj])})", "#E69F00"),
                               (prod, "q ⊙ k", "#009E73"))]
    s = float(prod.sum())
    title = (f"{hv.kind} layer {hv.layer}, head {hv.head}: q·k = Σ (q ⊙ k) = {s:.3f}; "
             f"÷√d_k = {s / np.sqrt(len(q)):.3f} (the score in Inside one head)")
    layout = dict(barmode="group", xaxis=dict(title=dict(text=f"dimension of the head (d_k = {len(q)})")),
                  legend=dict(orientation="h", y=-0.25))
    height = 420
    if presenter(font_size):
        height = legend_below(layout, font_size, figure.top_margin(font_size, title), 10 * font_size,
                              3 * font_size + 10, rows=2)
    return figure.fast_figure(data, layout, dark, font_size, height, title)


def input_figure(parts: InputParts, i: int, dark: bool, font_size: int):
    """The input to layer 1 of one piece, as three panels one above the other on one dimension axis (and one
    value range, so that sizes compare): its embedding × √d_model, plus its positional encoding,
    equals the sum."""
    d = list(range(parts.total.shape[1]))
    rows = ((parts.token[i], "embedding × √d_model", PALETTE[0]),
            (parts.position[i], f"+ positional encoding (position {i})",
            PALETTE[1]), (parts.total[i], "= input to layer 1", PALETTE[2]))
    lim = float(max(np.abs(v).max(initial=0) for v, _, _ in rows)) * 1.05 or 1.0
    gap, data, layout, notes = 0.1, [], {}, []
    h = (1 - 2 * gap) / 3
    for n, (v, name, colour) in enumerate(rows, start=1):
        y1 = 1 - (n - 1) * (h + gap)
        a = "" if n == 1 else n                       # plotly names the first axes x and y
        data.append(dict(type="bar", x=d, y=v.round(4).tolist(), name=name,
                         marker=dict(color=colour, line=dict(width=0)), xaxis=f"x{a}", yaxis=f"y{a}",
                         hovertemplate=f"{name}<br>dimension %{{x}}: %{{y:.3f}}<extra></extra>"))
        layout[f"xaxis{a}"] = dict(anchor=f"y{a}", showticklabels=n == 3,
                                   **({"matches": "x"} if n > 1 else {}),
                                   **({"title": dict(text="dimension (d_model)")} if n == 3 else {}))
        layout[f"yaxis{a}"] = dict(domain=[round(y1 - h, 4), round(y1, 4)], anchor=f"x{a}", range=[-lim, lim])
        notes.append(dict(text=f"<b>{figure.esc(name)}</b>", x=0, y=y1, xref="paper", yref="paper",
                          xanchor="left", yanchor="bottom", showarrow=False))
    layout.update(annotations=notes, showlegend=False, bargap=0)
    title = f"The model's input for '{figure.esc(parts.pieces[i])}' (position {i})"
    height = figure.grow(520, font_size)
    if presenter(font_size):    # the first panel's name a line of its own under the title
        name_h = int(1.3 * font_size)
        layout["margin"] = dict(l=10, r=10, t=figure.top_margin(font_size, title) + name_h, b=10)
        height += name_h
    return figure.fast_figure(data, layout, dark, font_size, height, title)


# ---------------------------------------------------------------- the KV cache
def kv_macs(d_model: int, d_ff: int, n_layers: int, vocab: int, src_len: int, t: int) -> tuple[int, int]:
    """Multiply-adds of decoding step t (1-based) with the KV cache and recomputing the prefix.

    Per decoder layer and position: 4·d² (self-attention W^Q, W^K, W^V, W^O) + 2·d² (cross W^Q, W^O)
    + 2·d·d_ff (feed-forward) + 2·d·(keys seen) (QKᵀ and ·V, self) + 2·d·S (cross); output layer d·V.
    Cached: one new position; the memory's cross K/V (2·S·d² per layer) only at step 1.
    Recomputed: all t positions, each scoring all t keys (masked ones too: the code multiplies the full
    t × t matrices), the memory's K/V again, t output rows. Biases and layer norms are left out.
    tests/test_why.py checks both against torch's FlopCounterMode on the model."""
    per_pos = 6 * d_model ** 2 + 2 * d_model * d_ff + 2 * d_model * src_len
    memory_kv = 2 * src_len * d_model ** 2
    cached = n_layers * (per_pos + 2 * d_model * t + (memory_kv if t == 1 else 0)) + d_model * vocab
    full = n_layers * (t * per_pos + 2 * d_model * t * t + memory_kv) + t * d_model * vocab
    return cached, full


def kv_cache_html(prefix: Sequence[str], src_pieces: Sequence[str], n_layers: int, d_model: int, d_ff: int,
                  vocab: int) -> str:
    """Step t: per decoder layer, the cached and the new self-attention keys/values, the cross ones, the
    saving."""
    t = len(prefix)
    chip = lambda p, cls: f'<span class="piece {cls}">{html.escape(p)}</span>'
    self_kv = "".join(chip(p, "kv-cached") for p in prefix[:-1]) + chip(prefix[-1], "kv-new")
    cross = ("computed once at step 1, read from the cache" if t > 1
             else "computed now, once for the sentence")
    rows = "".join(f"<tr><td>layer {l + 1}</td><td>{self_kv}</td><td>{len(src_pieces)} source positions: "
                   f"{cross}</td></tr>"
                   for l in range(n_layers))
    cached, full = kv_macs(d_model, d_ff, n_layers, vocab, len(src_pieces), t)
    return (f'<div class="kv-view"><table><tr><th></th><th>self-attention K, V (grey: cached, outlined: new '
            f'at step {t})</th><th>cross-attention K, V</th></tr>{rows}</table>'
            f"<p>Step {t}: {cached:,} multiply-adds with the cache, {full:,} recomputing the prefix: "
            f"<b>{full - cached:,} saved ({1 - cached / full:.0%})</b>.</p></div>")


# ---------------------------------------------------------------- what the app shows, per sub-view
def attribution_views(trace, attrs: Sequence[Attribution], layer: int, look):
    """Completeness text, the attribution heatmaps, the cross-attention with the same axes, the agreement."""
    by = {a.method: a for a in attrs}
    cross = trace.cross.probs[min(max(layer, 1), trace.cross.layers) - 1]          # (heads, T, S)
    font = look.font
    heat = lambda m: (attribution_heatmap(by[m], look.dark, font) if m in by
                      else figure.empty_figure("Not computed (method above).", look.dark, font))
    cross_fig = plots.attention_heatmap(cross.mean(0), [f"→ {p}" for p in trace.tgt_pieces], trace.src_pieces,
                                        f"Cross-attention, layer {layer}, mean over heads",
                                        colorscale=look.colorscale, dark=look.dark, font_size=font,
                                        xaxis_title="source piece", yaxis_title="step → piece produced")
    agree = agreement_figure(attrs[0], cross, layer, look.dark, font)
    return completeness_text(attrs), heat("integrated_gradients"), cross_fig, heat("gradient_x_input"), agree


def completeness_text(attrs: Sequence[Attribution]) -> str:
    """How far to trust each attribution: the completeness check (Σ attributions against f(input) −
    f(baseline)), how many steps Integrated Gradients took, and plainly when the numbers
    are only approximate."""
    parts = []
    for a in attrs:
        worst = f"largest gap {np.abs(a.gap).max(initial=0):.4f} = {a.relative_gap:.1%} of the largest change"
        if a.method != "integrated_gradients":
            parts.append(f"**{METHOD_TITLES[a.method]}**: {worst} (one point of the path: not meant to be "
                         f"complete; read it as a first-order sketch).")
        elif not a.final:
            parts.append(f"**{METHOD_TITLES[a.method]}: first estimate, refining…** "
                         f"{min(a.target_steps)}–{a.steps} points on the path per piece so far ({worst}): "
                         f"the colours show the picture, the exact values are still moving; this view is "
                         f"replaced when every piece's gap is under {a.tolerance:.0%} of its change.")
        elif a.converged:
            unsettled = a.unsettled
            head = (f"**{METHOD_TITLES[a.method]}**: {min(a.target_steps)}–{a.steps} points on the path per "
                    f"piece (more where its path changes fast, until its gap was under {a.tolerance:.0%} of "
                    f"its change): {worst}.")
            if not unsettled:
                parts.append(f"{head} Complete: the colours add up to the change, and every piece's "
                             f"strongest source piece leads by more than the remaining error.")
            else:
                steps = ", ".join(f"{a.step if a.contrastive else t + 1} "
                                  f"({a.tgt_pieces[t]})" for t in unsettled[:6]) + (
                    " …" if len(unsettled) > 6 else "")
                parts.append(f"{head} Within tolerance, but not settled everywhere: for {len(unsettled)} of "
                             f"{len(a.gap)} pieces the two strongest source pieces differ by less than the "
                             f"remaining error (steps {steps}), so which of them moved the piece most is not "
                             f"decided.")
        else:
            off = int(np.sum((a.target_gaps > a.tolerance) & (np.abs(a.gap) > 1e-4)))
            parts.append(f"**{METHOD_TITLES[a.method]}: approximate.** After {a.steps} points on the path "
                         f"(the cap), {off} of {len(a.gap)} pieces still miss completeness by more than "
                         f"{a.tolerance:.0%} of their change ({worst}): compare the pieces' sizes, not their "
                         f"exact values.")
    return " ".join(parts) + f" f = {attrs[0].quantity}; baseline: {attrs[0].baseline}."


def contrast_figure(trace, contrasts: Sequence[Attribution], plain: Sequence[Attribution], layer: int, look):
    """Why y_t and not the rival: per source piece, the contrastive attribution (each method, signed) above,
    and below what the plain view says at the same step: the cross-attention (mean over heads)
    and p(y_t)'s attribution."""
    a0 = contrasts[0]
    t = a0.step - 1
    x = [f"{i + 1}: {figure.esc(p)}" for i, p in enumerate(trace.src_pieces)]
    data = [dict(type="bar", x=x, y=a.scores[0].round(5).tolist(), name=f"{METHOD_TITLES[a.method]}: why "
                 f"«{figure.esc(a0.tgt_pieces[0])}» and not «{figure.esc(a0.rival)}»",
                 marker=dict(color=PALETTE[i]), yaxis="y") for i, a in enumerate(contrasts)]
    cross = trace.cross.probs[min(max(layer, 1), trace.cross.layers) - 1][:, t].mean(0)
    data.append(dict(type="bar", x=x, y=cross.round(4).tolist(),
                     name=f"cross-attention at step {a0.step}, layer "
                     f"{layer} (mean over heads)", marker=dict(color=PALETTE[7]), yaxis="y2"))
    for a in plain:
        m = float(np.abs(a.scores[t]).max(initial=0.0)) or 1.0
        data.append(dict(type="scatter", mode="markers", x=x, y=(a.scores[t] / m).round(4).tolist(),
                         yaxis="y2", name=f"{METHOD_TITLES[a.method]} of "
                                          f"p(«{figure.esc(a0.tgt_pieces[0])}»), scaled to ±1",
                         marker=dict(size=11, symbol="diamond", color=PALETTE[5])))
    layout = dict(barmode="group", legend=dict(orientation="h", y=-0.3),
                  yaxis=dict(domain=[0.55, 1], title=dict(text="log p(chosen) − log p(rival)"),
                             zeroline=True),
                  yaxis2=dict(domain=[0, 0.42], title=dict(text="the plain view"), zeroline=True),
                  xaxis=dict(tickangle=-45, anchor="y2"))
    title = (f"Step {a0.step}: «{figure.esc(a0.tgt_pieces[0])}» rather than «{figure.esc(a0.rival)}» — "
             f"up: pieces that favour the choice, down: pieces that favour the rival")
    height = figure.grow(620, look.font)
    if presenter(look.font):    # two entries a line of legend under the source's labels
        height = legend_below(layout, look.font, figure.top_margin(look.font, title), 24 * look.font,
                              figure.label_room(x, look.font, 90), rows=(len(data) + 1) // 2)
    return figure.fast_figure(data, layout, look.dark, look.font, height, title)


def contrast_caption(contrasts: Sequence[Attribution], trace) -> str:
    """One sentence on what the colours mean, with the numbers that matter."""
    a = contrasts[0]
    diff = float(a.f_input[0])
    top = int(np.argmax(a.scores[0])), int(np.argmin(a.scores[0]))
    return (f"At step {a.step} the model chose «{a.tgt_pieces[0]}»; its log-probability is {diff:+.2f} above "
            f"«{a.rival}»'s (×{np.exp(diff):.3g} as likely). Bars up: source pieces whose embedding pushes "
            f"toward «{a.tgt_pieces[0]}» rather than «{a.rival}» (most: «{trace.src_pieces[top[0]]}»); bars "
            f"down: toward «{a.rival}» (most: «{trace.src_pieces[top[1]]}»). The bars add up to the change "
            f"of that difference from the empty source. " + completeness_text(contrasts))


def vectors_view(hv: HeadVectors, parts: InputParts, maps, q: int, k: int, piece: int, dark: bool, font: int,
                 scaled: bool = True):
    """Text with the numbers, the vectors figure, the input-to-layer-1 figure; `scaled`: the model divides its
    scores by √d_k (the trace's `scaled`; False in the no-scaling variant, whose recorded score is q
    · k itself)."""
    qi, kj = min(max(q, 1), len(hv.queries)) - 1, min(max(k, 1), len(hv.keys)) - 1
    pi = min(max(piece, 1), len(parts.pieces)) - 1
    dot = float(hv.q[qi] @ hv.k[kj])
    d_k = hv.q.shape[1]
    recorded = float(maps.scores[hv.layer - 1, hv.head - 1, qi, kj])
    masked = maps.future is not None and bool(maps.future[qi, kj])     # the causal mask, not the value
    text = (f"q · k = **{dot:.4f}**; ÷ √{d_k} = **{dot / np.sqrt(d_k):.4f}**. "
            + (f"This cell is in the future (masked): the mask sets its weight to 0, and the KV cache never "
               f"computed its score while decoding; Inside one head shows {recorded:.4f}, from one "
               f"teacher-forced pass over the whole translation."
               if masked
               else f"The score the model recorded while translating (Inside one head): {recorded:.4f} "
                              + (f"(× √d_k = {recorded * np.sqrt(d_k):.4f})." if scaled else
                                 "(this model does not divide by √d_k: its score is q · k itself).")))
    return text, vectors_figure(hv, qi, kj, dark, font), input_figure(parts, pi, dark, font)


# ---------------------------------------------------------------- the logit lens
def lens_figure(lens: Lens, step: int, dark: bool, font_size: int, colorscale: str = figure.DEFAULT_SCALE):
    """Layer × step: the probability each decoder layer, read through the output projection, gives the piece
    the model finally chose (its rank in the cell); the chosen step is outlined."""
    x = [f"{t + 1}: {figure.esc(p)}" for t, p in enumerate(lens.chosen)]
    y = [f"layer {layer + 1}" for layer in range(lens.layers)]
    ranks = [[int(r) for r in row] for row in lens.chosen_rank]
    text = [[f"#{r}" for r in row] for row in ranks]
    data = [dict(type="heatmap", z=lens.chosen_prob.round(4).tolist(), x=x, y=y, zmin=0, zmax=1, text=text,
                 customdata=ranks, texttemplate="%{text}", colorscale=figure.colorscale_for(colorscale, dark),
                 colorbar=dict(title=dict(text="p")),
                 hovertemplate="%{y}, step %{x}<br>p(chosen piece) = %{z:.3f}, rank "
                               "#%{customdata}<extra></extra>")]
    # a rank at the type size in its cell ("99+" past 99), where a cell holds three digits
    if presenter(font_size):
        data[0].update(text=[[f"#{r}" if r <= 99 else "99+" for r in row] for row in ranks],
                       textfont=dict(size=font_size))
        if len(x) * 1.75 * font_size > 1600:                  # (1920 px: the cells of a longer translation)
            data[0]["texttemplate"] = ""
    t = min(max(step, 1), len(lens.chosen)) - 1
    layout = dict(xaxis=dict(tickangle=-45, title=dict(text="step: the piece the model chose")),
                  yaxis=dict(title=dict(text="read after")),
                  shapes=[dict(type="rect", xref="x", yref="y", x0=t - 0.5, x1=t + 0.5, y0=-0.5,
                               y1=lens.layers - 0.5, line=dict(color="#D55E00", width=3))])
    title = ("If the decoder stopped after this layer: p of the piece it finally chose "
             + ("(#rank)" if data[0]["texttemplate"] else "(its rank on hover)"))
    return figure.fast_figure(data, layout, dark, font_size, figure.grow(150 + 60 * lens.layers, font_size),
                              title)


def lens_html(lens: Lens, step: int) -> str:
    """The chosen step, layer by layer: the top pieces with their probabilities, and where the choice
    settles."""
    t = min(max(step, 1), len(lens.chosen)) - 1
    chosen = lens.chosen[t]
    rows = []
    for layer in range(lens.layers):
        cells = " ".join(
            f'<span class="piece{" kv-new" if p == chosen else ""}">{html.escape(p)} {q:.0%}</span>'
            for p, q in zip(lens.top_pieces[layer][t], lens.top_probs[layer, t]))
        rows.append(f"<tr><th>layer {layer + 1}</th><td>{cells}</td><td>rank "
                    f"{int(lens.chosen_rank[layer, t])}, p = {lens.chosen_prob[layer, t]:.1%}</td></tr>")
    settled, c = lens.decided_at(t), html.escape(chosen)
    note = (f"«{c}» is the top piece after every layer: the first layer already points to it." if settled == 1
            else
            f"«{c}» becomes the top piece after layer {settled} and stays there: the layers below had not "
            f"settled.")
    return (f'<div class="lens"><p>Step {t + 1}: the model chose «{c}». {note}</p><table><tr><th></th>'
            f"<th>top pieces at this layer</th>"
            f"<th>«{c}»</th></tr>{''.join(rows)}</table></div>")
