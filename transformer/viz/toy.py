"""Design choices trained live (``transformer/training/toy.py``): the two models' loss curves, what the choice
is about (accuracy by length, the softmax's entropy and the gradient through it, accuracy on fresh strings),
one attention map each on one colour scale, and the paragraph that says what the paper says, what the run
shows and what to take from it. Reads a snapshot's plain data (``Snapshot.to_dict``) only; imports neither
torch nor gradio.

The words that state the run's outcome are built from its numbers (``outcome``), so a caption never
contradicts its figure; ``EFFECTS`` holds, per choice, the direction the paper's side should win by and the
margin the tests check on the shipped seed.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from .figure import esc, fast_figure, grow
from .style import PALETTE

A_COLOUR, B_COLOUR = PALETTE[0], PALETTE[5]      # blue (the paper's side) and vermillion (the other)
DIGITS = "0123456789"
def legend(corner: str = "top") -> dict:
    """The two models' legend inside the plot, in a corner the curves leave free."""
    return dict(orientation="v", x=0.99, xanchor="right", y=0.98 if corner == "top" else 0.04,
                yanchor="top" if corner == "top" else "bottom", bgcolor="rgba(127,127,127,0.12)")

PARAGRAPHS = {   # name -> (what the paper says, what to take from it); the run's own outcome goes between
    "positions": ("Section 3.5 adds a fixed sinusoid to each position and reports that learned positional "
                  "embeddings gave nearly identical results (Table 3, row E), choosing the sinusoids because "
                  "they \"may allow the model to extrapolate to sequence lengths longer than the ones "
                  "encountered during training\". Both models copy digit strings, trained on lengths 3–8 and "
                  "tested up to 12.",
                  "Within the trained lengths the two are alike, as the paper found. Past the longest "
                  "trained length both fall: the learned table has no trained vector for those positions, "
                  "and the sinusoids, though defined there, do not carry the model far either. Extrapolating "
                  "to longer inputs needs more than the form of the position signal: later work such as "
                  "ALiBi (Press et al. 2022) was made for it."),
    "scale": ("Section 3.2.1: \"We suspect that for large values of d_k, the dot products grow large in "
              "magnitude, pushing the softmax function into regions where it has extremely small gradients. "
              "To counteract this effect, we scale the dot products by 1/√d_k.\" Both models (one head of "
              "d_k = 256) learn to reverse digit strings.",
              "Without the scaling the softmax starts far more peaked than with it and ends saturated: each "
              "row puts nearly all its weight on one piece (entropy near 0), the gradient passing back "
              "through it (∂loss/∂scores) is several times smaller, and learning stalls; divided by √d_k the "
              "scores start near unit size and the model learns. The run bears out the paper's suspicion."),
    "norm": ("The paper puts LayerNorm after each residual addition (post-norm) and trains with 4,000 "
             "warm-up steps. Xiong et al. (2020, \"On Layer Normalization in the Transformer Architecture\") "
             "showed that post-norm needs that warm-up and that pre-norm, LayerNorm inside the residual "
             "branch, trains without it. Both models (4 + 4 layers) reverse digit strings at a learning rate "
             "of 0.01 from the first step.",
             "With no warm-up at this rate post-norm collapses: its attention goes uniform, almost no "
             "gradient passes back through its softmax, and its loss stays at a guess's (ln 11 ≈ 2.40, one "
             "of 10 digits and </s>); pre-norm keeps an identity path through every layer and learns."),
    "heads": ("Section 3.2.2: \"Multi-head attention allows the model to jointly attend to information from "
              "different representation subspaces at different positions. With a single attention head, "
              "averaging inhibits this.\" Each output digit is the difference of two neighbouring input "
              "digits, so each step needs two positions at once; both models have one layer a side and the "
              "same width.",
              "Four heads can read the two neighbours side by side; one head reads one place per step, so it "
              "must first bring each digit's neighbour into that place through the encoder's self-attention, "
              "a two-step circuit it finds much later (the longer run shows it gets there). Table 3 (rows A) "
              "shows the cost in translation: one head is 0.9 BLEU worse than eight."),
    "nopos": ("Section 3.5: \"Since our model contains no recurrence and no convolution, in order for the "
              "model to make use of the order of the sequence, we must inject some information about the "
              "relative or absolute position of the tokens in the sequence.\" Beyond the paper: the same "
              "model with no positional encoding at all, asked to reverse digit strings.",
              "Without positions self-attention sees the input as a bag of digits: the encoder cannot tell "
              "the first from the last, and reversing, which depends only on order, fails; with the "
              "sinusoids it is learned within the run."),
}


def _side(snap: dict, s: str) -> dict:
    return snap[s]


def _steps(snap: dict, n: int) -> list[int]:
    if snap["a"].get("at"):
        return list(snap["a"]["at"])[:n]
    every = snap["every"]
    steps = [every * (i + 1) for i in range(n)]
    if steps:
        steps[-1] = min(steps[-1], snap["step"])
    return steps


def loss_figure(snap: dict, dark: bool, font_size: int):
    """Training loss of the two models at each snapshot, on the same axes."""
    data = []
    for s, colour in (("a", A_COLOUR), ("b", B_COLOUR)):
        side = _side(snap, s)
        data.append(dict(type="scatter", mode="lines+markers", name=esc(snap[f"{s}_label"]),
                         x=_steps(snap, len(side["loss"])),
                         y=[None if not np.isfinite(v) else round(v, 4) for v in side["loss"]],
                         line=dict(color=colour, width=3), marker=dict(size=5),
                         hovertemplate="step %{x}: loss %{y:.3f}<extra>%{fullData.name}</extra>"))
    layout = dict(xaxis=dict(title=dict(text="training step"), range=[0, snap["steps"]]),
                  yaxis=dict(title=dict(text="training loss"), rangemode="tozero"), legend=legend("top"))
    return fast_figure(data, layout, dark, font_size, grow(340, font_size),
                       f"Training loss, step {snap['step']} of {snap['steps']}")


def choice_figure(snap: dict, dark: bool, font_size: int):
    """What this choice is about: accuracy by length (positions), entropy and gradient size (√d_k), or fresh
    accuracy over training (the others)."""
    if snap["choice"] == "positions":
        return _by_length(snap, dark, font_size)
    if snap["choice"] == "scale":
        return _entropy_and_gradient(snap, dark, font_size)
    data = [dict(type="scatter", mode="lines+markers", name=esc(snap[f"{s}_label"]),
                 x=_steps(snap, len(snap[s]["accuracy"])), y=[round(v, 4) for v in snap[s]["accuracy"]],
                 line=dict(color=c, width=3), marker=dict(size=5),
                 hovertemplate="step %{x}: %{y:.0%} right<extra>%{fullData.name}</extra>")
            for s, c in (("a", A_COLOUR), ("b", B_COLOUR))]
    layout = dict(xaxis=dict(title=dict(text="training step"), range=[0, snap["steps"]]),
                  yaxis=dict(title=dict(text="fresh strings right"), range=[0, 1.05], tickformat=".0%"),
                  legend=legend("bottom"))
    return fast_figure(data, layout, dark, font_size, grow(340, font_size),
                       "Fresh random strings fully right")


def _by_length(snap: dict, dark: bool, font_size: int):
    lo, hi = snap["train_lengths"]
    data = []
    for s, c in (("a", A_COLOUR), ("b", B_COLOUR)):
        by = snap[s]["by_length"]
        lengths = sorted(int(k) for k in by)
        data.append(dict(type="bar", name=esc(snap[f"{s}_label"]), x=lengths, y=[by[str(n)] for n in lengths],
                         marker=dict(color=c),
                         hovertemplate="length %{x}: %{y:.0%} right<extra>%{fullData.name}</extra>"))
    shapes = [dict(type="rect", xref="x", yref="paper", x0=hi + 0.5,
                   x1=max(int(k) for k in snap["a"]["by_length"]) + 0.5, y0=0, y1=1,
                   fillcolor="rgba(128,128,128,0.15)", line=dict(width=0), layer="below")]
    layout = dict(barmode="group", shapes=shapes,
                  xaxis=dict(title=dict(text=f"length (trained: {lo}–{hi})"), dtick=1),
                  yaxis=dict(title=dict(text="strings fully right"), range=[0, 1.05], tickformat=".0%"),
                  legend=legend("top"))
    return fast_figure(data, layout, dark, font_size, grow(340, font_size),
                       "Accuracy by length (shaded: longer than any trained string)")


def _entropy_and_gradient(snap: dict, dark: bool, font_size: int):
    data = []
    for s, c in (("a", A_COLOUR), ("b", B_COLOUR)):
        side, x = snap[s], _steps(snap, len(snap[s]["entropy"]))
        data.append(dict(type="scatter", mode="lines", name=esc(snap[f"{s}_label"]) + ": softmax entropy",
                         x=x, y=[round(v, 4) for v in side["entropy"]], line=dict(color=c, width=3),
                         hovertemplate="step %{x}: entropy %{y:.2f}<extra>%{fullData.name}</extra>"))
        data.append(dict(type="scatter", mode="lines", name=esc(snap[f"{s}_label"]) + ": gradient through it",
                         x=x[1:], y=list(side["grad_norm"][1:]), yaxis="y2",
                         line=dict(color=c, width=2, dash="dot"),
                         hovertemplate="step %{x}: gradient through the softmax "
                                       "%{y:.3g}<extra>%{fullData.name}</extra>"))
    layout = dict(xaxis=dict(title=dict(text="training step"), range=[0, snap["steps"]], anchor="y2"),
                  yaxis=dict(title=dict(text="entropy"), range=[0, 1.05], domain=[0.58, 1], anchor="x"),
                  yaxis2=dict(title=dict(text="∂loss/∂scores"), domain=[0, 0.42], type="log", dtick=1,
                              anchor="x"),
                  legend=dict(orientation="h", x=0, y=-0.22, yanchor="top"))
    return fast_figure(data, layout, dark, font_size, grow(520, font_size),
                       "The encoder's softmax: its entropy (solid) and the gradient through it (dotted, log "
                       "scale)")


def attention_figure(snap: dict, dark: bool, font_size: int, colorscale="Viridis", narrow: bool = False):
    """One example's cross-attention (last layer, mean over heads) in each model, side by side on one colour
    scale (0 to 1); on a phone (`narrow`) one above the other, each the column's width."""
    src, tgt = snap["example"]
    x = [DIGITS[d] for d in src] + [esc("</s>")]
    y = [DIGITS[d] for d in tgt] + [esc("</s>")]
    data = []
    for i, s in enumerate(("a", "b")):
        z = np.asarray(snap[s]["attention"], dtype=float)
        if z.size == 0:
            continue
        data.append(dict(type="heatmap", z=np.round(z, 3).tolist(), x=list(range(len(x))),
                         y=list(range(len(y))), xaxis=f"x{i + 1 if i else ''}",
                         yaxis=f"y{i + 1 if i else ''}", zmin=0, zmax=1, colorscale=colorscale,
                         showscale=i == 1, xgap=1, ygap=1,
                         hovertemplate="writing %{y}, reading %{x}: %{z:.2f}<extra></extra>"))
    ticks = dict(tickmode="array", tickvals=list(range(len(x))), ticktext=x, automargin=False)
    yticks = dict(tickmode="array", tickvals=list(range(len(y))), ticktext=y, autorange="reversed",
                  automargin=False)
    # (margins set here: Plotly's automargin with a second x axis that starts mid-figure pushed
    # the first aside)
    titles = [dict(text=esc(snap[f"{s}_label"]) + ": source digit") for s in ("a", "b")]
    if narrow:     # stacked, each map the column's width, the colour bar across the top: room for every digit
        gap = 3.2 * font_size / grow(720, font_size)
        if data:
            data[-1]["colorbar"] = dict(orientation="h", x=0, xanchor="left", len=1, y=1, yanchor="bottom",
                                        yref="paper", ypad=int(0.6 * font_size), thickness=10,
                                        tickfont=dict(size=max(10, font_size - 2)))
        layout = dict(xaxis=dict(domain=[0, 1], anchor="y", title=titles[0], **ticks),
                      xaxis2=dict(domain=[0, 1], anchor="y2", title=titles[1], **ticks),
                      yaxis=dict(domain=[0.5 + gap, 1], anchor="x", title=dict(text="digit written"),
                                 **yticks),
                      yaxis2=dict(domain=[0, 0.5 - gap], anchor="x2", title=dict(text="digit written"),
                                  **yticks),
                      margin=dict(l=int(3.6 * font_size), r=4, b=int(5.8 * font_size),
                                  t=int(6.6 * font_size)))
        height = grow(720, font_size)
    else:
        layout = dict(xaxis=dict(domain=[0, 0.45], anchor="y", title=titles[0], **ticks),
                      xaxis2=dict(domain=[0.53, 0.98], anchor="y2", title=titles[1], **ticks),
                      yaxis=dict(anchor="x", title=dict(text="digit written"), **yticks),
                      yaxis2=dict(anchor="x2", showticklabels=False, **yticks),
                      margin=dict(l=int(4 * font_size), r=int(4 * font_size), b=int(3.6 * font_size),
                                  t=int(4.2 * font_size)))
        height = grow(360, font_size)
    return fast_figure(data, layout, dark, font_size, height,
                       "Where each model's last layer looks while writing (cross-attention, mean over heads; "
                       "one colour scale)")


def _mean_lengths(snap: dict, s: str, lo: int, hi: int) -> Optional[float]:
    vals = [v for k, v in snap[s]["by_length"].items() if lo <= int(k) <= hi]
    return float(np.mean(vals)) if vals else None


def _trained_and_past(snap: dict, s: str) -> tuple[float, float]:
    """Accuracy on fresh strings of the trained lengths, and of lengths at least two past the longest trained
    one (NaN where the run has none: no claim about them holds)."""
    lo, hi = snap["train_lengths"]
    inside, past = _mean_lengths(snap, s, lo, hi), _mean_lengths(snap, s, hi + 2, 10 ** 6)
    return (float("nan") if inside is None else inside), (float("nan") if past is None else past)


def outcome(snap: dict) -> str:
    """What this run shows, in numbers read from it."""
    a, b = snap["a_label"], snap["b_label"]
    acc_a, acc_b = snap["a"]["accuracy"][-1], snap["b"]["accuracy"][-1]
    at = f"After {snap['step']} steps"
    if snap["choice"] == "positions":
        lo, hi = snap["train_lengths"]
        (in_a, past_a), (in_b, past_b) = _trained_and_past(snap, "a"), _trained_and_past(snap, "b")
        at9_a, at9_b = (snap["a"]["by_length"].get(str(hi + 1), 0.0),
                        snap["b"]["by_length"].get(str(hi + 1), 0.0))
        return (f"{at}: on the trained lengths {lo}–{hi}, {a} {in_a:.0%} and {b} {in_b:.0%} of the fresh "
                f"strings right; at length {hi + 1}, {a} {at9_a:.0%} and {b} {at9_b:.0%}; from {hi + 2} on, "
                f"{a} {past_a:.0%} and {b} {past_b:.0%}.")
    if snap["choice"] == "scale":
        ea, eb = snap["a"]["entropy"][-1], snap["b"]["entropy"][-1]
        ga, gb = float(np.median(snap["a"]["grad_norm"][1:])), float(np.median(snap["b"]["grad_norm"][1:]))
        return (f"{at}: the encoder's softmax entropy {a} {ea:.2f}, {b} {eb:.2f} (at the start "
                f"{snap['a']['entropy'][0]:.2f} and {snap['b']['entropy'][0]:.2f}); the median gradient "
                f"through the softmax {ga:.2g} and {gb:.2g}; fresh strings right: {a} {acc_a:.0%}, "
                f"{b} {acc_b:.0%}.")
    la, lb = snap["a"]["loss"][-1], snap["b"]["loss"][-1]
    out = (f"{at}: training loss {a} {la:.2f}, {b} {lb:.2f}; fresh strings right: {a} {acc_a:.0%}, {b} "
           f"{acc_b:.0%}")
    if snap["choice"] == "heads":
        sa, sb = first_step(snap, "a"), first_step(snap, "b")
        said = lambda n: f"at step {n}" if n is not None else "not yet"          # noqa: E731
        out += f"; 90% of the strings right: {a} {said(sa)}, {b} {said(sb)}"
    return out + "."


def paragraph(snap: dict) -> str:
    """The view's text (Markdown): what the paper says, what this run shows, what to take from it."""
    paper, take = PARAGRAPHS[snap["choice"]]
    return f"**The paper.** {paper}\n\n**This run.** {outcome(snap)}\n\n**Take from it.** {take}"


# name -> what the tests check at the end of a run, on the shipped seed: (what, margin); ``effect``
# must reach it
EFFECTS = {"positions": ("both sides' accuracy on the trained lengths minus that from two past them", 0.5),
           "scale": ("the scaled model's accuracy on fresh strings minus the unscaled one's", 0.5),
           "norm": ("pre-norm's accuracy on fresh strings minus post-norm's", 0.3),
           "heads": ("four heads' accuracy minus one head's when four heads first get 90% of the strings "
                     "right", 0.4),
           "nopos": ("the sinusoidal model's accuracy on fresh strings minus the position-free one's", 0.6)}


def first_step(snap: dict, s: str, share: float = 0.9) -> Optional[int]:
    """The first snapshot's step at which `share` of the fresh strings were right (None: not yet)."""
    steps = _steps(snap, len(snap[s]["accuracy"]))
    return next((n for n, v in zip(steps, snap[s]["accuracy"]) if v >= share), None)


def effect(snap: dict) -> float:
    """The size of the effect the paragraph states, in the direction it states it (see EFFECTS)."""
    if snap["choice"] == "positions":
        return min(inside - past
                   for inside, past in (_trained_and_past(snap, "a"), _trained_and_past(snap, "b")))
    if snap["choice"] == "heads":           # when four heads first get 90% right: how far behind one head is
        i = next((i for i, v in enumerate(snap["a"]["accuracy"]) if v >= 0.9), None)
        return 0.0 if i is None else snap["a"]["accuracy"][i] - snap["b"]["accuracy"][i]
    return snap["a"]["accuracy"][-1] - snap["b"]["accuracy"][-1]


def claims(snap: dict) -> list[tuple[str, bool]]:
    """Each statement the choice's paragraph makes about its runs, and whether this run bears it out (the
    tests require every one, for the live run and the shipped one)."""
    a, b = snap["a"], snap["b"]
    name = snap["choice"]
    out = [(f"the effect ({EFFECTS[name][0]}) reaches {EFFECTS[name][1]}",
            bool(effect(snap) >= EFFECTS[name][1]))]
    if name == "positions":
        (in_a, past_a), (in_b, past_b) = _trained_and_past(snap, "a"), _trained_and_past(snap, "b")
        out += [("within the trained lengths the two are alike (both at least 80%, within 10 points)",
                 bool(min(in_a, in_b) >= 0.8 and abs(in_a - in_b) <= 0.1)),
                ("past the longest trained length both fall (at most 20% from two past it)",
                 bool(max(past_a, past_b) <= 0.2))]
    elif name == "scale":
        out += [("without the scaling the softmax starts far more peaked (entropy at step 0 at most a third "
                 "of the scaled one's) and ends saturated (at most 0.1)",
                 bool(b["entropy"][0] <= a["entropy"][0] / 3 and b["entropy"][-1] <= 0.1)),
                ("the gradient through the unscaled softmax is several times smaller (median at most a "
                 "third)",
                 bool(np.median(b["grad_norm"][1:]) <= np.median(a["grad_norm"][1:]) / 3))]
    elif name == "norm":
        attn = np.asarray(b["attention"], dtype=float)
        out += [("post-norm's loss stays at a guess's (ln 11 ≈ 2.40, within 0.3)",
                 bool(abs(b["loss"][-1] - np.log(11)) <= 0.3)),
                ("post-norm's attention goes uniform (every weight within 0.02 of 1 / the source's length)",
                 bool(np.abs(attn - 1 / attn.shape[1]).max() <= 0.02)),
                ("almost no gradient passes back through post-norm's softmax (below a thousandth of "
                 "pre-norm's)",
                 bool(b["grad_norm"][-1] <= 1e-3 * np.median(a["grad_norm"][1:])))]
    return out
