"""The app's API through gradio_client, against the app started here on 127.0.0.1."""
from __future__ import annotations

import html
import json

import pytest

gradio_client = pytest.importorskip("gradio_client")
from gradio_client import Client  # noqa: E402


@pytest.fixture(scope="module")
def client(app_url):
    return Client(app_url, verbose=False)


def test_translate_returns_text_pieces_and_device(client):
    french, info, pieces, step = client.predict("The cat is sleeping on the sofa.", api_name="/translate")
    assert french.strip() and "chat" in french.lower()
    assert "CPU" in info or "GPU" in info
    assert "▁cat" in pieces and "&lt;/s&gt;" in pieces


def test_step_view_redraws_from_state(client):
    french, *_ = client.predict("Where is the station?", api_name="/translate")
    info, topk, cross, so_far, *_ = client.predict(2, 3, "mean over heads", "Light", False, "Viridis",
                                                   api_name="/step_view")
    assert "Step 2 of" in info
    fig = json.loads(topk["plot"])
    assert fig["data"][0]["type"] == "bar"
    cross = json.loads(cross["plot"])
    assert cross["data"][0]["type"] == "bar" and cross["layout"]["yaxis"]["range"] == [0, 1]
    assert json.loads(so_far["plot"])["data"][0]["type"] == "heatmap"


def test_explorer_returns_heatmaps(client):
    client.predict("I like green apples.", api_name="/translate")
    for kind in ("encoder", "decoder", "cross"):
        main, grid = client.predict(kind, 1, "2", "head", "shared across heads", "Dark", True, "Cividis",
                                    api_name="/explorer")
        assert json.loads(main["plot"])["data"][0]["type"] == "heatmap"
        assert len(json.loads(grid["plot"])["data"]) >= 8


def test_blank_input_gives_a_message_not_an_error(client):
    for text in ("", "   \n\t "):
        french, info, pieces, _ = client.predict(text, api_name="/translate")
        assert french == "" and "Type an English sentence" in info


def test_markup_is_shown_as_text(client):
    french, info, pieces, _ = client.predict("<script>alert('x')</script> <b>Hello</b>",
                                             api_name="/translate")
    # only our labels: source, target, confidence
    assert "<script>" not in pieces and pieces.count("<b>") == 3 and "&lt;" in pieces


def test_users_keep_their_own_results(app_url):
    a, b = Client(app_url, verbose=False), Client(app_url, verbose=False)
    fa, _, _, sa = a.predict("The dog is running.", api_name="/translate")
    fb, _, _, sb = b.predict("I am reading a book about history.", api_name="/translate")
    ia, *_ = a.predict(sa["maximum"], 1, "mean over heads", "Light", False, "Viridis", api_name="/step_view")
    ib, *_ = b.predict(sb["maximum"], 1, "mean over heads", "Light", False, "Viridis", api_name="/step_view")
    assert fa != fb
    assert html.escape(fa.split()[0]) in ia and html.escape(fb.split()[0]) in ib   # each sees its own trace
    assert html.escape(fb.split()[-1]) not in ia
