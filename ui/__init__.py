"""Everything that imports gradio: the app's page, one module per tab, and the event wiring.

``demo.build_demo`` builds the page; ``app.py`` (the Space's entry point) loads the model and launches it.
Reading order: ``page.py`` (what every tab builds on), one tab in ``tabs/``, ``events.py`` (how a new
translation reaches the screen), ``demo.py`` (the whole page). Drawing lives in ``transformer/viz``
(no gradio); the model in ``transformer/``.
"""
