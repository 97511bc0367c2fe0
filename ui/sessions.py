"""Sessions that keep only what this app reads (issue 38, item 2: memory under many sessions).

Gradio keeps two things per browser session: the values of its ``gr.State``s (this app's per-user results)
and ``config_values``, a copy of every component's page config (288 components here: 0.47 MB, measured with
tracemalloc) into which it also writes every output value an event sends back (a long sentence's figures:
hundreds of kB more). That copy exists only for Gradio's deep links (``gr.DeepLinkButton``: a link that
restores a session's page), which this app does not offer: its links are its own query strings
(``transformer/viz/links.py``). Under 1,000 sessions the copies alone were about 0.5-1.5 GB.

``LeanSessionState`` is Gradio's ``SessionState`` without that copy: the same state values, time-to-live and
closing, and nothing written per event. ``use_lean_sessions()`` puts it in place (``ui/demo.py`` calls it
when serving); ``tests/test_sessions.py`` checks it against the Gradio it runs with, so an upgrade that
changes ``SessionState`` fails there, not in a lecture.
"""
from __future__ import annotations

import os
from copy import copy
from typing import Any

from gradio import state_holder


class _Unkept(dict):
    """A dict that keeps nothing: Gradio's per-session copy of the page config, for deep links this app has
    not."""

    def __setitem__(self, key: Any, value: Any) -> None:
        pass


class LeanSessionState(state_holder.SessionState):
    """Gradio's session state without its copy of the page config (see the module's docstring)."""

    # Gradio's __init__, less the eager copy of every component's config
    def __init__(self, blocks) -> None:
        self.blocks_config = copy(blocks.default_config)
        self.config_values = _Unkept()
        self.state_data: dict[int, Any] = {}
        self._state_ttl = {}
        self.is_closed = False
        # as Gradio sets it
        self.STATE_TTL_WHEN_CLOSED = 1 if os.getenv("GRADIO_IS_E2E_TEST", None) else 3600

    def _update_config(self, key: int) -> None:                         # after each event, per output
        pass

    def _update_value_in_config(self, key: int, value: Any) -> None:    # after each event, per output value
        pass


def use_lean_sessions() -> None:
    """Every session Gradio makes from now on is a LeanSessionState (StateHolder looks the class up by
    name)."""
    state_holder.SessionState = LeanSessionState
