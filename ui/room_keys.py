"""A live room's secret: a random token signed with the app's key (no gradio here)."""
from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import tempfile
from pathlib import Path


class RoomKeys:
    """A room's secret is a random token signed with the app's key (HMAC-SHA256 of code and token): the app
    recognises a presenter's secret even after it restarted, or after the store lost the room. The key: the
    environment's APP_ROOM_KEY (the same in every app process of a deployment), else a file of this machine's
    (APP_ROOM_KEY_FILE, by default in the temporary folder), made once, readable by this user only."""

    def __init__(self, key: bytes) -> None:
        self.key = key

    @classmethod
    def of_this_app(cls) -> "RoomKeys":
        if os.environ.get("APP_ROOM_KEY"):
            return cls(os.environ["APP_ROOM_KEY"].encode("utf-8"))
        path = Path(os.environ.get("APP_ROOM_KEY_FILE")
                    or Path(tempfile.gettempdir()) / "transformer-rooms.key")
        # written whole, then linked into place: a process starting beside never reads half
        if not path.exists():
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".room-key-")
            with os.fdopen(fd, "w") as f:
                f.write(secrets.token_hex(32))
            try:
                os.link(tmp, path)
            except FileExistsError:
                pass
            finally:
                os.unlink(tmp)
        if path.stat().st_uid != os.getuid() or path.stat().st_mode & 0o077:
            raise RuntimeError(f"{path}: the room key must belong to this user and be readable by it alone")
        key = path.read_text().strip()
        if len(key) < 32:
            raise RuntimeError(f"{path}: the room key is too short")
        return cls(key.encode("utf-8"))

    def _sign(self, code: str, token: str) -> str:
        return hmac.new(self.key, f"{code.upper()}.{token}".encode("utf-8", "replace"),
                        hashlib.sha256).hexdigest()[:32]

    def new_secret(self, code: str) -> str:
        token = secrets.token_urlsafe(18)
        return f"{token}.{self._sign(code, token)}"

    def proves(self, code: str, secret) -> bool:
        """Was `secret` made by this app for the room `code`?"""
        token, _, sig = str(secret or "").rpartition(".")
        return bool(token) and hmac.compare_digest(sig.encode("utf-8", "replace"),
                                                   self._sign(str(code), token).encode())
