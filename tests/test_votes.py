"""The room answers (transformer/votes.py, ui/votes.py, the stores in ui/rooms.py and ui/rooms_redis.py, the
answer route in ui/live_routes.py): each question's model answer against the trace's own numbers; what a
student may answer; the rules of a room (only the presenter asks, closes and reveals; a closed question and an
ended room refuse answers; a replaced answer counts once; two apps on one Redis count each student once); the
export; and in Chromium a presenter and three followers (one a phone) through every kind of question."""
from __future__ import annotations

import csv
import io
import json

import gradio as gr
import numpy as np
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from transformer.viz.analysis import pattern_scores
from transformer.votes import (MAX_OPTIONS, Question, VoteError, accept, choice_question, export_csv,
                               export_json, head_question, next_question, piece_of, piece_question,
                               piece_words)
from ui.live_routes import live_routes
from ui.room_limits import RoomLimits
from ui.room_watch import RoomWatch
from ui.room_keys import RoomKeys
from ui.rooms import MemoryRooms, NotPresenter, QuestionClosed, RoomError

VIEW = {"text": "The cat is sleeping on the sofa.", "tab": "steps", "step": "2"}
STUDENTS = [f"student-token-{i:04d}-xyz" for i in range(6)]


@pytest.fixture(scope="module")
def trace(tiny_translator):
    return tiny_translator.trace("one two three four five")


# ---------------------------------------------------------------- the questions and their answers
def test_each_question_takes_its_answer_from_the_model_numbers(trace):
    L = trace.cross.probs.shape[0]
    for step in (1, len(trace.steps)):
        for head in ("mean over heads", "head 2"):
            q = piece_question(trace, step, L, head)
            row = trace.cross.probs[L - 1, :, step - 1]
            row = row.mean(0) if head.startswith("mean") else row[1]
            assert int(q.answer) == int(np.argmax(row)) and q.options == trace.source.pieces
            assert q.view == {**{"text": trace.source.text, "tab": "steps", "step": str(step),
                                 "layer": str(L)},
                              "head": "mean over heads" if head.startswith("mean") else "2"}
        nq = next_question(trace, step)
        s = trace.steps[step - 1]
        assert nq.answer == s.piece and f"{s.prob:.2f}" in nq.answer_note and \
            set(nq.options) == set(s.topk_pieces)
        # the ranking hidden
        assert list(nq.options) == sorted(nq.options, key=lambda p: piece_words(p).lower())
    for kind in ("encoder", "decoder", "cross"):
        scores = pattern_scores(getattr(trace, kind).probs, kind)
        for pattern in scores:
            hq = head_question(trace, kind, pattern)
            assert int(hq.answer) == int(np.argmax(scores[pattern])), (kind, pattern)
            assert hq.grid == scores[pattern].shape and len(hq.options) == scores[pattern].size
    with pytest.raises(VoteError, match="not one of this translation's steps"):
        piece_question(trace, len(trace.steps) + 1, L, "mean over heads")
    with pytest.raises(VoteError, match="pattern"):
        head_question(trace, "encoder", "start token <s>")


def test_a_presenters_own_question_is_checked():
    q = choice_question("  Why  divide by √d_k? ", ["saturation", "memory", ""], 1)
    assert q.prompt == "Why divide by √d_k?" and q.options == ("saturation", "memory") and q.answer == "0"
    for options, right, message in ((["one"], 1, "2 to"),
                                    ([str(i) for i in range(MAX_OPTIONS + 1)], 1, "2 to"),
                                    (["a", "a"], 1, "read the same"),
                                    (["a", "b"], 3, "Mark the right option")):
        with pytest.raises(VoteError, match=message):
            choice_question("Q?", options, right)
    with pytest.raises(VoteError, match="Type the question"):
        choice_question("  ", ["a", "b"], 1)


def test_an_answer_is_an_option_in_range_or_a_known_piece(trace):
    q = piece_question(trace, 1, 1, "mean over heads")
    assert accept(q, {"option": 0}) == "0" and \
        accept(q, {"option": str(len(q.options) - 1)}) == str(len(q.options) - 1)
    for bad, message in (({"option": len(q.options)}, "There is no option"), ({"option": -1}, "Tap one"),
                         ({"option": True}, "Tap one"), ({"option": 1.5}, "Tap one"),
                         ({"option": "1e3"}, "Tap one"), ("3", "An answer is"),
                         ({"typed": "two"}, "takes one of its options"), ({}, "Tap one")):
        with pytest.raises(VoteError, match=message):
            accept(q, bad)
    nq = next_question(trace, 1)
    known = {"▁two": 7, "two": 8, "s": 9}
    by_id = {v: k for k, v in known.items()}
    word = lambda w: piece_of(w, known.get, by_id.get)           # noqa: E731
    # a word's start first: "two" counts as "▁two"
    assert accept(nq, {"typed": "two"}, word) == "▁two"
    assert accept(nq, {"typed": " s "}, word) == "s"
    assert accept(nq, {"option": 0}, word) == nq.options[0]      # a tapped candidate: the piece itself
    for typed, message in (("zebra", "not one piece"), ("x" * 41, "one word"), ("   ", "one word")):
        with pytest.raises(VoteError, match=message):
            accept(nq, {"typed": typed}, word)


def test_a_question_shows_no_answer_until_revealed(trace):
    q = Question.of({**next_question(trace, 1).to_dict(), "id": 1, "counts": {"▁a": 2}})
    public = q.public()
    assert "answer" not in public and "counts" not in public and "view" not in public
    shown = Question.of({**q.to_dict(), "status": "revealed"}).public()
    assert shown["answer"] == q.answer and shown["counts"] == {"▁a": 2} and shown["labels"] == {"▁a": "a"}


# ---------------------------------------------------------------- the rules of a room, in either store
def check_votes(rooms, other=None) -> None:
    """`other`: a second store on the same server (another app process): answers through either count once."""
    other = other or rooms
    code, secret = rooms.create()
    rooms.publish(code, secret, VIEW)
    q = choice_question("Which?", ["a", "b", "c"], 2).to_dict()
    with pytest.raises(NotPresenter):
        rooms.ask(code, "not-the-secret", q)
    asked = rooms.ask(code, secret, q)
    assert asked["id"] == 1 and asked["status"] == "open"
    view = other.read(code)
    assert view.question["id"] == 1 and view.version == 2             # the question goes with the view
    assert rooms.answer(code, 1, STUDENTS[0], "0") is False
    assert other.answer(code, 1, STUDENTS[0], "1") is True            # the same student again: replaced
    assert other.answer(code, 1, STUDENTS[1], "1") is False
    assert rooms.answer(code, 1, STUDENTS[2], "2") is False
    assert rooms.tally(code, 1) == other.tally(code, 1) == {"1": 2, "2": 1}
    with pytest.raises(QuestionClosed):
        rooms.answer(code, 2, STUDENTS[3], "0")                      # not the room's question
    with pytest.raises(NotPresenter):
        other.close(code, "", 1, 9, True)
    closed = other.close(code, secret, 1, 5, False)
    assert closed["status"] == "closed" and closed["counts"] == {"1": 2, "2": 1} and closed["followers"] == 5
    with pytest.raises(QuestionClosed):
        rooms.answer(code, 1, STUDENTS[3], "0")                      # closed: refused, and not counted
    revealed = rooms.close(code, secret, 1, 7, True)
    assert revealed["status"] == "revealed" and revealed["answered"] == 3 and revealed["followers"] == 5
    assert other.read(code).question["status"] == "revealed"
    second = rooms.ask(code, secret, choice_question("Again?", ["x", "y"], 1).to_dict())
    assert second["id"] == 2
    rooms.answer(code, 2, STUDENTS[4], "1")
    with pytest.raises(NotPresenter):
        rooms.dismiss(code, "x")
    with pytest.raises(NotPresenter):
        rooms.questions(code, "x")
    rooms.dismiss(code, secret)
    assert rooms.read(code).question is None
    with pytest.raises(QuestionClosed):
        rooms.answer(code, 2, STUDENTS[5], "0")
    kept = rooms.questions(code, secret)
    assert [q["id"] for q in kept] == [1, 2] and kept[1]["counts"] == {"1": 1}   # still open: counted now
    rooms.followed(code, "app-a", 3)
    other.followed(code, "app-b", 4)
    assert rooms.followers(code) == other.followers(code) == 7
    third = rooms.ask(code, secret, choice_question("Last?", ["x", "y"], 1).to_dict())
    rooms.end(code, secret)
    with pytest.raises(RoomError, match="no such room"):
        other.answer(code, third["id"], STUDENTS[0], "0")            # an ended room refuses answers
    # the presenter downloads after the end
    assert [q["id"] for q in other.questions(code, secret)] == [1, 2, 3]
    with pytest.raises(RoomError):
        rooms.ask(code, secret, q)


def test_memory_rooms_keep_the_rules_of_a_vote():
    check_votes(MemoryRooms())


def test_two_apps_on_one_redis_count_each_student_once(redis_url):
    from ui.rooms_redis import RedisRooms
    keys = RoomKeys(b"k" * 40)
    check_votes(RedisRooms(redis_url, keys=keys), RedisRooms(redis_url, keys=keys))


def test_the_export_holds_the_questions_and_counts_and_no_student(trace):
    rooms = MemoryRooms()
    code, secret = rooms.create()
    rooms.publish(code, secret, VIEW)
    rooms.ask(code, secret, {**next_question(trace, 1).to_dict(), "asked": 1.8e9})
    for i, key in enumerate(("▁x", "▁x", trace.steps[0].piece)):
        rooms.answer(code, 1, STUDENTS[i], key)
    rooms.close(code, secret, 1, 4, True)
    questions = [Question.of(q) for q in rooms.questions(code, secret)]
    rows = list(csv.DictReader(io.StringIO(export_csv(questions, "http://lecture"))))
    assert len(rows) == 1 and rows[0]["kind"] == "next" and rows[0]["answers"] == "3" and \
        rows[0]["followers"] == "4"
    assert rows[0]["view_link"].startswith("http://lecture/?text=one+two") and "tab=steps" in rows[0][
        "view_link"]
    assert json.loads(rows[0]["counts"]) == {"x": 2, piece_words(trace.steps[0].piece): 1}
    assert rows[0]["model_answer"] == piece_words(trace.steps[0].piece) and \
        rows[0]["asked_utc"].startswith("2027")
    data = json.loads(export_json(questions, room=code))
    assert data["room"] == code and data["questions"][0]["room_agreed"] == round(1 / 3, 3)
    body = export_csv(questions) + export_json(questions)
    assert not any(s in body for s in STUDENTS)


# ---------------------------------------------------------------- the students' route
@pytest.fixture
def route():
    rooms = MemoryRooms(keys=RoomKeys(b"r" * 40))
    api = FastAPI()
    known = {"▁chat": 5}
    api.router.routes.extend(live_routes(rooms, RoomWatch(rooms), None, RoomLimits(),
                                         lambda w: piece_of(w, known.get, {5: "▁chat"}.get)))
    return rooms, TestClient(api)


def post(client, code, body, raw=None):
    return client.post(f"/live/rooms/{code}/answer", content=raw if raw is not None else json.dumps(body),
                       headers={"content-type": "application/json"})


def test_the_answer_route_accepts_an_open_questions_answers_and_refuses_the_rest(route, trace):
    rooms, client = route
    code, secret = rooms.create()
    rooms.publish(code, secret, VIEW)
    r = post(client, code, {"student": STUDENTS[0], "question": 1, "answer": {"option": 0}})
    assert r.status_code == 409 and "closed" in r.json()["error"]        # nothing asked yet
    rooms.ask(code, secret, next_question(trace, 1).to_dict())
    ok = post(client, code, {"student": STUDENTS[0], "question": 1, "answer": {"typed": "chat"}})
    assert ok.status_code == 200 and ok.json() == {"ok": True, "question": 1, "key": "▁chat", "label": "chat",
                                                   "replaced": False}
    again = post(client, code, {"student": STUDENTS[0], "question": 1, "answer": {"option": 0}})
    assert again.json()["replaced"] is True and \
        rooms.tally(code, 1) == {next_question(trace, 1).options[0]: 1}
    for body, status, said in (({"student": "short", "question": 1, "answer": {"option": 0}}, 400,
                                "could not be read"),
                               ({"student": STUDENTS[1], "question": "1", "answer": {"option": 0}}, 400,
                                "could not"),
                               ({"student": STUDENTS[1], "question": 1, "answer": {"option": 99}}, 400,
                                "no option"),
                               ({"student": STUDENTS[1], "question": 1, "answer": {"typed": "zebra"}}, 400,
                                "not one piece"),
                               ({"student": STUDENTS[1], "question": 2, "answer": {"option": 0}}, 409,
                                "closed")):
        r = post(client, code, body)
        assert r.status_code == status and said in r.json()["error"], (body, r.text)
    big = post(client, code, None,
               raw=json.dumps({"student": STUDENTS[1], "question": 1, "answer": {"typed": "x" * 2000}}))
    assert big.status_code == 413
    assert post(client, code, None, raw="{not json").status_code == 400
    limited = [post(client, code, {"student": STUDENTS[2], "question": 1, "answer": {"option": 1}})
               .status_code
               for _ in range(12)]
    assert limited[:10] == [200] * 10 and limited[10:] == [429, 429]     # a student's rate, said plainly
    rooms.close(code, secret, 1, 0, True)
    r = post(client, code, {"student": STUDENTS[3], "question": 1, "answer": {"option": 0}})
    assert r.status_code == 409
    rooms.end(code, secret)
    r = post(client, code, {"student": STUDENTS[3], "question": 1, "answer": {"option": 0}})
    assert r.status_code == 404 and r.json()["ended"] is True


def test_only_the_presenters_secret_asks_closes_reveals_and_downloads(trace):
    """The presenter's events act on the room the browser's secret proves: a forged room (a public code with a
    made-up secret, as a student could send) is refused before the store is touched."""
    from types import SimpleNamespace
    from ui.votes import RoomQuestions
    rooms = MemoryRooms(keys=RoomKeys(b"s" * 40))
    code, secret = rooms.create()
    rooms.publish(code, secret, VIEW)
    live = SimpleNamespace(rooms=rooms, watch=RoomWatch(rooms))
    votes = RoomQuestions(live, SimpleNamespace(cfg=None), [])
    forged = {"code": code, "secret": "made-up.0000"}
    with pytest.raises(gr.Error, match="Start a live session"):
        votes.ask(forged, trace, "next", 1, 1, "mean over heads", "encoder", "itself", "", "", 1, "", "steps",
                  "Viridis", "Light", False)
    rooms.ask(code, secret, choice_question("Q?", ["a", "b"], 1).to_dict())
    for what in ("stop", "reveal", "done"):
        with pytest.raises(gr.Error):
            votes.act(what, forged, "Light", False, "Viridis")
    with pytest.raises(gr.Error):
        votes.download(forged, forged)
    assert rooms.read(code).question["status"] == "open"
    status, plot, seen, timer = votes.act("reveal", {"code": code, "secret": secret}, "Light", False,
                                          "Viridis")
    assert 'data-status="revealed"' in status and rooms.read(code).question["status"] == "revealed"


def test_a_count_that_a_reveal_overtakes_sends_nothing():
    """The projector's tick reads the open question, and a Reveal lands before the tick answers: the tick
    sends nothing (its open count would come after the reveal's own answer and put the projector back on the
    open, blurred question until the next tick). The next tick shows the reveal."""
    from types import SimpleNamespace
    from ui.votes import RoomQuestions
    rooms = MemoryRooms(keys=RoomKeys(b"t" * 40))
    code, secret = rooms.create()
    rooms.publish(code, secret, VIEW)
    votes = RoomQuestions(SimpleNamespace(rooms=rooms, watch=RoomWatch(rooms)), SimpleNamespace(cfg=None), [])
    room, look = {"code": code, "secret": secret}, ("Light", False, "Viridis")
    rooms.ask(code, secret, choice_question("Q?", ["a", "b"], 1).to_dict())
    status, plot, seen, timer = votes.count(room, None, *look)
    assert 'data-status="open"' in status
    read = rooms.read

    def read_then_reveal(c):           # the tick's read, then the presenter's Reveal
        view = read(c)
        rooms.read = read
        votes.act("reveal", room, *look)
        return view
    rooms.read = read_then_reveal
    assert votes.count(room, None, *look) == (gr.skip(),) * 4      # (None: the count changed since)
    status, plot, seen, timer = votes.count(room, seen, *look)
    assert 'data-status="revealed"' in status


def test_a_followers_frame_withholds_the_view_until_the_reveal(trace):
    """While a question is open or closed, the stream's frame carries the view's title and English only: no
    French, no figures, no notes, no link to open it; revealed, the whole view again."""
    import asyncio
    from ui.follow import Look, ViewFrames
    from ui.rooms import RoomView
    full = {"tab": "steps", "title": "Step by step", "where": "Step 1 of 5", "text": "one two",
            "french": "un deux", "notes": ["n"], "explore": "/?text=one",
            "parts": [{"type": "plot", "id": "topk-plot", "figure": {}}]}
    frames = ViewFrames(lambda state, look: json.dumps(full))
    q = next_question(trace, 1).to_dict()

    def sent(status):
        view = RoomView(3, dict(VIEW), {**q, "id": 1, "status": status} if status else None)
        frame = asyncio.run(frames.frame(view, Look()))
        return json.loads(frame[frame.index(b"data: ") + 6:].decode())
    for status in ("open", "closed"):
        msg = sent(status)
        assert msg["view"] == {k: full[k] for k in ("tab", "title", "where", "text")}
        assert "answer" not in msg["question"] and "counts" not in msg["question"]
    shown = sent("revealed")
    assert shown["view"] == full and shown["question"]["answer"] == q["answer"]
    assert sent(None)["view"] == full and sent(None)["question"] is None


def test_odd_answers_and_odd_questions_are_refused(trace):
    q = piece_question(trace, 1, 1, "mean over heads")
    for digits in ("²", "٣", "1 ", "01234"):
        with pytest.raises(VoteError):
            accept(q, {"option": digits})
    known = {"<unk>": 1, "<pad>": 0, "</s>": 3}
    assert piece_of("<unk>", known.get, {1: "<unk>"}.get) is None and \
        piece_of("<pad>", known.get, {0: "<pad>"}.get) is None
    assert piece_of("</s>", known.get, {3: "</s>"}.get) == "</s>"   # the model may end the sentence next
    from dataclasses import replace
    with pytest.raises(VoteError, match="French you scored"):
        next_question(replace(trace, forced=True), 1)


def test_the_export_names_a_repeated_piece_once_per_position():
    q = Question("piece", "Which?", ("▁the", "▁cat", "▁the"), id=1, status="revealed", answer="2",
                 counts={"0": 3, "2": 5})
    row = json.loads(export_json([q]))["questions"][0]
    assert row["options"] == ["1: ▁the", "2: ▁cat", "3: ▁the"] and \
        row["counts"] == {"1: ▁the": 3, "3: ▁the": 5}


def test_answers_go_once_counted_and_a_room_taken_up_again_numbers_on(redis_url, trace):
    import redis
    from ui.rooms_redis import RedisRooms
    keys = RoomKeys(b"q" * 40)
    rooms, server = RedisRooms(redis_url, keys=keys), redis.Redis.from_url(redis_url)
    code, secret = rooms.create()
    rooms.publish(code, secret, VIEW)
    rooms.ask(code, secret, choice_question("Q?", ["a", "b"], 1).to_dict())
    rooms.answer(code, 1, STUDENTS[0], "1")
    assert server.exists(rooms.answers_key(code, 1))
    assert rooms.close(code, secret, 1, 1, False)["counts"] == {"1": 1}
    assert not server.exists(rooms.answers_key(code, 1))            # frozen: the answers themselves are gone
    # a restart of Redis lost the room (not its questions)
    server.delete(rooms.key(code))
    assert rooms.adopt(code, secret)
    rooms.publish(code, secret, VIEW)
    assert rooms.ask(code, secret, choice_question("Again?", ["a", "b"], 1).to_dict())["id"] == 2
    memory = MemoryRooms(keys=keys)
    code, secret = memory.create()
    memory.publish(code, secret, VIEW)
    memory.ask(code, secret, choice_question("Q?", ["a", "b"], 1).to_dict())
    memory.answer(code, 1, STUDENTS[0], "0")
    memory.end(code, secret)                                        # ended while open: its counts kept
    assert memory.questions(code, secret)[0]["counts"] == {"0": 1}
