"""Figures and text of the causal experiments (``transformer/causal.py``): a knock-out's translation beside
the original, which heads matter, and where a patch between two sentences moves the answer. Reads arrays and
typed results only; imports neither torch nor gradio. Every piece is HTML-escaped before it reaches the page
or Plotly.
"""
from __future__ import annotations

import html
from typing import Optional

import numpy as np

from ..pieces import detokenize
from ..causal import METHOD_WORDS, HeadImportance, KnockOutResult, PatchMap
from .figure import (SIGNED_SCALE, cat_ticks, colorscale_for, esc, esc_all, f32, fast_figure, grow,
                     heatmap_height, numbered, short)

KIND_ROWS = {"encoder": "enc", "decoder": "dec self", "cross": "cross"}
KNOCKED_COLOUR, ORIGINAL_COLOUR = "#d62728", "#7f7f7f"
CLOSE_P = 0.05            # p_B − p_A smaller than this: the restored shares say little (and the page says so)


# ---------------------------------------------------------------- knock-out
def knockout_html(r: KnockOutResult) -> str:
    """The two translations, one above the other, the first changed piece marked, and what was switched
    off."""
    at = r.first_change
    marked = " ".join(f"<mark>{html.escape(p)}</mark>" if i == (at or 0) - 1 else html.escape(p)
                      for i, p in enumerate(r.pieces))
    drop = float(np.mean(np.log(np.maximum(r.p_knocked, 1e-30)) - np.log(np.maximum(r.p_original, 1e-30))))
    verdict = (f"<b>The translation changed</b> from step {at}." if r.changed else
               "<b>The greedy translation did not change</b>" + (
                   ": for this sentence the model does not need what was switched off, or another part does "
                   "its work." if drop > -0.1 else ", but the model is less sure of it (below)."))
    return (f'<div class="knockout-result"><p>Switched off: {html.escape(r.knockout.words())}. {verdict}</p>'
            f'<table><tr><th>original</th><td lang="fr">{html.escape(r.original_text)}</td></tr>'
            f'<tr><th>knocked out</th><td '
            f'lang="fr">{html.escape(r.text)}<br><small>{marked}</small></td></tr></table>'
            f"<p>Reading the original translation through the knocked-out model, its pieces' log-probability "
            f"moves by {drop:+.2f} on average ({r.seconds:.2f} s).</p></div>")


def knockout_figure(r: KnockOutResult, dark: bool, font_size: int):
    """At each step of the original translation: p(its piece) in the original model and with the knock-out
    (teacher forcing: both read the original prefix), the knocked-out model's own first choice on hover and
    above a bar where it differs."""
    labels = numbered(r.original)
    tops = esc_all(r.top_knocked)
    differs = [a != b for a, b in zip(r.top_knocked, r.original)]
    data = [dict(type="bar", name="original", x=labels, y=f32(r.p_original, 4),
                 marker=dict(color=ORIGINAL_COLOUR),
                 hovertemplate="%{x}: p = %{y:.1%} in the original model<extra></extra>"),
            dict(type="bar", name="knocked out", x=labels, y=f32(r.p_knocked, 4),
                 marker=dict(color=KNOCKED_COLOUR),
                 text=[f"→ {short(t, 8)}" if d else "" for t, d in zip(tops, differs)],
                 textposition="outside", cliponaxis=False, customdata=tops,
                 hovertemplate="%{x}: p = %{y:.1%} knocked out; its first choice here: "
                               "%{customdata}<extra></extra>")]
    layout = dict(barmode="group",
                  xaxis=dict(title=dict(text="the original translation, step by step"), tickangle=-45,
                             **cat_ticks(labels)),
                  yaxis=dict(title=dict(text="p(original piece)"), range=[0, 1.18], tickformat=".0%"),
                  legend=dict(orientation="h", y=1, x=0.01, xanchor="left", yanchor="top",
                              bgcolor="rgba(0,0,0,0)"))
    title = ("Each original piece's probability, original (grey) and knocked out (red); → the knocked-out "
             "first choice")
    return fast_figure(data, layout, dark, font_size, grow(420, font_size), title)


# ---------------------------------------------------------------- which heads matter
def heads_by_kind(per_kind: dict, z_of, zmin: float, zmax: float, hover: str, bar: dict, title: str,
                  dark: bool, font_size: int):
    """Layers × heads of every attention kind stacked (encoder, decoder self, cross; a line between kinds),
    each kind's (layers, heads) array through `z_of`, on one signed colour range: the ranking's and the
    patching's maps."""
    rows = [f"{KIND_ROWS[k]} L{n}" for k, a in per_kind.items() for n in range(1, a.shape[0] + 1)]
    z = np.concatenate([z_of(a) for a in per_kind.values()])
    heads = [str(h) for h in range(1, z.shape[1] + 1)]
    heat = dict(type="heatmap", z=f32(z, 4), x=heads, y=rows, zmin=zmin, zmax=zmax, hovertemplate=hover,
                xgap=1, ygap=1, colorscale=colorscale_for(SIGNED_SCALE, dark),
                colorbar=dict(thickness=14, **bar))
    ends = np.cumsum([a.shape[0] for a in per_kind.values()])[:-1]
    shapes = [dict(type="line", xref="paper", x0=0, x1=1, yref="y", y0=n - 0.5, y1=n - 0.5,
                   line=dict(color="#fff" if dark else "#000", width=2)) for n in ends]
    layout = dict(xaxis=dict(title=dict(text="head"), type="category", side="bottom"),
                  yaxis=dict(title=dict(text="attention kind and layer"), type="category",
                             autorange="reversed"),
                  shapes=shapes)
    return fast_figure([heat], layout, dark, font_size, heatmap_height(len(rows) + 2, heads, font_size),
                       title)


def importance_figure(hi: HeadImportance, step: Optional[int], dark: bool, font_size: int):
    """Layers × heads, every kind stacked: Δ log p when that head alone is knocked out (blue: the translation
    loses probability without it). One signed colour range centred on 0."""
    m = float(max(np.abs(hi.total(k, step)).max(initial=0.0) for k in hi.per_step)) or 1.0
    what = ("the whole translation's log-probability" if step is None else
            f"log p of step {step}'s piece {esc(hi.tgt_pieces[step - 1])}")
    return heads_by_kind(hi.per_step, lambda d: d.sum(-1) if step is None else d[..., step - 1], -m, m,
                         "%{y} head %{x}: Δ log p = %{z:+.3f}<extra></extra>",
                         dict(title=dict(text="Δ log p")),
                         f"Each head knocked out alone ({hi.method}): Δ {what}", dark, font_size)


def importance_scatter(hi: HeadImportance, step: Optional[int], entropy: dict, agreement: dict, dark: bool,
                       font_size: int):
    """Does the model need the heads that look focused? Each head: its entropy (head summary; 0 = focused)
    against how much the translation loses without it; cross-attention heads coloured by their
    agreement with attribution."""
    data = []
    colours = {"encoder": "#1f77b4", "decoder": "#2ca02c", "cross": "#d62728"}
    for k in hi.per_step:
        loss = -hi.total(k, step)                                   # positive: the translation needs the head
        ent = entropy[k]
        names = [f"{KIND_ROWS[k]} L{l + 1} H{h + 1}" for l in range(loss.shape[0])
                 for h in range(loss.shape[1])]
        agree = agreement.get(k)
        hover = "%{text}: entropy %{x:.2f}, loss without it %{y:+.3f}"
        marker = dict(color=colours[k], size=max(8, font_size * 0.6), line=dict(width=1, color="#333"))
        extra = {}
        if agree is not None:
            extra = dict(customdata=np.round(agree.reshape(-1), 2).tolist())
            hover += "<br>agreement with attribution ρ %{customdata}"
        data.append(dict(type="scatter", mode="markers", name=k if k != "decoder" else "decoder self",
                         x=f32(ent.reshape(-1), 3), y=f32(loss.reshape(-1), 4), text=names, marker=marker,
                         hovertemplate=hover + "<extra></extra>", **extra))
    layout = dict(xaxis=dict(title=dict(text="entropy (0 = looks at one piece, 1 = evenly)"),
                             range=[-0.02, 1.02]),
                  yaxis=dict(title=dict(text="log p lost without the head")),
                  legend=dict(orientation="h", y=1, x=1, xanchor="right", yanchor="top",
                              bgcolor="rgba(0,0,0,0)"))
    title = "Focused heads are not always the needed ones: entropy against loss"
    return fast_figure(data, layout, dark, font_size, grow(420, font_size), title)


def importance_table(hi: HeadImportance, step: Optional[int], entropy: dict, labels: dict, agreement: dict,
                     top: int = 12) -> list[list]:
    """The heads ranked by how much the translation (or the step's piece) loses without them."""
    out = []
    for rank, (k, l, h, d) in enumerate(hi.ranked(step)[:top], 1):
        agree = agreement.get(k)
        out.append([rank, KIND_ROWS[k], l, h, round(d, 3), round(float(entropy[k][l - 1, h - 1]), 3),
                    labels[k][l - 1][h - 1], "" if agree is None else round(float(agree[l - 1, h - 1]), 2)])
    return out


def importance_caption(hi: HeadImportance, step: Optional[int]) -> str:
    best = hi.ranked(step)[0]
    what = "the translation" if step is None else f"step {step}'s piece {hi.tgt_pieces[step - 1]}"
    n = sum(v.shape[0] * v.shape[1] for v in hi.per_step.values())
    head = f"{KIND_ROWS[best[0]]} L{best[1]} H{best[2]}"
    found = (f"{what.capitalize()} needs {head} most: Δ log p {best[3]:+.3f} without it." if best[3] < 0 else
             f"No head alone is needed by {what}: without any one of them it is at least as probable.")
    return (f"Every one of the {n} heads knocked out alone ({hi.method}: {METHOD_WORDS[hi.method]}), "
            f"{hi.seconds:.2f} s. {found}")


# ---------------------------------------------------------------- patching
def patch_residual_figure(pm: PatchMap, dark: bool, font_size: int):
    """Encoder layers (0: the input) × source positions: the share of B's answer restored by copying B's
    residual stream at that one position after that layer into A's run."""
    z = pm.restored(pm.layer_positions_p)
    x = numbered(pm.src_a)
    rows = ["input"] + [f"after L{n}" for n in range(1, z.shape[0])]
    custom = np.round(pm.layer_positions_p, 4).tolist()
    heat = dict(type="heatmap", z=f32(np.nan_to_num(z, nan=0.0), 3), x=x, y=rows, zmin=-1, zmax=1,
                colorscale=colorscale_for(SIGNED_SCALE, dark), customdata=custom, xgap=1, ygap=1,
                hovertemplate="%{y}, position %{x}: restored %{z:.0%} (p = %{customdata:.3f})<extra></extra>",
                colorbar=dict(title=dict(text="restored"), thickness=14, tickformat=".0%"))
    shapes = [dict(type="rect", xref="x", yref="paper", x0=i - 0.5, x1=i + 0.5, y0=0, y1=1,
                   line=dict(color="#ff7f0e", width=3)) for i in pm.differing]
    layout = dict(xaxis=dict(title=dict(text="source position of sentence A (orange: the word that differs)"),
                             tickangle=-45, **cat_ticks(x)),
                  yaxis=dict(title=dict(text="encoder residual stream"), type="category",
                             autorange="reversed"),
                  shapes=shapes)
    title = (f"Where the encoder carries the difference: B's residual stream copied at one position, "
             f"p({esc(pm.piece)}) restored towards B")
    return fast_figure([heat], layout, dark, font_size, heatmap_height(len(rows) + 1, x, font_size), title)


def patch_parts_figure(pm: PatchMap, dark: bool, font_size: int):
    """Every sub-layer (rows: layers; columns: its kind) and every head (layers × heads), each copied alone
    from B."""
    sub_rows, sub_cols = [], ["self-attn.", "cross-attn.", "feed-fwd"]
    z_sub = []
    for stack, parts in pm.stack_parts.items():
        for n in range(pm.sublayer_p[stack].shape[0]):
            sub_rows.append(f"{'enc' if stack == 'encoder' else 'dec'} L{n + 1}")
            row = [np.nan] * 3
            for j, name in enumerate(parts):
                col = 1 if name == "cross-attention" else (0 if "self" in name else 2)
                row[col] = pm.sublayer_p[stack][n, j]
            z_sub.append(row)
    z = pm.restored(np.array(z_sub))
    heat = dict(type="heatmap", z=f32(z, 3), x=sub_cols, y=sub_rows, zmin=-1, zmax=1, hoverongaps=False,
                colorscale=colorscale_for(SIGNED_SCALE, dark), xgap=1, ygap=1,
                hovertemplate="%{y} %{x} from B: restored %{z:.0%}<extra></extra>",
                colorbar=dict(title=dict(text="restored"), thickness=14, tickformat=".0%"))
    layout = dict(xaxis=dict(side="bottom", title=dict(text="sub-layer"), **cat_ticks(sub_cols)),
                  yaxis=dict(type="category", autorange="reversed"),
                  plot_bgcolor="rgba(128,128,128,0.45)")    # grey: the encoder has no cross-attention
    title = f"Each sub-layer's output copied from B (every position): p({esc(pm.piece)}) restored towards B"
    return fast_figure([heat], layout, dark, font_size,
                       heatmap_height(len(sub_rows) + 1, sub_cols, font_size), title)


def patch_heads_figure(pm: PatchMap, dark: bool, font_size: int):
    return heads_by_kind(pm.head_p, pm.restored, -1, 1,
                         "%{y} head %{x} from B: restored %{z:.0%}<extra></extra>",
                         dict(title=dict(text="restored"), tickformat=".0%"),
                         f"Each head's share copied from B: p({esc(pm.piece)}) restored towards B", dark,
                         font_size)


def patch_html(pm: PatchMap) -> str:
    words = lambda pieces, at: " ".join(f"<mark>{html.escape(p)}</mark>" if i in at   # noqa: E731
                                        else html.escape(p)
                                        for i, p in enumerate(pieces[:-1]))
    best = max(((float(pm.restored(v)),
                 f"{'enc' if s == 'encoder' else 'dec'} L{n + 1} {pm.stack_parts[s][j]}")
                for s, arr in pm.sublayer_p.items() for (n, j), v in np.ndenumerate(arr)),
               default=(np.nan, ""))
    prefix = html.escape(detokenize(list(pm.tgt_pieces[:-1])))
    close = abs(pm.p_b - pm.p_a) < CLOSE_P
    warn = (" <b>A and B give this piece almost the same probability here: the maps' shares divide by that "
            "small difference and exaggerate it; read another step or piece.</b>" if close else "")
    return (f'<div class="patch-result"><p><b>A</b>: {words(pm.src_a, pm.differing)}<br><b>B</b>: '
            f"{words(pm.src_b, pm.differing)}</p><p>Read at step {pm.step} after « {prefix} »: "
            f"p(<b>{html.escape(pm.piece)}</b>) is <b>{pm.p_a:.1%}</b> for A and <b>{pm.p_b:.1%}</b> for B. "
            f"Copying one part of B's run into A's moves it from A's value (0 %) towards B's (100 %). "
            f"The sub-layer that carries most: {html.escape(best[1])} ({best[0]:.0%}). "
            f"Three maps, {pm.seconds:.2f} s.{warn}</p></div>")


def head_agreement(scores: np.ndarray, cross_probs: np.ndarray) -> np.ndarray:
    """(layers, heads): each cross-attention head's mean Spearman ρ, over the steps, between |attribution| (T,
    S) and its attention (layers, heads, T, S); NaN where it is undefined at every step."""
    from .why import spearman
    mag = np.abs(scores)
    L, H, T, _ = cross_probs.shape
    out = np.full((L, H), np.nan)
    for l in range(L):
        for h in range(H):
            r = [spearman(mag[t], cross_probs[l, h, t]) for t in range(min(T, mag.shape[0]))]
            if not all(np.isnan(r)):
                out[l, h] = float(np.nanmean(r))
    return out
