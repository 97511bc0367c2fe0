"""Parameters refused before any work, each with one clear message (issue 38, item 7): the API's /what_if,
/beam_search and /contrast and the page's own handlers of them get the same kinds of bad values a careful
tester sent (None, wrong types, fractions, text for numbers, out of range, lone surrogates), and every answer
says what was wrong: never "the model failed", never Python's own words, never a silently coerced value."""
from __future__ import annotations

import gradio as gr
import pytest

from transformer import params

SENTENCE = "The cat sleeps."
PYTHON_WORDS = ("invalid literal", "NoneType", "Traceback", "object is not", "unsupported operand",
                "the model failed")


def test_whole_numbers_and_text_are_checked_not_coerced():
    assert params.whole_number(3, "step", 1, 9) == 3 and params.whole_number(" 4 ", "step", 1, 9) == 4
    assert params.whole_number(5.0, "step", 1, 9) == 5
    for bad, said in [(None, "none was given"), ("abc", "not 'abc'"), ([4], "not [4]"), (1.5, "fraction 1.5"),
                      (True, "not True"), (0, "0 is not"), (10**12, "is not"), ({"a": 1}, "not {'a': 1}")]:
        with pytest.raises(ValueError, match="must be a whole number from 1 to 9") as e:
            params.whole_number(bad, "step", 1, 9)
        assert said in str(e.value)
    assert params.text(None, "piece") == "" and params.text("▁chat", "piece") == "▁chat"
    for bad in (3, ["a"], b"bytes"):
        with pytest.raises(ValueError, match="must be text"):
            params.text(bad, "piece")
    with pytest.raises(ValueError, match="lone surrogate"):
        params.text("ab\ud800", "piece")


BAD_NUMBERS = [None, "", "abc", [1], [4], {}, 1.5, True, -1, 0, 10**12, "\ud800", "<b>3</b>"]
BAD_TEXTS = [None, 3, ["x"], {"a": 1}, "\ud800", "\x00", "<img src=x>", "a" * 5000]


def said(answer) -> str:
    return " ".join(str(a) for a in answer) if isinstance(answer, (tuple, list)) else str(answer)


def test_the_api_refuses_each_bad_value_with_a_clear_message(tiny_translator):
    from ui.tabs.steering import beam_api
    from ui.tabs.steps import what_if_api
    from ui.tabs.why import contrast_api
    what_if, beam, contrast = (what_if_api(tiny_translator), beam_api(tiny_translator),
                               contrast_api(tiny_translator))
    answers = []
    for bad in BAD_NUMBERS:
        answers.append(("what_if step", bad, what_if(SENTENCE, bad, "▁le")))
        answers.append(("beam width", bad, beam(SENTENCE, bad)))
        with pytest.raises(gr.Error) as e:
            contrast(SENTENCE, bad, "▁le")
        answers.append(("contrast step", bad, e.value.message))
    for bad in BAD_TEXTS:
        answers.append(("what_if piece", bad, what_if(SENTENCE, 1, bad)))
        answers.append(("what_if english", bad, what_if(bad, 1, "▁le")))
        answers.append(("beam english", bad, beam(bad, 2)))
    for what, bad, answer in answers:
        text = said(answer)
        assert text.strip() and not any(w in text for w in PYTHON_WORDS), (what, bad, text)
    step_zero = said(what_if(SENTENCE, 0, "▁le"))
    assert "from 1 to" in step_zero and "step 0 took" not in step_zero      # not run as step 1
    assert "fraction 1.5" in said(beam(SENTENCE, 1.5))                      # not truncated to 1
    assert "must be text" in said(beam(3, 2))                                # not coerced to "3"
    assert "lone surrogate" in said(what_if(SENTENCE, 1, "\ud800"))          # never reaches sentencepiece
    assert beam(SENTENCE, "2")[0]                                            # digits as text are a number


def test_the_causal_endpoints_refuse_each_bad_value_with_a_clear_message(tiny_translator):
    """/knockout, /head_importance and /patching (issue 40): the same bad values; text that is text may be
    translated (an English sentence can hold "<img src=x>"), anything refused is refused in
    one clear message."""
    from ui.tabs.knockout import importance_api, knockout_api, patching_api
    knockout, importance, patch = (knockout_api(tiny_translator), importance_api(tiny_translator),
                                   patching_api(tiny_translator))
    other = "The cat sleeps!"
    calls = []                                    # (what, call, must it be refused)
    for bad in BAD_TEXTS:
        calls += [("knockout english", lambda b=bad: knockout(b, "cross L1 H1"), not isinstance(bad, str)),
                  ("knockout parts", lambda b=bad: knockout(SENTENCE, b), True),
                  ("knockout method", lambda b=bad: knockout(SENTENCE, "cross L1 H1", b), True),
                  ("importance method", lambda b=bad: importance(SENTENCE, b), True),
                  ("patching b", lambda b=bad: patch(SENTENCE, b, 1), not isinstance(bad, str))]
    for bad in BAD_NUMBERS:
        if bad in (None, "", 0):
            continue                                        # the documented default: the whole translation
        calls += [("importance step", lambda b=bad: importance(SENTENCE, "zero", b), True),
                  ("patching step", lambda b=bad: patch(SENTENCE, other, b), True)]
    calls += [("knockout nothing", lambda: knockout(SENTENCE, "cross L9 H1"), True),
              ("patching lengths", lambda: patch(SENTENCE, "The big cat sleeps.", 1), True)]
    for what, call, refused in calls:
        try:
            call()
            assert not refused, f"{what}: accepted"
        except gr.Error as e:
            assert e.message.strip() and not any(w in e.message for w in PYTHON_WORDS), (what, e.message)
    assert knockout(SENTENCE, "cross L1 H1, positions both", "mean")["steps"]
    assert importance(SENTENCE, "zero", "1")["step"] == 1                     # digits as text are a number
