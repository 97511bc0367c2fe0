"""A standalone HTML report of one translation trace: what the app shows, opens offline (plotly.js inlined).

Every step's candidates and cross-attention, every kind's per-head maps, means, rollout and head
summary, "inside one head", and the positional encoding; in the light or the dark look. Every
token and the input text are HTML-escaped; nothing from the user is interpreted.
"""
from __future__ import annotations

import html
import re
import unicodedata
from datetime import datetime, timezone

from ..config import PE_DEFAULT_DIMS, REPORT_TOP_CANDIDATES
from ..trace import KINDS, TranslationTrace
from . import figure, views
from .views import KIND_TITLES

CSS = """body{font-family:system-ui,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#111;background:#fff}
h1{font-size:1.6em}h2{margin-top:1.6em;border-bottom:1px solid #ccc}.piece{display:inline-block;border:1px solid #999;
border-radius:4px;padding:0 4px;margin:1px;font-family:monospace}.tgt{background:#e8f1fb}.src{background:#fdf1e3}
.chosen{background:#f6d9a6;font-weight:bold}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px;font-family:monospace}
.steps{display:grid;grid-template-columns:repeat(auto-fit,minmax(420px,1fr));gap:8px}.note{color:#b45309;font-weight:600}
.unsure{border:2px dotted #d55e00;text-decoration:underline wavy #d55e00}.rare{border:2px dashed #d55e00}
.rare sup{color:#d55e00;font-weight:bold}"""
DARK_CSS = """body{color:#eee;background:#111827}h2{border-bottom-color:#444}a{color:#8ab4f8}.piece{border-color:#777;color:#eee}
.tgt{background:#1e3a5f}.src{background:#5a3b12}.chosen{background:#8a5a00}td,th{border-color:#555}.note{color:#fbbf24}"""
FIG_CONFIG = {"displaylogo": False, "toImageButtonOptions": {"scale": 2}, "responsive": True}


def report_filename(text: str, max_words: int = 8) -> str:
    """A file name from the sentence: 'transformer-trace-the-cat-is-sleeping-on-the-sofa.html'."""
    plain = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower()
    words = re.findall(r"[a-z0-9]+", plain)[:max_words]
    return "transformer-trace" + "".join("-" + w for w in words)[:80] + ".html"


class _Figures:
    """Figures as HTML: plotly.js inlined once, with the first figure."""

    def __init__(self) -> None:
        self.first = True

    def __call__(self, fig) -> str:
        out = fig.to_html(full_html=False, include_plotlyjs=self.first, config=FIG_CONFIG)
        self.first = False
        return out


def _steps_section(trace: TranslationTrace, look: views.Look, fig: _Figures) -> list[str]:
    e, n = html.escape, REPORT_TOP_CANDIDATES
    L = trace.cross.layers
    parts = ["<h2>Greedy decoding, step by step</h2><table><tr><th>step</th><th>chosen</th><th>p</th>"
             "<th>top candidates</th></tr>"]
    for s in trace.steps:
        cands = ", ".join(f"{e(figure.shown_piece(p))} {q:.1%}" for p, q in zip(s.topk_pieces[:n], s.topk_probs[:n]))
        parts.append(f"<tr><td>{s.index + 1}</td><td>{e(figure.shown_piece(s.piece))}</td><td>{s.prob:.1%}</td>"
                     f"<td>{cands}</td></tr>")
    parts.append("</table>")
    parts.append(fig(views.cross_steps_figure(trace, len(trace.steps), L, "mean", look)))
    for t in range(1, len(trace.steps) + 1):
        info, topk, cross = views.step_view(trace, t, L, "mean over heads", look)
        parts.append(f"<h3>Step {t}</h3>{info}<div class='steps'>{fig(topk)}{fig(cross)}</div>")
    return parts


def _kind_section(trace: TranslationTrace, kind, look: views.Look, fig: _Figures) -> list[str]:
    parts = [f"<h2>{html.escape(KIND_TITLES[kind])}</h2>", fig(views.grid_figure(trace, kind, True, look))]
    L = trace.attention(kind).layers
    for layer in range(1, L + 1):
        parts.append(fig(views.explorer_figure(trace, kind, layer, "mean", "mean", True, look)))
    parts.append(fig(views.explorer_figure(trace, kind, L, "mean", "rollout", True, look)))
    parts.append(fig(views.summary_view(trace, kind, look)[0]))
    inside, row, text = views.inside_view(trace, kind, L, "1", len(trace.attention(kind).queries), False, look)
    parts += [fig(inside), fig(row), f"<p>{html.escape(text)}</p>"]
    return parts


def build_report(trace: TranslationTrace, cfg, look: views.Look | None = None) -> str:
    look = look or views.Look()
    fig = _Figures()
    e = html.escape
    parts = [f"<h1>How the Transformer translated “{e(trace.source.text[:120])}”</h1>"
             f"<p><b>English:</b> {e(trace.source.text)}<br><b>French:</b> {e(trace.translation)}</p>"
             f"<p>{e(views.run_info(trace))} · generated {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC</p>",
             views.pieces_html(trace, links=False)]
    parts += _steps_section(trace, look, fig)
    for kind in KINDS:
        parts += _kind_section(trace, kind, look, fig)
    parts.append(f"<p>{e(views.summary_legend().replace('**', '').replace('*', '').replace('`', ''))}</p>")
    parts.append("<h2>Positional encoding</h2>")
    parts += [fig(f) for f in views.positional_views(trace, cfg.d_model, PE_DEFAULT_DIMS, look)]
    body = "\n".join(parts)
    css = CSS + (DARK_CSS if look.dark else "")
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>Transformer trace: {e(trace.source.text[:60])}"
            f"</title><style>{css}</style></head><body>{body}</body></html>")
