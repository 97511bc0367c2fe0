"""A page driven as Gradio's frontend drives it, over raw HTTP + SSE: read ``/config``, keep every component's
value, send an event's inputs to ``/gradio_api/queue/join`` (or ``/run/predict`` for unqueued events), read
the answer from ``/queue/data``, then run what the browser runs next (the ``.then`` chain and the ``change``
events of every output whose value changed). Used by tests/test_disk.py,
bench/load_test.py and bench/ab_app_chain.py."""
from __future__ import annotations

import json
import time
import uuid


class AppConfig:
    """The app's /config: components (by id, with their starting values) and dependencies (events)."""

    def __init__(self, cfg: dict) -> None:
        self.prefix = cfg.get("api_prefix", "/gradio_api")
        self.components = {c["id"]: c for c in cfg["components"]}
        self.deps = cfg["dependencies"]

    def find(self, **props) -> int:
        """The id of the first component whose props include all of `props` (elem_id, label, id)."""
        for cid, c in self.components.items():
            if all(c.get("props", {}).get(k) == v for k, v in props.items()):
                return cid
        raise KeyError(f"no component with {props}")

    def deps_of(self, target, event: str) -> list[int]:
        return [i for i, d in enumerate(self.deps) if [target, event] in [list(t) for t in d["targets"]]]

    def chained_after(self, i: int) -> list[int]:
        return [j for j, d in enumerate(self.deps) if d.get("trigger_after") == i]

    def is_state(self, cid: int) -> bool:
        return self.components.get(cid, {}).get("type") == "state"


class Page:
    """One user's page: its session, component values, and the events it sends."""

    def __init__(self, http, base: str, app: AppConfig) -> None:
        self.http, self.base, self.app = http, base.rstrip("/"), app
        self.session = uuid.uuid4().hex[:11]
        self.values = {cid: c.get("props", {}).get("value") for cid, c in app.components.items()}
        self.bytes = 0
        self.trace = False          # print every event this page sends (--trace-events, the first user)

    async def open(self) -> None:
        """GET / and /config, then what the page runs when it loads (load events, the first tab's select)."""
        for path in ("/", "/config"):
            r = await self.http.get(self.base + path)
            r.raise_for_status()
            self.bytes += len(r.content)
        first_tab = next(cid for cid, c in self.app.components.items() if c["type"] == "tabitem")
        await self.fire(None, "load")
        await self.fire(first_tab, "select")

    async def fire(self, target, event: str) -> None:
        if event == "load":
            deps = [i for i, d in enumerate(self.app.deps) if any(t[1] == "load" for t in d["targets"])]
        else:
            deps = self.app.deps_of(target, event)
        for i in deps:
            await self.run(i)

    async def set_and_change(self, cid: int, value) -> None:
        """The user changes a control: its value, then its change events."""
        if self.values.get(cid) != value:
            self.values[cid] = value
            await self.fire(cid, "change")

    async def run(self, i: int) -> None:
        dep = self.app.deps[i]
        if dep.get("js") and not dep.get("backend_fn", True):
            return                                   # runs in the browser only
        data = [None if self.app.is_state(c) else self.values.get(c) for c in dep["inputs"]]
        t0, b0 = time.perf_counter(), self.bytes
        out = await (self.queued(i, data) if dep.get("queue", True) else self.direct(i, data))
        if self.trace:
            print(f"    event {i:4d} {'queued' if dep.get('queue', True) else 'direct'} "
                  f"{dep.get('api_name') or '-':24s} {1000 * (time.perf_counter() - t0):7.1f} ms "
                  f"{(self.bytes - b0) / 1000:7.1f} KB", flush=True)
        changed = self.apply(dep["outputs"], out)
        for j in self.app.chained_after(i):
            await self.run(j)
        for cid in changed:
            await self.fire(cid, "change")

    def apply(self, outputs: list[int], data: list) -> list[int]:
        changed = []
        for cid, val in zip(outputs, data):
            if self.app.is_state(cid):
                continue
            if isinstance(val, dict) and val.get("__type__") == "update":
                if "value" not in val:
                    continue
                val = val["value"]
            if self.values.get(cid) != val:
                self.values[cid] = val
                changed.append(cid)
        return changed

    def body(self, i: int, data: list) -> dict:
        return {"data": data, "event_data": None, "fn_index": i, "trigger_id": None,
                "session_hash": self.session}

    async def direct(self, i: int, data: list) -> list:
        r = await self.http.post(f"{self.base}{self.app.prefix}/run/predict", json=self.body(i, data))
        r.raise_for_status()
        self.bytes += len(r.content)
        return r.json()["data"]

    async def queued(self, i: int, data: list) -> list:
        r = await self.http.post(f"{self.base}{self.app.prefix}/queue/join", json=self.body(i, data))
        r.raise_for_status()
        event_id = r.json()["event_id"]
        url = f"{self.base}{self.app.prefix}/queue/data?session_hash={self.session}"
        async with self.http.stream("GET", url) as stream:
            async for line in stream.aiter_lines():
                self.bytes += len(line) + 1
                if not line.startswith("data:"):
                    continue
                msg = json.loads(line[5:])
                if msg.get("event_id") not in (None, event_id):
                    continue
                if msg.get("msg") == "process_completed":
                    if not msg.get("success"):
                        raise RuntimeError(f"fn {i} failed: {msg.get('output', {}).get('error')}")
                    return msg["output"]["data"]
                if msg.get("msg") in ("unexpected_error", "close_stream") and \
                        msg.get("event_id", event_id) == event_id:
                    raise RuntimeError(f"fn {i}: {msg}")
        raise RuntimeError(f"fn {i}: the stream ended without a result")
