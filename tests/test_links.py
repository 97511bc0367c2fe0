"""Links that open a view (transformer/viz/links.py): a URL query read into a checked view, and back."""
from __future__ import annotations

from urllib.parse import parse_qs

from transformer.viz.links import MEAN, ViewQuery, fit_ranges, parse_query, query_string

TABS = ["steps", "explorer", "summary", "positional", "inside", "about"]


def test_a_full_link_is_read_as_written():
    q, notes = parse_query({"text": "I like apples.", "tab": "explorer", "step": "3", "kind": "cross",
                            "layer": "2", "head": "4"}, TABS, "default", "steps")
    assert notes == [] and q == ViewQuery("I like apples.", "explorer", 3, "cross", 2, "4")


def test_no_query_gives_the_defaults():
    q, notes = parse_query({}, TABS, "The cat.", "steps")
    assert notes == [] and q == ViewQuery("The cat.", "steps")


def test_bad_values_fall_back_with_a_note_each():
    q, notes = parse_query({"text": "  ", "tab": "nope", "step": "x", "layer": "0", "kind": "self",
                            "head": "-2"},
                           TABS, "The cat.", "steps")
    assert q == ViewQuery("The cat.", "steps")
    assert len(notes) == 6 and any("tab=nope" in n for n in notes) and any("kind=self" in n for n in notes)


def test_head_mean_and_case():
    q, _ = parse_query({"tab": "Explorer", "kind": "Encoder", "head": "Mean over heads"}, TABS, "t", "steps")
    assert (q.tab, q.kind, q.head) == ("explorer", "encoder", MEAN)


def test_ranges_are_checked_against_the_model_and_sentence():
    q = ViewQuery("t", "inside", step=9, layer=4, head=MEAN)
    fitted, notes = fit_ranges(q, n_steps=8, n_layers=3, n_heads=8, mean_allowed=False)
    assert (fitted.step, fitted.layer, fitted.head) == (None, None, None) and len(notes) == 3
    fitted, notes = fit_ranges(ViewQuery("t", "explorer", 8, "cross", 3, "8"), 8, 3, 8)
    assert notes == [] and (fitted.step, fitted.layer, fitted.head) == (8, 3, "8")
    assert fit_ranges(ViewQuery("t", "steps", head="9"), 8, 3, 8)[0].head is None


def test_query_string_round_trips():
    link = query_string("Où est la gare? & co", "explorer", kind="cross", layer=2.0, head="mean over heads",
                        step=None)
    params = {k: v[0] for k, v in parse_qs(link[1:]).items()}
    assert params == {"text": "Où est la gare? & co", "tab": "explorer", "kind": "cross", "layer": "2",
                      "head": "mean"}
    q, notes = parse_query(params, TABS, "default", "steps")
    assert notes == [] and q == ViewQuery("Où est la gare? & co", "explorer", None, "cross", 2, MEAN)


def test_the_compare_views_choice_round_trips_and_a_wrong_one_is_named():
    link = query_string("The cat.", "compare", choice="scale")
    params = {k: v[0] for k, v in parse_qs(link[1:]).items()}
    q, notes = parse_query(params, TABS + ["compare"], "default", "steps")
    assert notes == [] and (q.tab, q.choice) == ("compare", "scale")
    q, notes = parse_query({"tab": "compare", "choice": "rotary"}, TABS + ["compare"], "t", "steps")
    assert q.choice is None and len(notes) == 1 and "choice=rotary" in notes[0]
    # a link from before the English → French companions went opens the same choice's toy run
    q, notes = parse_query({"tab": "compare", "variant": "no-scaling"}, TABS + ["compare"], "t", "steps")
    assert notes == [] and q.choice == "scale"


def test_notes_that_quote_a_links_values_never_carry_its_html():
    """Issue 38, item 5: a crafted link put '<a href=//ev.il>' or an outside '<img>' on the page through the
    notes that quote its values. The notes are shown under the pieces (ui/links.py)
    through events.notes_html, escaped."""
    from ui.events import notes_html
    evil = '<a href=//ev.il>Log in</a><img src=//ev.il/x.png>'
    params = {name: evil for name in ("tab", "step", "layer", "kind", "head", "mode", "scale", "choice")}
    q, notes = parse_query({"text": "Hello.", **params}, ["steps", "explorer"], "x", "steps")
    assert notes and any("<a href=//ev.il>" in n for n in notes)   # the values are quoted: the test has teeth
    shown = notes_html(notes)
    assert "<a " not in shown and "<img" not in shown and "&lt;a href=//ev.il&gt;" in shown


def test_knock_it_outs_values_travel_in_a_link_checked():
    from transformer.viz.links import parse_query, query_string
    q, notes = parse_query({"text": "Hi.", "tab": "knockout", "knockout": "CROSS l3 h6 ,enc L2 ffn",
                            "method": "mean", "rank": "2", "b": "Meanwhile, hi.", "at": "0", "piece": "▁il"},
                           ["steps", "knockout"], "x", "steps")
    assert not notes and (q.knockout, q.method, q.rank, q.b, q.at, q.piece) == (
        "cross L3 H6, enc L2 ffn", "mean", 2, "Meanwhile, hi.", 0, "▁il")
    link = query_string(q.text, q.tab, knockout=q.knockout, method=q.method, rank=q.rank, b=q.b, at=q.at,
                        piece=q.piece)
    # a sentence that starts "Mean…" stays itself
    assert "b=Meanwhile%2C+hi." in link and "rank=2" in link
    q, notes = parse_query({"knockout": "a nose", "method": "half", "rank": "-1", "at": "²"}, ["steps"], "x",
                           "steps")
    assert (q.knockout, q.method, q.rank, q.at) == (None, None, None, None) and len(notes) == 4


def test_a_link_to_a_companion_model_that_is_gone_says_so():
    q, notes = parse_query({"tab": "compare", "variant": "baseline"}, TABS + ["compare"], "t", "steps")
    assert q.choice is None and len(notes) == 1 and "no longer bundled" in notes[0]


def test_a_follower_reads_which_design_choice_the_compare_view_shows():
    from types import SimpleNamespace

    from ui.follow import FollowerViews
    control = object()
    tab = SimpleNamespace(link={"choice": control}, controls=[control])
    assert FollowerViews.where(tab, ["scale"], 0) == "Scaling the scores by √d_k"
