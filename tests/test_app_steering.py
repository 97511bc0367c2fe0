"""Steering the decoder through the app's API (gradio_client): /forced_decoding, /what_if, /beam_search."""
from __future__ import annotations

import pytest

gradio_client = pytest.importorskip("gradio_client")
from gradio_client import Client  # noqa: E402

EN = "The cat is sleeping on the sofa."


@pytest.fixture(scope="module")
def client(app_url):
    return Client(app_url, verbose=False)


@pytest.fixture(scope="module")
def greedy(client):
    return client.predict(EN, api_name="/translate")[0]


def rows_of(outputs):
    return next(o for o in outputs if isinstance(o, list))


def test_forced_decoding_of_the_greedy_output_is_rank_one_everywhere(client, greedy):
    out = client.predict(EN, greedy, api_name="/forced_decoding")
    rows = rows_of(out)
    assert rows and all(set(r) >= {"piece", "probability", "rank", "top_piece"} for r in rows)
    assert [r["rank"] for r in rows] == [1] * len(rows) and rows[-1]["piece"] == "</s>"
    assert all(r["piece"] == r["top_piece"] and 0 < r["probability"] <= 1 for r in rows)
    assert "exactly what greedy decoding produces" in out[0]


def test_a_wrong_word_stands_out(client, greedy):
    wrong = greedy.replace("chat", "chien") if "chat" in greedy else "Le chien dort."
    out = client.predict(EN, wrong, api_name="/forced_decoding")
    rows = rows_of(out)
    bad = [r for r in rows if r["rank"] > 1]
    assert bad and bad[0]["probability"] < 0.1 and "part ways" in out[0]
    assert "chien" in out[-1]                     # the French box shows the French the views show: yours


def test_what_if_returns_the_new_translation(client, greedy):
    # the greedy piece at step 2 gives the greedy translation back; another one changes it
    info, french, _, pieces = client.predict(EN, 2, "▁chat", api_name="/what_if")
    assert french == greedy and "Original" in info
    info, french, _, pieces = client.predict(EN, 2, "▁chien", api_name="/what_if")
    assert "▁chien" in pieces
    assert "chien" in french and french != greedy


def test_beam_search_returns_the_final_translation(client, greedy):
    text, info = client.predict(EN, 1, api_name="/beam_search")
    assert text == greedy
    text, info = client.predict(EN, 4, api_name="/beam_search")
    assert text.strip() and "width 4" in info and "length penalty" in info


@pytest.mark.parametrize("api, args, message", [
    ("/forced_decoding", (EN, ""), "Type a French sentence"),
    ("/forced_decoding", (EN, "le chat " * 100), "limit"),
    ("/forced_decoding", ("", "Le chat."), "nothing to translate"),
    ("/what_if", (EN, 99, "▁chat"), "no step 99"),
    ("/what_if", (EN, 2, "qqzzxx"), "not a piece"),
    ("/beam_search", (EN, 0), "from 1 to"),
    ("/beam_search", ("", 4), "nothing to translate"),
])
def test_bad_input_gives_a_message(client, api, args, message):
    out = client.predict(*args, api_name=api)
    assert any(isinstance(o, str) and message in o for o in out)


def test_the_step_line_says_your_piece_for_your_french():
    """A teacher-forced trace's step line names your piece (not "chosen token") and the model's top choice,
    and a tiny probability keeps its order of magnitude."""
    from transformer.serving.translator import Translator
    from transformer.viz import views
    tr = Translator()
    result = tr.forced(EN, "Le chien dort sur le canapé.")
    t = next(i for i, s in enumerate(result.trace.steps, 1) if "chien" in s.piece)
    line = views.step_info_html(result.trace, t)
    assert "your piece" in line and "chosen token" not in line and "top choice" in line
    assert "chosen token" in views.step_info_html(tr.trace(EN), 1)
    from transformer.viz.figure import percent
    assert percent(0.00002) == "2.0e-03%" and percent(0.5) == "50.0%"
