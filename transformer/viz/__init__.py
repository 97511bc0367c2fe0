"""The pictures: numbers from attention maps, Plotly figures, the app's views and the HTML report.

Reads a TranslationTrace (transformer/trace.py); imports neither torch nor gradio."""
