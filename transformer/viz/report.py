"""A standalone HTML report of one translation trace: every figure, opens offline (plotly.js inlined).

Every token and the input text are HTML-escaped; nothing from the user is interpreted.
"""
from __future__ import annotations

import html
from datetime import datetime, timezone

from ..config import PE_DEFAULT_DIMS, REPORT_TOP_CANDIDATES
from ..trace import KINDS, TranslationTrace
from . import views
from .views import KIND_TITLES

CSS = """body{font-family:system-ui,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#111}
h1{font-size:1.6em}h2{margin-top:1.6em;border-bottom:1px solid #ccc}.piece{display:inline-block;border:1px solid #999;
border-radius:4px;padding:0 4px;margin:1px;font-family:monospace}.tgt{background:#e8f1fb}.src{background:#fdf1e3}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px;font-family:monospace}"""


def build_report(trace: TranslationTrace, cfg, look: views.Look | None = None) -> str:
    look = look or views.Look()
    parts: list[str] = []
    first = [True]

    def fig(f):
        out = f.to_html(full_html=False, include_plotlyjs=True if first[0] else False,
                        config={"displaylogo": False, "toImageButtonOptions": {"scale": 2}})
        first[0] = False
        parts.append(out)

    e = html.escape
    parts.append(f"<h1>How the Transformer translated one sentence</h1>"
                 f"<p><b>English:</b> {e(trace.source.text)}<br><b>French:</b> {e(trace.translation)}</p>"
                 f"<p>{e(views.run_info(trace))} · generated {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC</p>")
    parts.append(views.pieces_html(trace))
    parts.append("<h2>Greedy decoding, step by step</h2><table><tr><th>step</th><th>chosen</th><th>p</th><th>top candidates</th></tr>")
    n = REPORT_TOP_CANDIDATES
    for s in trace.steps:
        cands = ", ".join(f"{e(p)} {q:.1%}" for p, q in zip(s.topk_pieces[:n], s.topk_probs[:n]))
        parts.append(f"<tr><td>{s.index + 1}</td><td>{e(s.piece)}</td><td>{s.prob:.1%}</td><td>{cands}</td></tr>")
    parts.append("</table>")
    for kind in KINDS:
        parts.append(f"<h2>{e(KIND_TITLES[kind])}</h2>")
        fig(views.grid_figure(trace, kind, True, look))
        L = trace.attention(kind).layers
        for layer in range(1, L + 1):
            fig(views.explorer_figure(trace, kind, layer, "mean", "mean", True, look))
        fig(views.explorer_figure(trace, kind, L, "mean", "rollout", True, look))
        fig(views.summary_view(trace, kind, look)[0])
    parts.append("<h2>Positional encoding</h2>")
    for f in views.positional_views(trace, cfg.d_model, PE_DEFAULT_DIMS, look):
        fig(f)
    body = "\n".join(parts)
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>Transformer trace: {e(trace.source.text[:60])}</title>"
            f"<style>{CSS}</style></head><body>{body}</body></html>")
