"""A standalone HTML report of one translation trace: what the app shows, opens offline (plotly.js inlined).

Every step's candidates and cross-attention, every kind's per-head maps, means, rollout and head
summary, "inside one head", and the positional encoding; in the light or the dark look. Every
token and the input text are HTML-escaped; nothing from the user is interpreted.
"""
from __future__ import annotations

import functools
import html
import json
import re
import unicodedata
from datetime import datetime, timezone

from ..config import PE_DEFAULT_DIMS, REPORT_TOP_CANDIDATES
from ..trace import KINDS, TranslationTrace
from . import figure, views
from .views import KIND_TITLES

CSS = """body{font-family:system-ui,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#111;
background:#fff}
h1{font-size:1.6em}h2{margin-top:1.6em;border-bottom:1px solid #ccc}
.piece{display:inline-block;border:1px solid #999;border-radius:4px;padding:0 4px;margin:1px;
font-family:monospace}
.tgt{background:#e8f1fb}.src{background:#fdf1e3}.chosen{background:#f6d9a6;font-weight:bold}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px;font-family:monospace}
.steps{display:grid;grid-template-columns:repeat(auto-fit,minmax(420px,1fr));gap:8px}
.note{color:#b45309;font-weight:600}.unsure{border:2px dotted #d55e00;text-decoration:underline wavy #d55e00}
.rare{border:2px dashed #d55e00}.rare sup{color:#d55e00;font-weight:bold}
.toc{border:1px solid #ccc;border-radius:8px;padding:4px 16px;margin:1em 0}
.toc h2{margin-top:.4em;border:none}.toc-steps{font-size:.9em;line-height:1.7}.toc a{text-decoration:none}"""
DARK_CSS = """body{color:#eee;background:#111827}h2{border-bottom-color:#444}a{color:#8ab4f8}
.piece{border-color:#777;color:#eee}.tgt{background:#1e3a5f}.src{background:#5a3b12}
.chosen{background:#8a5a00}td,th{border-color:#555}.note{color:#fbbf24}"""
FIG_CONFIG = {"displaylogo": False, "toImageButtonOptions": {"scale": 2}, "responsive": True}


def report_filename(text: str, max_words: int = 8) -> str:
    """A file name from the sentence: 'transformer-trace-the-cat-is-sleeping-on-the-sofa.html'."""
    plain = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower()
    words = re.findall(r"[a-z0-9]+", plain)[:max_words]
    return "transformer-trace" + "".join("-" + w for w in words)[:80] + ".html"


class _Figures:
    """Figures as placeholders of their own height, drawn by plotly.js (inlined once, in the head) when they
    scroll near the screen: the report opens at once however many figures it holds."""

    def __init__(self) -> None:
        self.specs: list[str] = []

    def __call__(self, fig) -> str:
        i = len(self.specs)
        self.specs.append(fig.to_json())
        height = int(fig.layout.height or 450)
        return f"<div class='fig' id='fig-{i}' data-fig='{i}' style='min-height:{height}px'></div>"

    def script(self) -> str:
        """The figures' JSON (every '<' escaped, so that no text in it can end the script) and the drawer."""
        data = "[" + ",".join(self.specs) + "]"
        data = data.replace("<", "\\u003c").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
        return (f"<script type='application/json' "
                f"id='figures'>{data}</script><script>{LAZY_JS.replace('FIG_CONFIG', CONFIG_JSON)}</script>")


CONFIG_JSON = json.dumps(FIG_CONFIG)
# Draw each figure when it comes within a screen of the viewport (and all of them before printing).
LAZY_JS = """(() => {
  const figs = JSON.parse(document.getElementById('figures').textContent), config = FIG_CONFIG;
  const draw = (el) => { if (el.dataset.drawn) return; el.dataset.drawn = 1; const f = figs[+el.dataset.fig];
    Plotly.newPlot(el, f.data, f.layout, config); };
  const seen = new IntersectionObserver((entries) => { for (const e of entries) if (e.isIntersecting) {
    draw(e.target); seen.unobserve(e.target); } }, {rootMargin: '100% 0px'});
  document.querySelectorAll('.fig').forEach((el) => seen.observe(el));
  window.addEventListener('beforeprint', () => document.querySelectorAll('.fig').forEach(draw)); })();"""


def _toc(trace: TranslationTrace) -> str:
    """The table of contents: each part of the report, and every step by its piece."""
    e = html.escape
    steps = " · ".join(f"<a href='#step-{t}'>{t}&nbsp;{e(figure.shown_piece(s.piece))}</a>"
                       for t, s in enumerate(trace.steps, start=1))
    kinds = "".join(f"<li><a href='#{kind}'>{e(KIND_TITLES[kind])}</a>: every layer × head, the mean of each "
                    f"layer, rollout, head summary, inside one head</li>" for kind in KINDS)
    return (f"<nav class='toc'><h2>Contents</h2><ol><li><a href='#steps'>Greedy decoding, step by step</a>"
            f"<div class='toc-steps'>{steps}</div></li>{kinds}<li><a href='#positional'>Positional "
            f"encoding</a></li></ol></nav>")


def _steps_section(trace: TranslationTrace, look: views.Look, fig: _Figures) -> list[str]:
    e, n = html.escape, REPORT_TOP_CANDIDATES
    L = trace.cross.layers
    parts = ["<h2 id='steps'>Greedy decoding, step by step</h2>"
             "<table><tr><th>step</th><th>chosen</th><th>p</th><th>top candidates</th></tr>"]
    for s in trace.steps:
        cands = ", ".join(f"{e(figure.shown_piece(p))} {q:.1%}"
                          for p, q in zip(s.topk_pieces[:n], s.topk_probs[:n]))
        parts.append(f"<tr><td>{s.index + 1}</td><td>{e(figure.shown_piece(s.piece))}</td><td>"
                     f"{s.prob:.1%}</td><td>{cands}</td></tr>")
    parts.append("</table>")
    parts.append(fig(views.cross_steps_figure(trace, len(trace.steps), L, "mean", look)))
    for t in range(1, len(trace.steps) + 1):
        info, topk, cross = views.step_view(trace, t, L, "mean over heads", look)
        parts.append(f"<h3 id='step-{t}'>Step {t}</h3>{info}<div class='steps'>{fig(topk)}{fig(cross)}</div>")
    return parts


def _kind_section(trace: TranslationTrace, kind, look: views.Look, fig: _Figures) -> list[str]:
    parts = [f"<h2 id='{kind}'>{html.escape(KIND_TITLES[kind])}</h2>",
             fig(views.grid_figure(trace, kind, True, look))]
    L = trace.attention(kind).layers
    for layer in range(1, L + 1):
        parts.append(fig(views.explorer_figure(trace, kind, layer, "mean", "mean", True, look)))
    parts.append(fig(views.explorer_figure(trace, kind, L, "mean", "rollout", True, look)))
    parts.append(fig(views.summary_view(trace, kind, look)[0]))
    inside, row, text = views.inside_view(trace, kind, L, "1", len(trace.attention(kind).queries), False,
                                          look)
    parts += [fig(inside), fig(row), f"<p>{html.escape(text)}</p>"]
    return parts


def build_report(trace: TranslationTrace, cfg, look: views.Look | None = None) -> str:
    look = look or views.Look()
    fig = _Figures()
    e = html.escape
    parts = [f"<h1>How the Transformer translated “{e(trace.source.text[:120])}”</h1>"
             f"<p><b>English:</b> {e(trace.source.text)}<br><b>French:</b> {e(trace.translation)}</p>"
             f"<p>{e(views.run_info(trace))} · generated {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC</p>",
             views.pieces_html(trace, links=False), _toc(trace)]
    parts += _steps_section(trace, look, fig)
    for kind in KINDS:
        parts += _kind_section(trace, kind, look, fig)
    parts.append(f"<p>{e(views.summary_legend().replace('**', '').replace('*', '').replace('`', ''))}</p>")
    parts.append("<h2 id='positional'>Positional encoding</h2>")
    parts += [fig(f) for f in views.positional_views(trace, cfg.d_model, PE_DEFAULT_DIMS, look)]
    body = "\n".join(parts)
    css = CSS + (DARK_CSS if look.dark else "")
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>Transformer trace: "
            f"{e(trace.source.text[:60])}</title><style>{css}</style><script>{plotly_js()}</script></head>"
            f"<body>{body}{fig.script()}</body></html>")


@functools.lru_cache(maxsize=1)
def plotly_js() -> str:
    """plotly.js, from the plotly package (inlined: the report opens offline)."""
    from plotly.offline import get_plotlyjs
    return get_plotlyjs()
