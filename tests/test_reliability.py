"""Bad input never raises; faults give clear messages; one user's failure does not stop others."""
from __future__ import annotations

import html
import shutil
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import ROOT, free_port
from transformer.config import MAX_INPUT_CHARS
from transformer.viz import report, views


NASTY = st.one_of(
    st.text(max_size=300),
    st.text(alphabet=st.characters(codec="utf-8"), max_size=200),
    st.text(alphabet=st.characters(blacklist_categories=()), max_size=80),   # includes surrogates, controls
    st.sampled_from(["", " ", "\n\t\r", "\x00\x01\x1b[31m", "<script>alert(1)</script>", "<b>x</b>&amp;",
                     "😀🎉👩‍👩‍👧", "日本語のテキスト", "مرحبا بالعالم", "Привет, мир", "a" * 5000,
                     "\ud800 lone surrogate", "{{ 7*7 }} ${HOME} $(rm -rf /) `id`", "../../etc/passwd",
                     "\u202e reversed", "\ufeff BOM", "x\u0000y"]),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=NASTY)
def test_any_text_gives_a_translation_or_a_clear_message(tiny_translator, text):
    try:
        trace = tiny_translator.trace(text, max_new_tokens=12)
    except ValueError as e:                          # the only error: nothing to translate, with a message
        assert "nothing to translate" in str(e).lower()
        return
    assert isinstance(trace.translation, str) and len(trace.source.text) <= MAX_INPUT_CHARS
    lk = views.Look()
    chips = views.pieces_html(trace)
    for p in trace.src_pieces + trace.tgt_pieces:
        assert html.escape(p) in chips
    # only our labels: source, target, confidence
    assert "<script" not in chips and "<img" not in chips and chips.count("<b>") == 3
    views.step_view(trace, 1, 1, "mean over heads", lk)
    for kind in ("encoder", "decoder", "cross"):
        views.explorer_figure(trace, kind, 1, "1", "head", True, lk).to_json()
        views.explorer_figure(trace, kind, 2, "mean", "rollout", False, lk).to_json()
        views.summary_view(trace, kind, lk)
        views.inside_view(trace, kind, 1, "1", 1, True, lk)


def test_report_escapes_every_token(tiny_translator):
    trace = tiny_translator.trace('<img src=x onerror=alert(1)> "quoted" & <b>bold</b>', max_new_tokens=6)
    page = report.build_report(trace, tiny_translator.cfg)
    body = page.split("<body>", 1)[1]
    assert "<img src=x" not in body and "<b>bold" not in body
    assert "&lt;img src=x onerror=alert(1)&gt;" in body


def test_long_input_is_truncated_and_said(tiny_translator):
    trace = tiny_translator.trace("word " * 3000, max_new_tokens=4)
    assert len(trace.source.ids) == tiny_translator.max_src_tokens
    assert any("cut" in n for n in trace.notes) and any("limit" in n for n in trace.notes)


def test_output_length_and_time_are_bounded(tiny_translator):
    trace = tiny_translator.trace("one two three", max_new_tokens=5)
    assert len(trace.steps) <= 5
    trace = tiny_translator.trace("one two three four five", deadline_s=0.0)
    assert trace.timed_out and any("time limit" in n for n in trace.notes)


def test_unknown_script_is_explained(tiny_translator):
    trace = tiny_translator.trace("日本語", max_new_tokens=3)
    assert any("vocabulary" in n for n in trace.notes)


# ------------------------------------------------------------------ faults at start
def run_app_expecting_error(args):
    r = subprocess.run([sys.executable, "app.py", "--port", str(free_port()), *args], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stderr and r.stderr.strip().startswith("error:")
    assert len(r.stderr.strip().splitlines()) == 1 and "--checkpoint" in r.stderr
    return r.stderr


def test_app_refuses_bad_checkpoints_with_one_clear_line(tmp_path, bundled_checkpoint):
    assert "does not exist" in run_app_expecting_error(["--checkpoint", str(tmp_path / "missing")])
    bad = tmp_path / "truncated"
    shutil.copytree(bundled_checkpoint, bad)
    w = bad / "model.safetensors"
    w.write_bytes(w.read_bytes()[:1000])
    assert "truncated or corrupt" in run_app_expecting_error(["--checkpoint", str(bad)])
    (bad / "config.json").write_text((bundled_checkpoint / "config.json").read_text()
                                     .replace('"d_ff": 1024', '"d_ff": 512'))
    shutil.copy(bundled_checkpoint / "model.safetensors", w)
    assert "do not match" in run_app_expecting_error(["--checkpoint", str(bad)])


# ------------------------------------------------------------------ a failure during one request
def test_one_users_model_error_does_not_stop_others(tiny_translator, tmp_path):
    gradio_client = pytest.importorskip("gradio_client")
    sys.path.insert(0, str(ROOT))
    from ui.demo import build_demo

    class Flaky:
        def __init__(self, inner):
            self.inner = inner
            self.cfg, self.model, self.device = inner.cfg, inner.model, inner.device
            self.num_parameters = inner.num_parameters

        def trace(self, text, **kw):
            if "boom" in text:
                raise RuntimeError("simulated model failure")
            return self.inner.trace(text, max_new_tokens=8)

    demo = build_demo(Flaky(tiny_translator), tmp_path)
    demo.queue()
    port = free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True)
    try:
        c = gradio_client.Client(f"http://127.0.0.1:{port}/", verbose=False)
        french, info, *_ = c.predict("boom", api_name="/translate")
        assert french == "" and "failed on this input" in info
        french, info, pieces, _ = c.predict("I have seven apples.", api_name="/translate")
        assert "CPU" in info and "piece" in pieces
    finally:
        demo.close()


def test_gradio_sums_up_its_events_and_sends_queue_positions_rarely(tiny_translator, tmp_path, monkeypatch):
    """Gradio's queue sums up its recorded events (a pandas table) after each event unless told otherwise; the
    app tells it once per 1,000 events, of the last 2,000, and a value set in the environment still wins."""
    sys.path.insert(0, str(ROOT))
    from ui.demo import build_demo, serve
    from ui.settings import APP_GRADIO_ANALYTICS, APP_STATUS_UPDATE_RATE
    monkeypatch.delenv("APP_STATUS_UPDATE_RATE", raising=False)
    for name in APP_GRADIO_ANALYTICS:            # restored after the test, whatever serve() sets
        monkeypatch.setenv(name, "0")
        monkeypatch.delenv(name)
    monkeypatch.setenv("GRADIO_ANALYTICS_MAX_EVENTS", "123")
    demo = build_demo(tiny_translator, tmp_path)
    serve(demo, "127.0.0.1", free_port(), False, 16, block=False)
    try:
        assert demo._queue.ANAYLTICS_CACHE_FREQUENCY == APP_GRADIO_ANALYTICS[
            "GRADIO_ANALYTICS_CACHE_FREQUENCY"]
        assert demo._queue.ANALYTICS_MAX_EVENTS == 123
        # queue positions: each waiting request every APP_STATUS_UPDATE_RATE seconds (and at once when it
        # joins), not all of them each time any request starts (Gradio's "auto")
        assert demo._queue.live_updates is False and demo._queue.update_intervals == APP_STATUS_UPDATE_RATE
        # sessions kept: the app's cap, not Gradio's 10,000 (issue 38: each session keeps a trace and
        # a page config)
        from ui.settings import APP_MAX_SESSIONS
        assert demo.state_session_capacity == APP_MAX_SESSIONS < 10_000
        assert demo.server_app.state_holder.capacity == APP_MAX_SESSIONS       # what the server actually uses
    finally:
        demo.close()
    from ui.settings import status_update_rate
    assert status_update_rate(" Auto ") == "auto" and status_update_rate("2.5") == 2.5
    for bad in ("0", "-1", "abc", "nan", "inf"):        # 0 would make Gradio's queue loop without a pause
        assert status_update_rate(bad) == APP_STATUS_UPDATE_RATE
    # the app's option, from the environment as every APP_*
    import app
    assert app.parse_args([]).status_update_rate == APP_STATUS_UPDATE_RATE
    monkeypatch.setenv("APP_STATUS_UPDATE_RATE", "auto")
    assert app.parse_args([]).status_update_rate == "auto"
    assert app.parse_args(["--status-update-rate", "3"]).status_update_rate == 3.0
    demo = build_demo(tiny_translator, tmp_path)
    serve(demo, "127.0.0.1", free_port(), False, 16, block=False,
          status_update_rate=app.parse_args([]).status_update_rate)
    try:
        assert demo._queue.live_updates is True        # Gradio's own default, on request
    finally:
        demo.close()
