"""The room answers, in Chromium: a presenter at 1920×1080 in presenter mode and three followers (two laptops,
one of them dark, and a phone that joins while the first question is open) go through ask → answer → reveal
for each kind of question. Every follower sees the question, is told at once that its answer was received,
sees the room's count on the projector, and after the reveal its own answer beside the model's; the view waits
behind the question."""
from __future__ import annotations

import pytest

from harness.browser import WAIT_MS, open_link, plots_in

PHONE = {"viewport": {"width": 390, "height": 844}, "has_touch": True, "is_mobile": True,
         "device_scale_factor": 2}
SENTENCE = "The cat is sleeping on the sofa."


def pick(page, elem_id: str, text: str) -> None:
    page.locator(f"#{elem_id} input").click()
    page.locator("ul[role=listbox] li").filter(has_text=text).first.click()


def ask(presenter, kind: str) -> None:
    pick(presenter, "vote-kind", kind)
    presenter.locator("#vote-ask").click()


def question_on(page, n: int, status: str = "open") -> None:
    page.wait_for_selector(f"#vote[data-question='{n}'][data-status={status}]", timeout=WAIT_MS)


def answer(page, nth: int) -> str:
    page.locator("#vote .vote-opt").nth(nth).click()
    page.wait_for_selector("#vote .vote-said.ok", timeout=WAIT_MS)
    return page.locator("#vote .vote-said").inner_text()


def counted(presenter, n: int, followers: int) -> None:
    presenter.wait_for_selector(f"#vote-status "
                                f".vote-status[data-answers='{n}'][data-followers='{followers}']",
                                timeout=WAIT_MS)


@pytest.fixture
def room(browser, app_url):
    presenter = browser.new_page(viewport={"width": 1920, "height": 1080})
    open_link(presenter, app_url, text=SENTENCE, step="3")
    plots_in(presenter, "cross-step-plot").wait_for(timeout=WAIT_MS)
    presenter.locator("#presenter input").check()
    presenter.locator("#live-start").click()
    presenter.wait_for_selector("#live-panel .live-code", timeout=WAIT_MS)
    code = presenter.locator("#live-panel .live-code").inner_text().strip()
    presenter.locator("#live-panel .live-fold").click()
    laptop = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
    dark = browser.new_context(viewport={"width": 1280, "height": 800}, color_scheme="dark").new_page()
    phone_context = browser.new_context(**PHONE)
    for page in (laptop, dark):
        page.goto(app_url + f"?follow={code}")
        page.wait_for_selector("body[data-drawn]", timeout=WAIT_MS)
    yield presenter, laptop, dark, phone_context, code
    presenter.click("#live-end")
    for page in (presenter, laptop, dark):
        page.context.close() if page is not presenter else page.close()
    phone_context.close()


def test_a_room_answers_every_kind_of_question_and_sees_the_model_beside_itself(room, app_url):
    presenter, laptop, dark, phone_context, code = room
    assert not presenter.locator("#vote-panel").is_visible()            # no height taken until it is opened
    presenter.locator("#vote-toggle").click()
    presenter.wait_for_selector("#vote-panel", state="visible", timeout=WAIT_MS)

    # 1. which English piece will step 3 look at most? The phone joins while it is open.
    ask(presenter, "look at most")
    for page in (laptop, dark):
        question_on(page, 1)
        assert not page.locator("#parts").is_visible() and not page.locator("#view-fr").is_visible()
    presenter.wait_for_function("() => document.body.classList.contains('vote-hiding')", timeout=WAIT_MS)
    phone = phone_context.new_page()
    phone.goto(app_url + f"?follow={code}")
    question_on(phone, 1)                                               # a late joiner sees the open question
    pieces = [b.inner_text() for b in laptop.locator("#vote .vote-opt").all()]
    assert pieces[:3] == ["▁The", "▁cat", "▁is"]
    assert "Answer received" in answer(laptop, 1)
    answer(dark, 2)
    answer(phone, 0)
    assert "Answer changed to «▁is»" in answer(phone, 2)                # a second answer replaces the first
    counted(presenter, 3, 3)
    presenter.locator("#vote-reveal").click()
    for page in (laptop, dark, phone):
        question_on(page, 1, "revealed")
        assert page.locator("#parts").is_visible()                      # the view again, beside the answer
    model = presenter.locator("#vote-status .vote-answer b").inner_text()
    assert f"«{model}»" in laptop.locator("#vote .vote-model").inner_text()
    assert "the model chose" in laptop.locator("#vote .vote-yours").inner_text() or \
        "the same as the model" in laptop.locator("#vote .vote-yours").inner_text()
    # the projector unblurred (its page does it just after the reveal's answer lands)
    presenter.wait_for_function("() => !document.body.classList.contains('vote-hiding')", timeout=WAIT_MS)
    bars = phone.locator("#vote .vote-bar")
    assert bars.count() >= 1 and phone.locator("#vote .vote-bar.mine").count() == 1

    # 2. the next French piece: a tap, a typed word, a word the model does not know
    ask(presenter, "next French piece")
    for page in (laptop, dark, phone):
        question_on(page, 2)
    laptop.fill("#vote .vote-typed input", "qqzzxv")
    laptop.click("#vote .vote-typed button")
    laptop.wait_for_selector("#vote .vote-said.err:has-text('not one piece')", timeout=WAIT_MS)
    laptop.fill("#vote .vote-typed input", "dort")
    laptop.click("#vote .vote-typed button")
    laptop.wait_for_selector("#vote .vote-said.ok:has-text('«dort»')", timeout=WAIT_MS)
    answer(dark, 0)
    answer(phone, 1)
    counted(presenter, 3, 3)
    presenter.locator("#vote-stop").click()                             # answers stop before the reveal
    question_on(dark, 2, "closed")
    assert dark.locator("#vote .vote-opt").first.is_disabled()
    presenter.locator("#vote-reveal").click()
    question_on(laptop, 2, "revealed")
    assert "You said «dort»: the same as the model ✓" in laptop.locator("#vote .vote-yours").inner_text()

    # 3. which head looks at the previous piece? (a layer × head grid)
    ask(presenter, "Which head")
    for page in (laptop, dark, phone):
        question_on(page, 3)
    assert phone.locator("#vote .vote-grid button").count() == 48
    for i, page in enumerate((laptop, dark, phone)):
        page.locator("#vote .vote-grid button").nth(i).click()
        page.wait_for_selector("#vote .vote-said.ok", timeout=WAIT_MS)
    counted(presenter, 3, 3)
    presenter.locator("#vote-reveal").click()
    question_on(phone, 3, "revealed")
    assert phone.locator("#vote .vote-model").inner_text().startswith("The model: «L")

    # 4. a question of the presenter's own
    pick(presenter, "vote-kind", "of my own")
    presenter.locator("#vote-prompt textarea, #vote-prompt input").first.fill(
        "Why divide the scores by √d_k?")
    presenter.fill("#vote-options textarea", "To keep the softmax from saturating\nTo save memory")
    presenter.locator("#vote-ask").click()
    for page in (laptop, dark, phone):
        question_on(page, 4)
    answer(laptop, 0), answer(dark, 0), answer(phone, 1)
    counted(presenter, 3, 3)
    presenter.locator("#vote-reveal").click()
    question_on(dark, 4, "revealed")
    assert "2 said the same as the model" in dark.locator("#vote .vote-room").inner_text()
    assert "the model chose «To keep the softmax from saturating»" in \
        phone.locator("#vote .vote-yours").inner_text()

    # Done: the question leaves every page; the download holds the four
    presenter.locator("#vote-done").click()
    for page in (laptop, dark, phone):
        page.wait_for_selector("#vote", state="hidden", timeout=WAIT_MS)
    presenter.locator("#vote-export").click()
    presenter.wait_for_selector("#vote-files a", timeout=WAIT_MS)
    assert presenter.locator("#vote-files a").count() == 2
