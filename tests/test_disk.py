"""Files made for users do not pile up: our report files and Gradio's cached copies are deleted."""
from __future__ import annotations

import asyncio
import os
import time

from ui.settings import APP_CACHE_CLEAN_S
from ui import reports
from harness.app import start_app, stop_app


def test_prune_old_removes_only_old_entries(tmp_path):
    old, new = tmp_path / "old-report", tmp_path / "new.html"
    old.mkdir()
    (old / "transformer-trace.html").write_text("x")
    new.write_text("y")
    os.utime(old, (time.time() - 500, time.time() - 500))
    assert reports.prune_old(tmp_path, 100) == 1
    assert not old.exists() and new.exists()


def test_report_folder_prunes_before_each_report(tmp_path, monkeypatch):
    monkeypatch.setenv("APP_REPORT_DIR", str(tmp_path))
    monkeypatch.setenv("APP_REPORT_KEEP_S", "10")
    stale = tmp_path / "trace-report-x"
    stale.mkdir()
    os.utime(stale, (time.time() - 60, time.time() - 60))
    assert reports.report_folder() == tmp_path and not stale.exists()


def test_delete_cache_setting(monkeypatch):
    monkeypatch.delenv("APP_DELETE_CACHE", raising=False)
    assert reports.delete_cache_setting() == APP_CACHE_CLEAN_S
    monkeypatch.setenv("APP_DELETE_CACHE", "2,3")
    assert reports.delete_cache_setting() == (2, 3)


def test_reports_and_gradio_copies_are_deleted_by_the_running_app(tmp_path, bundled_checkpoint):
    """A user builds reports through the page; a few seconds later no file is left (short settings)."""
    import httpx
    from harness.gradio_page import AppConfig, Page
    reports, cache = tmp_path / "reports", tmp_path / "gradio"
    env = {"APP_REPORT_DIR": str(reports), "APP_REPORT_KEEP_S": "3", "APP_DELETE_CACHE": "1,2",
           "GRADIO_TEMP_DIR": str(cache)}
    proc, url = start_app(env=env)

    def files(folder):
        return [p for p in folder.rglob("*") if p.is_file()] if folder.exists() else []

    async def build_reports(n: int):
        async with httpx.AsyncClient(timeout=120) as http:
            app = AppConfig((await http.get(url + "config")).json())
            page = Page(http, url, app)
            await page.open()
            page.values[app.find(elem_id="src-text")] = "The cat is sleeping on the sofa."
            await page.fire(app.find(elem_id="translate-btn"), "click")
            for i in range(n):
                if i:
                    await asyncio.sleep(3.2)      # the reports before this one are older than the 3 s kept
                await page.fire(app.find(elem_id="report-btn"), "click")
            return page.values[app.find(elem_id="report-file")]
    try:
        got = asyncio.run(build_reports(3))
        name = "transformer-trace-the-cat-is-sleeping-on-the-sofa.html"             # named after the sentence
        assert got and name in str(got)
        made = files(reports) + files(cache)
        assert any(p.name == name for p in files(cache))                          # Gradio's copy exists
        # ours: pruned at each report
        assert len([p for p in files(reports)]) <= 2
        deadline = time.time() + 20
        while time.time() < deadline and any(p.name.endswith(".html") for p in files(cache)):
            time.sleep(0.5)
        assert not any(p.name.endswith(".html") for p in files(cache)), made
    finally:
        stop_app(proc)
