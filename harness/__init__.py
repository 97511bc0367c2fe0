"""What drives the app from outside, shared by tests/, bench/ and tools/ (none of them imports another):
starting app.py on a free port (app.py), a page driven over Gradio's HTTP protocol (gradio_page.py), the steps
a browser takes in Debian's Chromium (browser.py), and a throwaway redis-server (redis_server.py). The product
never imports it."""
