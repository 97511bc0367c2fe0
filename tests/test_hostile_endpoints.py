"""Every endpoint of the running app gets the same hostile values a careful tester sent (issue 38): for each
parameter of /translate, /what_if, /step_view, /explorer, /attribution, /contrast, /forced_decoding and
/beam_search in turn (the others valid): nothing, empty, 1 MB, control characters, a lone surrogate,
right-to-left text, emoji, a 5,000-letter word, a list, an object, negative, zero, a fraction, a boolean, a
huge number, and HTML. Each answer is a result or one clear message (never Python's words, never Gradio's
hidden exception), and after each the app still translates. The room routes get hostile codes and answer 404
(or 429), never 500. Sent as raw JSON (a lone surrogate cannot go through gradio_client), in one session, as a
browser would."""
from __future__ import annotations

import json
import uuid

import httpx

from harness.app import start_app, stop_app

HOSTILE = [None, "", "x" * 1_000_000, "\x00\x01\x1b[31m", "\ud800", "مرحبا بالعالم", "🐱" * 50, "a" * 5000,
           [1, 2], {"a": 1}, -1, 0, 1.5, True, 10**12, "<img src=x onerror=alert(1)>"]
VALID = {"translate": ["The cat sleeps."], "what_if": ["The cat sleeps.", 1, "▁Le"],
         "step_view": [1, 3, "mean over heads", "Light", False, "Viridis", False],
         "explorer": ["encoder", 1, "1", "head", "shared across heads", "Light", False, "Viridis", False],
         "attribution": ["The cat sleeps.", "gradient_x_input"],
         "contrast": ["The cat sleeps.", 1, "▁La", "gradient_x_input"],
         "forced_decoding": ["The cat sleeps.", "Le chat dort."], "beam_search": ["The cat sleeps.", 2]}
PYTHON_WORDS = ("invalid literal", "NoneType", "Traceback", "object is not", "unsupported operand",
                "has no attribute", "model failed", "could not be drawn", "raised an exception",
                "codec can't")


def call(http: httpx.Client, url: str, name: str, data: list, session: str) -> tuple[str, object]:
    """("complete", outputs) or ("error", message): the app's answer to one call of an endpoint."""
    r = http.post(f"{url}gradio_api/call/{name}", content=json.dumps({"data": data, "session_hash": session}),
                  headers={"content-type": "application/json"})
    if r.status_code != 200:
        return "error", f"HTTP {r.status_code}: {r.text[:200]}"
    body = http.get(f"{url}gradio_api/call/{name}/{r.json()['event_id']}").text
    event = next(line[7:] for line in body.splitlines() if line.startswith("event: "))
    data = json.loads(next(line[6:] for line in body.splitlines() if line.startswith("data: ")))
    return event, (data.get("error") if isinstance(data, dict) else data)


def test_every_endpoint_answers_hostile_values_clearly_and_the_app_still_serves(bundled_checkpoint):
    proc, url = start_app()
    session, failures, seen = uuid.uuid4().hex[:11], [], 0
    try:
        with httpx.Client(timeout=120) as http:
            assert call(http, url, "translate", VALID["translate"], session)[0] == "complete"
            for name, valid in VALID.items():
                for i in range(len(valid)):
                    for bad in HOSTILE:
                        data = list(valid)
                        data[i] = bad
                        event, answer = call(http, url, name, data, session)
                        said = json.dumps(answer, ensure_ascii=False)[:300]
                        seen += 1
                        if event not in ("complete", "error") or (event == "error" and not answer) or \
                                any(w in said for w in PYTHON_WORDS):
                            failures.append(f"/{name} #{i} {ascii(bad)[:30]}: {event} {said}")
                        health = call(http, url, "translate", VALID["translate"], session)
                        if health[0] != "complete" or not health[1][1]:
                            failures.append(f"after /{name} #{i} {ascii(bad)[:30]} the app no longer "
                                            f"translates")
            for code in ("../../etc/passwd", "%00", "A" * 5000, "<b>x</b>", "ÉÉÉÉÉÉ", "🐱🐱", "null"):
                for tail in ("", "/view", "/events", "/qr.svg"):
                    r = http.get(f"{url}live/rooms/{code}{tail}")
                    if r.status_code >= 500:
                        failures.append(f"room route {code[:20]}{tail}: HTTP {r.status_code}")
        assert seen > 300 and not failures, "\n".join(failures)
        assert "Traceback" not in open(proc.log_path, errors="replace").read()
    finally:
        stop_app(proc)
