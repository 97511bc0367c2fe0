"""HTML report files: where they are written, and their cleanup (a day of lectures cannot fill the disk).
"""
from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from .page import log
from .settings import APP_CACHE_CLEAN_S, APP_REPORT_KEEP_S


def report_folder() -> Path:
    """Where HTML reports are written. Gradio copies each one into its cache when it is returned (and
    deletes the copies on the ``delete_cache`` schedule), so ours are deleted here, before every new
    report, once older than APP_REPORT_KEEP_S: a day of lectures cannot fill the disk."""
    env = os.environ.get
    folder = Path(env("APP_REPORT_DIR") or Path(tempfile.gettempdir()) / "transformer-reports")
    folder.mkdir(parents=True, exist_ok=True)
    prune_old(folder, float(env("APP_REPORT_KEEP_S", APP_REPORT_KEEP_S)))
    return folder


def sweep_reports(every_s: float) -> None:
    """Prune the report folder every `every_s` seconds too, so the last reports of a day go as well."""
    import threading

    def sweep():
        while True:
            time.sleep(every_s)
            try:
                report_folder()
            except OSError:
                log.exception("report sweep failed")
    threading.Thread(target=sweep, name="report-sweep", daemon=True).start()


def delete_cache_setting() -> tuple[int, int]:
    """Gradio's delete_cache (frequency, age) in seconds: APP_CACHE_CLEAN_S, or APP_DELETE_CACHE="f,a"."""
    value = os.environ.get("APP_DELETE_CACHE")
    return tuple(int(v) for v in value.split(",")) if value else APP_CACHE_CLEAN_S


def prune_old(folder: Path, max_age_s: float) -> int:
    """Delete the entries of `folder` last changed more than `max_age_s` ago; returns how many."""
    import shutil
    cutoff, removed = time.time() - max_age_s, 0
    for entry in folder.iterdir():
        try:
            if entry.stat().st_mtime < cutoff:
                shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
                removed += 1
        except OSError:   # another request removed it first
            pass
    return removed
