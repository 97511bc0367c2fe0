"""A Transformer (Vaswani et al., 2017, "Attention Is All You Need") that translates English to
French, written to be read next to the paper, and the pictures of what it does.

Follow one sentence through the files:

    text -> pieces        io/tokenizer.py (SentencePiece), translator.py (Translator.source: limits, cleaning)
    pieces -> encoder     model/transformer.py (Transformer.encode), model/layers.py (EncoderLayer),
                          model/attention.py (MultiHeadAttention, scaled_dot_product_attention),
                          positional.py (the sinusoidal encoding)
    decoder step          model/decoding.py (trace_greedy, greedy_decode), Transformer.decode, DecoderLayer
    -> trace              trace.py (TranslationTrace: every step and attention map, numpy only)
    -> figure             viz/views.py (what each view shows), viz/plots.py (Plotly), viz/report.py (HTML)

Groups: model/ (the network and decoding), io/ (tokenizer, checkpoint files), viz/ (analysis,
plots, views, report: no torch, no gradio), cli/ (command lines), training/ (train.py, data.py,
augment.py). config.py holds every size, special id and limit; the page (gradio) is the ui/ package
beside this one.
"""
