"""The guided tour: a first-time visitor (or a presenter, in front of the room) walks through the sentence on
screen, from its pieces to the next French piece, one highlighted part of the page at a time.

Each stop names the tab it opens (by its title, ``ui.tabs.TABS``), the element it highlights (a CSS selector
of the page) and, optionally, a button it presses first; ``ui/static/tour.js`` plays them.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Optional


@dataclass(frozen=True)
class Stop:
    title: str
    text: str
    target: str                    # CSS selector of the part highlighted
    tab: Optional[str] = None      # tab title opened first
    press: Optional[str] = None    # elem_id of a button pressed first (e.g. the next decoding step)


TOUR = (
    Stop("One sentence, all the way through",
         "This tour follows the sentence in the box through the Transformer: how it is cut into pieces, how "
         "each piece learns where it stands and what it relates to, and how the decoder picks each French "
         "piece. Type your own sentence at any time; the tour follows whatever is on screen.", "#src-text"),
    Stop("1. Pieces",
         "The model never sees words: a tokenizer cuts the sentence into pieces from a fixed vocabulary "
         "(▁ marks the start of a word). Rare words become several pieces. Each piece becomes a vector of "
         "{d_model} numbers, its embedding.", "#pieces"),
    Stop("2. Where each piece stands",
         "Attention by itself ignores word order, so a positional encoding is added to each embedding: sines "
         "and cosines of the position at many frequencies. Each row is one position; the input's rows are "
         "outlined.",
         "#pe-heatmap", tab="Positional encoding"),
    Stop("3. Pieces looking at pieces",
         "In the encoder, every piece asks every other piece how relevant it is: one row per query piece, "
         "one column per key, each row sums to 1. This is one head of one layer.", "#explorer-plot",
         tab="Attention explorer"),
    Stop("4. Many heads, many layers",
         "Each layer has {n_heads} heads that look for different things (the previous piece, the next one, "
         "the end of the sentence...); {n_encoder_layers} encoder layers are stacked. Each small map is one "
         "head.", "#grid-plot",
         tab="Attention explorer"),
    Stop("5. Inside one head",
         "How one map is computed: a query vector times every key vector gives scores (QKᵀ), divided by √d_k "
         "so that the softmax does not saturate, future pieces masked in the decoder, then a softmax turns "
         "each row into weights.", "#inside-plot", tab="Inside one head"),
    Stop("6. The decoder starts",
         "Now the French. The decoder starts from <s> and writes one piece at a time, each time reading all "
         "it has written so far.", "#step-info", tab="Step by step"),
    Stop("7. Choosing the next piece",
         "At each step the model gives a probability to every piece of its vocabulary; greedy decoding takes "
         "the most probable one.", "#topk-plot", tab="Step by step"),
    Stop("8. Looking back at the English",
         "Cross-attention: to choose this piece, the decoder looked at these English pieces. This is where "
         "translation happens.", "#cross-step-plot", tab="Step by step"),
    Stop("9. The next step",
         "The chosen piece is appended to the decoder's input and the model runs again. Press Next (or →) to "
         "go on yourself.", "#step-info", tab="Step by step", press="next-step"),
    Stop("10. The alignment grows",
         "Step after step, the cross-attention traces an alignment between the two sentences: mostly "
         "diagonal, bending where French orders words differently.", "#cross-steps-plot", tab="Step by step"),
    Stop("Where next",
         "Head summary ranks the heads worth a look; Why this word asks whether attention explains a choice; "
         "Your French & beams lets you score your own translation. Start again from the ? Tour button.",
         "#tabs [role=tablist]"),
)


def tour_json(cfg) -> str:
    """The stops, their texts filled with the model's sizes (``{d_model}``, ``{n_heads}``...), as a JSON
    array."""
    sizes = {k: getattr(cfg, k) for k in ("d_model", "n_heads", "n_encoder_layers", "n_decoder_layers")}
    stops = [{**asdict(s), "text": s.text.format(**sizes)} for s in TOUR]
    return json.dumps(stops)   # ASCII: safe inside a script
