"""The room answers: questions a presenter asks about the view on screen, and what students may answer (numpy
only: no torch, no gradio).

A question is fixed to the view it was asked on and carries the model's own answer, worked out from the trace
when it is asked (hidden from the students until the presenter reveals it):

- ``piece``: "Which English piece will this step look at most?" The answer is the argmax of the shown
  cross-attention (the step's row, at the shown layer, for one head or the mean over heads).
- ``next``: "What will the next French piece be?" The answer is the model's greedy choice and its probability;
  students tap one of the step's candidates (shown in alphabetical order: the ranking would tell) or type a
  word.
- ``head``: "Which head does this?" The presenter names a pattern the head summary knows ("looks at the
  previous piece"); the answer is the head whose attention follows it most (``viz.analysis.pattern_scores``).
- ``choice``: the presenter's own question, 2 to MAX_OPTIONS options, one marked right.

A student's answer is a *key*: the option's index as text ("3"), or for ``next`` the piece itself ("▁chat"),
so that a typed word and the tapped candidate count as one. ``accept`` turns what a student sent into a key or
refuses it with a message the page shows.
"""
from __future__ import annotations

import csv
import datetime
import io
import json
import re
from collections import Counter
from dataclasses import asdict, dataclass, field, replace
from typing import Callable, Optional

import numpy as np

from .pieces import BOS_PIECE, PAD_PIECE, UNK_PIECE, WORD_MARKER, detokenize
from .viz.analysis import pattern_scores
from .viz.links import query_string

KINDS = {"piece": "Which English piece will this step look at most?",
         "next": "What will the next French piece be?",
         "head": "Which head does this?",
         "choice": "A question of my own"}
# what the presenter names, by attention kind: the head summary's patterns, in words a room reads
PATTERNS = {
    "encoder": {"previous token": "looks at the previous piece", "next token": "looks at the next piece",
                "itself": "looks at its own piece",
                "end of sentence": "looks at the end of the sentence </s>"},
    "decoder": {"previous token": "looks at the previous piece", "itself": "looks at its own piece",
                "start token <s>": "looks at the start <s>"},
    "cross": {"diagonal / monotonic": "follows the English word order",
              "end of sentence": "looks at the English </s>"},
}
KIND_WORDS = {"encoder": "encoder self-attention", "decoder": "decoder self-attention (masked)",
              "cross": "cross-attention"}
MAX_OPTIONS = 6             # a presenter's own question
MAX_OPTION_CHARS = 80
MAX_PROMPT_CHARS = 200
MAX_TYPED_CHARS = 40        # a word a student types
MAX_QUESTIONS = 200         # per room
MAX_ANSWERS = 5000          # per question: a loop inventing students cannot fill the store
STATUSES = ("open", "closed", "revealed")
OPTION = re.compile(r"[0-9]{1,4}")     # an option's index as a student's page sends it (ASCII digits only)
NOT_ANSWERS = (PAD_PIECE, UNK_PIECE, BOS_PIECE)   # pieces the model never writes next


class VoteError(ValueError):
    """An answer or a question refused: the message says why, in the words the page shows."""


@dataclass(frozen=True)
class Question:
    kind: str                       # one of KINDS
    prompt: str                     # the question as the room reads it
    # what a student taps: pieces, candidates, "L1 H1"…, the presenter's options
    options: tuple[str, ...]
    context: str = ""               # one line under the prompt (the step, what it writes, the pattern)
    grid: tuple[int, ...] = ()      # ``head``: (layers, heads); options are "L1 H1" … row by row
    typed: bool = False             # a student may type a word (``next``)
    view: dict = field(default_factory=dict)   # the view it was asked on, as link parameters
    answer: str = ""                # the model's answer, a key (hidden until revealed)
    answer_note: str = ""           # "p = 0.62", "0.41 of the step's attention", …
    id: int = 0                     # given by the room (1, 2, …)
    status: str = "open"
    asked: float = 0.0              # unix time
    counts: dict = field(default_factory=dict)   # key -> answers, frozen when closed or revealed
    answered: int = 0
    followers: int = 0              # students following when it closed

    def to_dict(self) -> dict:
        d = asdict(self)
        d["options"], d["grid"] = list(self.options), list(self.grid)
        return d

    @classmethod
    def of(cls, d: dict) -> "Question":
        d = {k: v for k, v in dict(d).items() if k in cls.__dataclass_fields__}
        counts = d.get("counts") or {}
        return cls(**{**d, "options": tuple(d.get("options") or ()), "grid": tuple(d.get("grid") or ()),
                      "view": dict(d.get("view") or {}),
                      "counts": dict(counts) if isinstance(counts, dict) else {}})

    def label(self, key: str) -> str:
        """A key as the room reads it: the option's text, or a typed piece as a word."""
        if self.kind == "next":
            return piece_words(key)
        try:
            return self.options[int(key)]
        except (ValueError, IndexError):
            return str(key)

    @property
    def answer_label(self) -> str:
        return self.label(self.answer) if self.answer else ""

    @property
    def link(self) -> str:
        v = dict(self.view)
        return "/" + query_string(v.pop("text", ""), v.pop("tab", "steps"), **v) if self.view else ""

    def public(self) -> dict:
        """What a follower's page is sent: the model's answer and the counts only once revealed."""
        d = {k: v for k, v in self.to_dict().items() if k not in ("answer", "answer_note", "counts", "view",
                                                                  "answered", "followers")}
        if self.status == "revealed":
            d.update(answer=self.answer, answer_label=self.answer_label, answer_note=self.answer_note,
                     counts=self.counts, answered=self.answered, followers=self.followers,
                     labels={k: self.label(k) for k in self.counts})
        return d


def piece_words(piece: str) -> str:
    """A piece as a student reads it: "▁chat" → "chat", "s" → "…s" (the end of a word)."""
    if piece.startswith("<") and piece.endswith(">"):
        return piece
    return piece[1:] if piece.startswith(WORD_MARKER) else f"…{piece}"


def _row(trace, step: int, layer: int, head: Optional[int]) -> np.ndarray:
    """The step's cross-attention over the source pieces at `layer` (1-based), one head (1-based) or the
    mean."""
    probs = trace.cross.probs[layer - 1, :, step - 1]           # (H, S)
    return probs.mean(0) if head is None else probs[head - 1]


def check_step(trace, step: int) -> int:
    n = len(trace.steps)
    step = int(step)
    if not 1 <= step <= n:
        raise VoteError(f"Step {step} is not one of this translation's steps (1 to {n}).")
    return step


def head_number(head) -> Optional[int]:
    """The step view's head choice as a number: "mean over heads" → None, "head 3" or "3" → 3."""
    text = str(head or "").strip().lower()
    if not text or text.startswith("mean"):
        return None
    return int(text.split()[-1])


def piece_question(trace, step: int, layer: int, head) -> Question:
    step, h = check_step(trace, step), head_number(head)
    row = _row(trace, step, int(layer), h)
    best = int(np.argmax(row))
    who = "mean over heads" if h is None else f"head {h}"
    writes = trace.steps[step - 1].piece
    return Question("piece", KINDS["piece"], tuple(trace.source.pieces),
                    context=f"Step {step}, which writes «{piece_words(writes)}» · cross-attention · layer "
                            f"{layer} · {who}",
                    view=dict(text=trace.source.text, tab="steps", step=str(step), layer=str(layer),
                              head=who if h is None else str(h)),
                    answer=str(best), answer_note=f"{row[best]:.0%} of the step's attention")


def next_question(trace, step: int, layer: int = 0, head=None) -> Question:
    """The answer: the model's most probable piece given the shown prefix (its greedy choice there)."""
    if trace.forced:
        raise VoteError("The view shows French you scored, not the model's own translation: translate the "
                        "sentence again, then ask what the model will write.")
    step = check_step(trace, step)
    s = trace.steps[step - 1]
    so_far = detokenize(trace.tgt_pieces[:step - 1])
    view = dict(text=trace.source.text, tab="steps", step=str(step))
    if layer:
        view.update(layer=str(layer), head=str(head or "mean over heads"))
    return Question("next", KINDS["next"],
                    tuple(sorted(set(s.topk_pieces), key=lambda p: piece_words(p).lower())),
                    context=f"Step {step} · the French so far: «{so_far or '(nothing yet)'}»", typed=True,
                    view=view, answer=s.topk_pieces[0], answer_note=f"p = {s.topk_probs[0]:.2f}")


def head_question(trace, kind: str, pattern: str, view: Optional[dict] = None) -> Question:
    if kind not in PATTERNS or pattern not in PATTERNS[kind]:
        raise VoteError(f"Pick a pattern the head summary knows for {KIND_WORDS.get(kind, kind)}.")
    attn = getattr(trace, kind).probs
    scores = pattern_scores(attn, kind).get(pattern)
    if scores is None:
        raise VoteError("The sentence is too short for this pattern: translate a longer one.")
    L, H = scores.shape
    best = int(np.argmax(scores))
    return Question("head", f"Which head {PATTERNS[kind][pattern]}?",
                    tuple(f"L{l} H{h}" for l in range(1, L + 1) for h in range(1, H + 1)),
                    context=f"{KIND_WORDS[kind]}: tap a layer × head", grid=(L, H),
                    view=dict(view or dict(text=trace.source.text, tab="summary", kind=kind)),
                    answer=str(best),
                    answer_note=f"{scores.flat[best]:.0%} of its attention on the pattern")


def choice_question(prompt: str, options, correct, view: Optional[dict] = None) -> Question:
    prompt = " ".join(str(prompt or "").split())[:MAX_PROMPT_CHARS]
    opts = tuple(o for o in (" ".join(str(x).split())[:MAX_OPTION_CHARS] for x in options or ()) if o)
    if not prompt:
        raise VoteError("Type the question the room answers.")
    if not 2 <= len(opts) <= MAX_OPTIONS:
        raise VoteError(f"A question of your own takes 2 to {MAX_OPTIONS} options, one per line.")
    if len(set(opts)) != len(opts):
        raise VoteError("Two options read the same: make each different.")
    try:
        right = int(correct)
    except (TypeError, ValueError):
        right = 0
    if not 1 <= right <= len(opts):
        raise VoteError(f"Mark the right option: a number from 1 to {len(opts)}.")
    return Question("choice", prompt, opts, view=dict(view or {}), answer=str(right - 1))


def piece_of(word: str, piece_id: Callable[[str], Optional[int]],
             id_to_piece: Callable[[int], str]) -> Optional[str]:
    """A typed word as one piece of the vocabulary: "chat" → "▁chat" (a word's start first), "s" → "s"; None
    when it is not one piece."""
    word = word.strip()
    if word in NOT_ANSWERS:
        return None
    for p in ((word,) if word.startswith(WORD_MARKER) else (WORD_MARKER + word, word)):
        i = piece_id(p)
        if i is not None and id_to_piece(i) == p:
            return p
    return None


def accept(q: Question, answer, known_piece: Optional[Callable[[str], Optional[str]]] = None) -> str:
    """What a student sent ({"option": i} or, for ``next``, {"typed": word}) as a key; VoteError otherwise."""
    if not isinstance(answer, dict):
        raise VoteError("An answer is an option's number, or a typed word.")
    if "typed" in answer and answer.get("typed") not in (None, ""):
        if not q.typed:
            raise VoteError("This question takes one of its options: tap one.")
        word = answer["typed"]
        if not isinstance(word, str) or len(word) > MAX_TYPED_CHARS or not word.strip():
            raise VoteError(f"Type one word (at most {MAX_TYPED_CHARS} characters).")
        piece = known_piece(word) if known_piece is not None else None
        if piece is None:
            raise VoteError(f"«{word.strip()[:MAX_TYPED_CHARS]}» is not one piece of the model's vocabulary: "
                            f"pick "
                            "one of the candidates, or type a shorter word.")
        return piece
    i = answer.get("option")
    if isinstance(i, bool) or not isinstance(i, (int, str)) or not OPTION.fullmatch(str(i)):
        raise VoteError("Tap one of the options.")
    i = int(i)
    if not 0 <= i < len(q.options):
        raise VoteError(f"There is no option {i + 1} (the question has {len(q.options)}).")
    return q.options[i] if q.kind == "next" else str(i)


def tally(answers) -> dict:
    """Answers (one key per student) as counts, most first."""
    return dict(Counter(answers).most_common())


def frozen(q: Question, counts: dict, followers: int, status: str) -> Question:
    return replace(q, counts=dict(counts), answered=int(sum(counts.values())), followers=int(followers),
                   status=status)


def agreed(q: Question) -> Optional[float]:
    """The share of the room that gave the model's answer (None before any answer or without one)."""
    n = sum(q.counts.values())
    return q.counts.get(q.answer, 0) / n if n and q.answer else None


def export_rows(questions, base: str = "") -> list[dict]:
    """One row per question, as the CSV and the JSON hold them: nothing that names a student."""
    rows = []
    for q in sorted(questions, key=lambda q: q.id):
        share = agreed(q)
        rows.append({"question": q.id, "asked_utc": _utc(q.asked), "kind": q.kind, "prompt": q.prompt,
                     "context": q.context, "view_link": base.rstrip("/") + q.link if q.link else "",
                     "options": [export_label(q, o if q.kind == "next" else str(i))
                                 for i, o in enumerate(q.options)],
                     "counts": {export_label(q, k): n for k, n in q.counts.items()},
                     "answers": q.answered, "followers": q.followers, "status": q.status,
                     "model_answer": q.answer_label, "model_note": q.answer_note,
                     "room_agreed": None if share is None else round(share, 3)})
    return rows


def export_label(q: Question, key: str) -> str:
    """A key as the export names it: one name per option (a sentence's pieces numbered: "▁the" may come
    twice)."""
    return f"{int(key) + 1}: {q.options[int(key)]}" if q.kind == "piece" else q.label(key)


def _utc(t: float) -> str:
    return (datetime.datetime.fromtimestamp(t, datetime.timezone.utc).isoformat(timespec="seconds") if t
            else "")


def export_json(questions, base: str = "", room: str = "") -> str:
    return json.dumps({"room": room, "questions": export_rows(questions, base)}, ensure_ascii=False, indent=1)


def export_csv(questions, base: str = "") -> str:
    rows = export_rows(questions, base)
    out = io.StringIO()
    fields = ["question", "asked_utc", "kind", "prompt", "context", "view_link", "options", "counts",
              "answers", "followers", "status", "model_answer", "model_note", "room_agreed"]
    w = csv.DictWriter(out, fields)
    w.writeheader()
    for r in rows:
        w.writerow({**r, "options": " | ".join(r["options"]),
                    "counts": json.dumps(r["counts"], ensure_ascii=False)})
    return out.getvalue()
