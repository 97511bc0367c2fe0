"""Step by step: the decoding slider with Previous / Next / Play, the step's figures, the KV cache panel
and What if? (another piece at a step, then greedy again).
"""
from __future__ import annotations

import html

import gradio as gr

from transformer.config import ModelConfig
from transformer.model.attention import MultiHeadAttention
from transformer.model.decoding import trace_greedy
from transformer.trace import TranslationTrace
from transformer.serving.translator import Translator
from transformer.viz import steering as steer_views
from transformer.viz import views
from transformer.viz import why as why_views

from ..fast_events import one_hop
from ..page import (NO_TRACE, Fit, Page, TabView, caption, code_panel, greedy_of, log, look_of, no_trace,
                    safe_view, slider_update)
from ..settings import PLAY_INTERVAL_S, PLAY_SPEEDS
from ..inputs import ChoiceDropdown, TextInput, WholeSlider


def step_controls(page: Page) -> tuple:
    """The step's controls on one row, so that the figures stay on screen: (Previous, the step slider, Next,
    Play, its speed, the layer, the head)."""
    L = page.cfg.n_decoder_layers
    with gr.Row(equal_height=True, elem_id="step-controls"):
        prev_btn = gr.Button("◀ Previous", elem_id="prev-step", scale=1, min_width=130)
        step = page.step_slider.render()   # made by the page (other tabs set its range too), shown here
        next_btn = gr.Button("Next ▶", elem_id="next-step", scale=1, min_width=100)
        play_btn = gr.Button("▶ Play", elem_id="play-step", scale=1, min_width=100)
        speed = ChoiceDropdown(PLAY_SPEEDS, value=PLAY_INTERVAL_S, label="Speed", scale=1, min_width=110,
                               elem_id="play-speed", filterable=False)
        layer = WholeSlider(1, L, value=L, step=1, label="Layer", scale=2, elem_id="step-layer")
        head = ChoiceDropdown(page.head_choices, value="mean over heads", label="Head", scale=2,
                              min_width=190, elem_id="step-head")
    return prev_btn, step, next_btn, play_btn, speed, layer, head


def build_steps_tab(page: Page) -> TabView:
    prev_btn, step, next_btn, play_btn, speed, layer, head = step_controls(page)
    step_info = gr.HTML(f"<i>{NO_TRACE}</i>", elem_id="step-info")
    caption("left, the pieces the model considered for this step and how probable each was (it takes the top "
            "one); right, which English pieces this step looked at (cross-attention); below, the same for "
            "every step so far: the alignment grows as you press Next.").elem_id = "step-caption"
    with gr.Row():
        topk_plot = gr.Plot(show_label=False, label="Next-token probabilities", elem_id="topk-plot")
        cross_plot = gr.Plot(show_label=False, label="Cross-attention over the source",
                             elem_id="cross-step-plot")
    cand, candidates, whatif_acc = build_what_if(page, step)      # right under the step it changes
    cross_steps = gr.Plot(show_label=False, label="Cross-attention, steps so far", elem_id="cross-steps-plot")
    kv_html, kv_acc = kv_cache_accordion()
    code_panel(trace_greedy)
    # Whether the What if? and KV cache panels are open: folded (as they open), a step does not build what
    # they show (a Translate of a room of 100 students, 100 candidate lists and cache tables fewer); opened,
    # they draw.
    whatif_open, kv_open = gr.State(False), gr.State(False)

    @safe_view
    def draw_step(trace, step_v, layer_v, head_v, whatif_v, kv_v, look, large, scale, narrow=False):
        """A step's figures, and with them its KV cache and its what-if candidates when their panels are
        open."""
        lk = look_of(look, large, scale, narrow)
        if trace is None:
            return (f"<i>{NO_TRACE}</i>", *no_trace(lk, 3), f"<i>{NO_TRACE}</i>", candidates(None, 1))
        args = (trace, int(step_v or 1), int(layer_v or 1), head_v, lk)
        return (*views.step_view(*args), views.cross_steps_figure(*args),
                # None: an empty value costs Gradio least
                kv_view(trace, page.cfg, args[1]) if kv_v else None,
                candidates(trace, args[1]) if whatif_v else None)

    def fit(trace):
        """A new translation is the original now (a what-if branch or your French is not)."""
        return trace, ""

    tab = TabView(draw_step, [step, layer, head, whatif_open, kv_open],
                  [step_info, topk_plot, cross_plot, cross_steps, kv_html, cand],
                  [Fit(fit, [], [page.original, page.viewing], after_branch=False, deferrable=False)])
    tab.link = dict(step=step, layer=layer, head=head)
    # The step's figures come in the same event that moves the slider (Previous, Next, the keys, Play), so
    # they always show the step the slider shows; a drag of the slider is one event too.
    step.input(**one_hop(tab.draw, tab.inputs(page), tab.outputs), api_name="step_view",
               show_progress="hidden", trigger_mode="always_last", concurrency_id="draw")
    tab.redraw_on(page, [layer, head], show_progress="hidden")
    for acc, opened in ((whatif_acc, whatif_open), (kv_acc, kv_open)):
        acc.expand(lambda: True, None, opened, api_visibility="undocumented", queue=False).then(
            **one_hop(tab.draw, tab.inputs(page), tab.outputs), api_visibility="undocumented",
            show_progress="hidden", concurrency_id="draw")
        acc.collapse(lambda: False, None, opened, api_visibility="undocumented", queue=False)
    wire_step_buttons(page, tab, step, prev_btn, next_btn, play_btn, speed)
    return tab


# Play's clock, in the browser: every `secs` it clicks Next, the same one event as a click of the button (the
# step moved and drawn at once), and never sends the next step before the last one is on screen. A gr.Timer
# ticked through the queue instead, and Gradio's page skips a tick while the one before is still pending
# (trigger_mode "once"): as a step's answer neared the interval (a busy server), Play slowed to 1.4, then 2 s
# a step for 1 (measured with 0.7 and 1 s added to each answer). Here the clicks keep their rhythm (one every
# `secs` from the press of Play, not `secs` after each answer); a step that comes late holds the next click
# until it is on screen, and the time lost is made up over the next clicks (none sooner than half a step after
# the one before). The first click waits for the server's Pause, and when Play starts at the end, for the
# step 1 it brings, up to 5 s after the label (the label can land before the step line: read at the end, the
# clock stopped at step 1); at the last step it stops and hands the button back to the server (Pause → Play).
# `window.__stepPlayer`, made by whichever of the events below runs first.
PLAYER_JS = """const P = window.__stepPlayer || (window.__stepPlayer = (() => {
  let on = false, secs = 1, timer = null, grid = 0, sent = null, rewind = null;
  const shown = () => {   // the step on screen and the number of steps, as the step line says
    const m = ((document.getElementById('step-info') || {}).textContent || '').match(/Step (\\d+) of (\\d+)/);
    return m ? [+m[1], +m[2]] : null;
  };
  const playing = () => ((document.getElementById('play-step') || {}).textContent || '').includes('Pause');
  const later = (ms) => { clearTimeout(timer); timer = setTimeout(tick, Math.max(0, ms)); };
  function tick() {
    timer = null;
    if (!on) return;
    const now = performance.now(), s = shown(), next = document.getElementById('next-step');
    if (!s || !next || document.visibilityState !== 'visible') return later(100);   // the step view not shown
    if (!playing()) return later(20);   // the server's Pause not here yet
    if (rewind !== null) {   // pressed at the end: the server's step 1 may land after its Pause label
      if (rewind === 0) rewind = now;   // counted from the label's arrival (a busy server answers late)
      if (s[0] >= s[1] && now - rewind < 5000) return later(20);
      rewind = null;
    }
    // the last step is not drawn yet
    if (sent && s[0] === sent.from && now - sent.at < 5000) return later(20);
    if (s[0] >= s[1]) {   // the end: the button back to Play (the server's Pause → Play)
      on = false; sent = null;
      document.getElementById('play-step').click();
      return;
    }
    next.click();
    sent = {from: s[0], at: now};
    grid += secs * 1000;                                    // the next beat of the rhythm started at Play
    if (grid < now) grid = now + secs * 1000;               // a whole step behind (a stall): a new rhythm
    // a late step's time made up, none under half
    later(Math.max(grid, now + secs * 500) - performance.now());
  }
  return {
    // Play pressed (the clock from now), or the server's label: Pause keeps it going, Play stops it
    set(play, s) {
      secs = Number(s) > 0 ? Number(s) : secs;
      if (play && !on) {
        const at = shown();
        on = true; sent = null; grid = performance.now() + secs * 1000; later(secs * 1000);
        rewind = at && at[0] >= at[1] ? 0 : null;
      }
      if (!play) { on = false; sent = null; rewind = null; clearTimeout(timer); timer = null; }
    },
    speed(s) { if (Number(s) > 0) secs = Number(s); },
  };
})());"""


def wire_step_buttons(page: Page, tab: TabView, step, prev_btn, next_btn, play_btn, speed) -> None:
    """Previous / Next (and the ← → keys, which click them), Play / Pause at the chosen speed (PLAYER_JS: the
    browser clicks Next). Each moves the slider and draws that step in one event."""
    def moved_to(trace, new_step, values):
        return (new_step, *tab.draw(trace, new_step, *values))

    def shift(delta):
        def go(request: gr.Request, trace, step_v, *values):
            n = views.n_steps(trace)
            new_step = max(1, min(n, int(step_v or 1) + delta)) if n else 1
            page.announce(request, trace, "steps", new_step)     # a live room's followers get it now
            return moved_to(trace, new_step, values)
        return go

    def toggle_play(trace, step_v, label, _speed, *values):
        """Play (from step 1 when at the end) or Pause: the button's label; the browser's clock follows it."""
        n = views.n_steps(trace)
        if str(label or "").startswith("▶") and n > 1:
            if int(step_v or 1) >= n:
                return ("⏸ Pause", *moved_to(trace, 1, values))
            return ("⏸ Pause", gr.skip(), *[gr.skip()] * len(tab.outputs))
        return ("▶ Play", gr.skip(), *[gr.skip()] * len(tab.outputs))

    ins, rest = [page.trace, step], [*tab.controls[1:], *page.look]
    quiet = dict(api_visibility="undocumented", show_progress="hidden", concurrency_id="draw")
    prev_btn.click(shift(-1), [*ins, *rest], [step, *tab.outputs], **quiet)
    next_btn.click(shift(+1), [*ins, *rest], [step, *tab.outputs], **quiet)
    in_browser = dict(api_visibility="private", queue=False, show_progress="hidden")
    # The clock starts at the press of Play (its first click waits for the server's Pause) and Pause stops it
    # at once; the label the server gives back stops it if Play was refused (nothing to play).
    play_btn.click(toggle_play, [*ins, play_btn, speed, *rest], [play_btn, step, *tab.outputs],
                   js=f"(...args) => {{ {PLAYER_JS} P.set(!String(args[2]).includes('Pause'), args[3]); "
                      f"return args; }}",
                   **quiet).then(None, [play_btn, speed], None,
                                 js=f"(label, secs) => {{ {PLAYER_JS} P.set(String(label).includes('Pause'), "
                                    f"secs); }}",
                                 **in_browser)
    speed.change(None, speed, None, js=f"(secs) => {{ {PLAYER_JS} P.speed(secs); }}", **in_browser)


def what_if_callback(translator: Translator):
    def what_if(english, step_v, piece, trace, original):
        """Another piece at one step, then greedy again: one model run (from the trace shown, when it is
        of this sentence). Returns the new trace, the original, the comparison, the new French, the slider."""
        keep = (gr.update(),) * 6
        try:
            base = trace if trace is not None and greedy_of(trace, None, english) is not None else None
            new = translator.what_if(english, step_v, piece, base.tgt_ids if base is not None else ())
            orig = greedy_of(None, original, english) or (base if base is not None and original is None
                                                          else None)
            orig = orig or translator.trace(english)
        except ValueError as e:
            gr.Warning(str(e))
            return (*keep[:2], f'<div class="note">{html.escape(str(e))}</div>', *keep[3:])
        except Exception:  # noqa: BLE001  a model failure is this user's, not the app's
            log.exception("what-if failed")
            gr.Warning("Sorry, the model failed on this branch. Try another piece.")
            return keep
        return (new, orig, steer_views.branch_html(orig, new, int(step_v)), new.translation,
                slider_update(len(new.steps), int(step_v)), views.pieces_html(new))
    return what_if


def what_if_api(translator: Translator):
    def what_if(english: str, step: int, piece: str) -> tuple[str, str, int, str]:
        """At step `step` (1-based) of the greedy translation of `english`, take `piece` instead, then go on
        greedily: the comparison with the greedy translation (HTML, or a note on what was wrong), the new
        French, its number of steps, and its pieces (HTML). Needs no page: the API's /what_if."""
        out = what_if_callback(translator)(english, step, piece, None, None)
        if not isinstance(out[0], TranslationTrace):
            return out[2] if isinstance(out[2], str) else "Sorry, the model failed on this branch.", "", 0, ""
        return out[2], out[3], len(out[0].steps), out[5]
    return what_if


def build_what_if(page: Page, step):
    """Under the step view: take another candidate (or a typed piece) at this step, continue greedily,
    compare with the original, and go back. Returns the candidate picker, the function that lists a step's
    candidates (the step tab updates the picker with every step while the panel is open) and the panel."""
    with gr.Accordion("What if? Take another piece at this step", open=False, elem_id="whatif-acc") as acc:
        with gr.Row():
            cand = ChoiceDropdown([], value=None, label="Another candidate at this step",
                                  elem_id="whatif-cand", scale=2)
            piece = TextInput(label="…or type a piece (as the step view shows it)", elem_id="whatif-piece",
                               max_length=100, scale=2)
            go_btn = gr.Button("Continue from this piece", variant="primary", elem_id="whatif-btn", scale=1)
            back_btn = gr.Button("Back to the original", elem_id="whatif-back", scale=1)
    quiet = dict(api_visibility="undocumented", queue=False)

    def candidates(trace, step_v):
        if trace is None or not trace.steps:
            return gr.update(choices=[], value=None)
        s = trace.steps[views.clamp(step_v or 1, 1, len(trace.steps)) - 1]
        return gr.update(choices=[(f"{p}  ({q:.1%})", p) for p, q in zip(s.topk_pieces, s.topk_probs)],
                         value=None)

    def go_back(original, step_v):
        """The original again, at the step on screen (the last of its own when it is shorter): the next What
        if starts where you were."""
        if original is None:
            gr.Warning("Translate a sentence first.")
            return (gr.update(),) * 5
        return (original, "", original.translation, slider_update(len(original.steps), int(step_v or 1)),
                views.pieces_html(original))

    cand.change(lambda c: c if c else gr.update(), cand, piece, **quiet)
    page.model_events.append(go_btn.click(
        what_if_callback(page.translator), [page.text, step, piece, page.trace, page.original],
        [page.trace, page.original, page.viewing, page.french, step, page.pieces], api_name="what_if_on_page",
        api_visibility="undocumented", concurrency_id="model"))
    gr.api(what_if_api(page.translator), api_name="what_if", concurrency_id="model")
    for back in (back_btn, page.back):
        page.model_events.append(back.click(go_back, [page.original, step],
                                            [page.trace, page.viewing, page.french, step, page.pieces],
                                            **quiet))
    return cand, candidates, acc


def kv_cache_accordion():
    """The Step-by-step tab's KV-cache panel (collapsed): what is cached at this step, and what it saves.
    Returns its table and the panel."""
    with gr.Accordion("KV cache at this step", open=False) as acc:
        gr.Markdown(
            "Decoding feeds one new piece per step: each decoder layer appends its key and value to the "
            "cache and reuses the earlier ones; the cross-attention keys and values of the source are "
            "computed once. Multiply-adds at step t (S source pieces, L decoder layers, d = d_model): per "
            "layer and position 6d² (W<sup>Q</sup>, W<sup>K</sup>, W<sup>V</sup>, W<sup>O</sup> of "
            "self-attention, W<sup>Q</sup>, W<sup>O</sup> of cross-attention) + 2·d·d_ff (feed-forward) + "
            "2·d·(keys seen) + 2·d·S (the two attention products), and d·vocab for the output layer. With "
            "the cache one position per step, seeing t keys (and 2·S·d² per layer for the source's keys and "
            "values, at step 1 only); recomputing the prefix, t positions each scoring all t keys (the "
            "masked ones too), the source's keys and values again, and t output rows. "
            "Biases and layer norms are left out.")
        out = gr.HTML(elem_id="kv-cache")
        code_panel(MultiHeadAttention.forward, why_views.kv_macs)
    return out, acc


def kv_view(trace, cfg: ModelConfig, step: int) -> str:
    s = trace.steps[views.clamp(step, 1, len(trace.steps)) - 1]
    return why_views.kv_cache_html(s.prefix, trace.src_pieces, cfg.n_decoder_layers, cfg.d_model, cfg.d_ff,
                                   cfg.vocab_size)
