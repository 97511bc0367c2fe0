"""Your French & beams: teacher forcing of a French text, and beam search drawn as a tree.
"""
from __future__ import annotations

import html

import gradio as gr

from transformer import params

from transformer.config import BEAM_DEFAULT, BEAM_MAX
from transformer.model import steering as decoder_steering
from transformer.serving.translator import Translator
from transformer.viz import steering as steer_views
from transformer.viz import views
from transformer.viz.figure import empty_figure

from ..page import Page, TabView, caption, code_panel, greedy_of, log, look_of, safe_view, slider_update
from ..settings import TEXTBOX_MAX_CHARS
from ..inputs import TextInput, WholeSlider


def forced_callback(translator: Translator):
    def forced_decoding(english, french, trace, original):
        """Your French read with teacher forcing: one forward pass. The views then show that pass."""
        try:
            greedy = greedy_of(trace if trace is not None and trace.steps and original is None else None,
                               original, english) or translator.trace(english)
            result = translator.forced(english, params.text(french, "French translation"))
        except ValueError as e:
            gr.Warning(str(e))
            return (gr.update(),) * 3 + (f'<div class="note">{html.escape(str(e))}</div>', [],
                                         *(gr.update(),) * 4)
        except Exception:  # noqa: BLE001
            log.exception("forced decoding failed")
            gr.Warning("Sorry, the model failed on this input. Please try another sentence.")
            return (gr.update(),) * 9
        viewing = (f'<div class="note" id="viewing-forced">The views show the teacher-forced pass of your '
                   f'French: «&nbsp;{html.escape(result.french)}&nbsp;». <b>Back to the original</b> (beside '
                   f'this) returns to greedy.</div>')
        return (result, result.trace, greedy, steer_views.forced_html(result, greedy.translation),
                result.as_rows(), viewing, slider_update(len(result.trace.steps)),
                views.pieces_html(result.trace), result.french)
    return forced_decoding


def beam_or_note(translator: Translator, english, width):
    """(the beam search's result, "") or (None, a note saying what was wrong): one model run."""
    try:
        return translator.beam(english, width), ""
    except ValueError as e:
        gr.Warning(str(e))
        return None, f'<div class="note">{html.escape(str(e))}</div>'
    except Exception:  # noqa: BLE001  a model failure is this user's, not the app's
        log.exception("beam search failed")
        gr.Warning("Sorry, the model failed on this input. Please try another sentence.")
        return None, '<div class="note">Sorry, the model failed on this input.</div>'


def beam_callback(translator: Translator):
    def beam_search(english, beam, trace, original):
        """Beam search of this sentence: one model run; the tree is drawn from the result."""
        result, note = beam_or_note(translator, english, beam)
        if result is None:
            return None, "", note
        greedy = greedy_of(None, original, english)
        return result, result.translation, steer_views.beam_html(result,
                                                                 greedy.translation if greedy else None)
    return beam_search


def beam_api(translator: Translator):
    def beam_search(english: str, width: int) -> tuple[str, str]:
        """Beam search of `english` keeping `width` hypotheses (1 to 8): the translation, and what the search
        kept and chose (HTML). Needs no page: the API's /beam_search."""
        result, note = beam_or_note(translator, english, width)
        return ("", note) if result is None else (result.translation, steer_views.beam_html(result, None))
    return beam_search


def build_steering_tab(page: Page) -> TabView:
    gr.Markdown("**Your French (teacher forcing).** Type or edit a French translation of the English above: "
                "the model reads it as in training and scores every piece. The model's own translation gets "
                "rank 1 everywhere; a word it did not expect stands out.", elem_classes="view-caption")
    with gr.Row(equal_height=True):
        french = TextInput(label="Your French translation", max_lines=3, scale=5,
                           max_length=TEXTBOX_MAX_CHARS, elem_id="forced-text")
        copy_btn = gr.Button("Start from the model's French", scale=1, elem_id="forced-copy")
        score_btn = gr.Button("Score my French", variant="primary", scale=1, elem_id="forced-btn")
    forced_info = gr.HTML(elem_id="forced-info")
    forced_plot = gr.Plot(show_label=False, label="Your French under the model", elem_id="forced-plot")
    with gr.Accordion("Per piece (JSON)", open=False):
        forced_json = gr.JSON(label="piece, probability, rank, top_piece, cross_entropy",
                              elem_id="forced-json")
    gr.Markdown("**Beam search** keeps the `width` best hypotheses at every step instead of one.")
    caption("the tree grows left to right, one column per step; within a column the hypotheses are ordered "
            "by score, best on top; the thick orange path is the translation the search returns (kept "
            "hypotheses blue, finished green, pruned grey).")
    with gr.Row(equal_height=True):
        beam = WholeSlider(1, BEAM_MAX, value=BEAM_DEFAULT, step=1, label="Beam width (1 = greedy)", scale=4,
                         elem_id="beam-width")
        beam_btn = gr.Button("Run beam search", variant="primary", scale=1, elem_id="beam-btn")
    beam_text = gr.Textbox(label="Beam search translation", interactive=False, elem_id="beam-text")
    beam_info = gr.HTML(elem_id="beam-info-box")
    beam_plot = gr.Plot(show_label=False, label="The search tree", elem_id="beam-plot")
    # your French and the beams, and "what
    code_panel(decoder_steering.forced_pass, decoder_steering.beam_search,
               decoder_steering.branch)                                   # if" (Step by step)
    forced_state, beam_state = gr.State(None), gr.State(None)

    @safe_view
    def draw_steer(trace, forced_v, beam_v, look, large, scale, narrow=False):
        lk = look_of(look, large, scale, narrow)
        f = (empty_figure("Type your French and press Score my French.", lk.dark, lk.font) if forced_v is None
             else
             steer_views.forced_figure([p.piece for p in forced_v.pieces],
                                       [p.probability for p in forced_v.pieces],
                                       [p.rank for p in forced_v.pieces],
                                       [p.top_piece for p in forced_v.pieces],
                                       "Probability of each of your pieces (rank when not the top choice)",
                                       lk.dark, lk.font))
        b = (empty_figure("Press Run beam search.", lk.dark, lk.font) if beam_v is None else
             steer_views.beam_tree_figure(beam_v, lk.dark, lk.font))
        return f, b

    tab = TabView(draw_steer, [forced_state, beam_state], [forced_plot, beam_plot])
    copy_btn.click(lambda fr: fr, page.french, french, api_visibility="undocumented", queue=False)
    page.model_events.append(gr.on(
        [score_btn.click, french.submit], forced_callback(page.translator),
        [page.text, french, page.trace, page.original],
        [forced_state, page.trace, page.original, forced_info, forced_json, page.viewing, page.step_slider,
         page.pieces, page.french],
        api_name="forced_decoding", concurrency_id="model"))
    gr.api(beam_api(page.translator), api_name="beam_search", concurrency_id="model")
    beam_btn.click(beam_callback(page.translator), [page.text, beam, page.trace, page.original],
                   [beam_state, beam_text, beam_info], api_name="beam_search_on_page",
                   api_visibility="undocumented", concurrency_id="model").then(
        draw_steer, tab.inputs(page), tab.outputs, api_visibility="undocumented", concurrency_id="draw")
    return tab
