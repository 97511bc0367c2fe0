"""Helpers the tests share with bench/ and tools/ (which import them from here, never the reverse):
starting the app on a free port (app.py) and driving it in Chromium (browser.py)."""
