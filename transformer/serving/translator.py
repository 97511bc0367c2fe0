"""A loaded model: translate many sentences (batched), or trace one for the app.

Glues the model (``model/``), its files (``io/``) and the trace (``trace.py``): text is
cleaned and cut to the limits (``config.py``), cut into pieces by the tokenizer, and decoded.
"""
from __future__ import annotations

import dataclasses
import logging
import threading
import unicodedata
from pathlib import Path
from typing import Optional, Sequence

from .. import doubt, params
from .batcher import MicroBatcher
from .resources import intra_op_threads, release_freed_memory, releasing
from ..config import (ATTRIBUTION_MAX_PIECES, BATCH_TOKENS, BEAM_ALPHA, BEAM_MAX, MAX_FORCED_PIECES,
                      MAX_INPUT_CHARS, TOP_K, TRACE_DEADLINE_S)
from ..io.checkpoint import checkpoint_identity, load_checkpoint, load_piece_counts, resolve_device
from ..pieces import UNK_PIECE, WORD_MARKER
from ..probes import attention_forms
from ..probes.attribution import attribute
from ..probes.inside_layer import layer_parts
from ..probes.knockout import head_importance, knock_out
from ..probes.patching import patching
from ..probes.lens import logit_lens
from ..probes.vectors import head_vectors, input_parts, layer_inputs
from .decode_process import DecodeProcesses, trace_items
from ..model.decoding import cut_source, output_limit, source_limit, trace_greedy, translate_batch
from ..model.optimize import optimize_for_inference
from ..model.steering import beam_search, branch, forced_pass
from ..model.transformer import causal_mask
from ..causal import METHODS as KNOCKOUT_METHODS, HeadImportance, KnockOut, KnockOutResult, PatchMap
from ..steering import BeamResult, ForcedResult
from ..trace import Source, TranslationTrace
from ..why import METHODS, Attribution, HeadVectors, InputParts, LayerParts, Lens
from .trace_cache import TRACE_CACHE_SIZE, TraceCache, TraceKey

log = logging.getLogger(__name__)

ATTRIBUTION_CACHE_SIZE = 32   # attributions kept (a room asking for the lecturer's sentence: one computation)
ATTRIBUTION_CACHE_BYTES = 64 * 2**20   # ...and at most this many bytes of them
MAX_BATCH = 16          # concurrent requests decoded together in one batch, at most
# extra wait for more requests before a batch starts (0: take only those already waiting)
BATCH_WINDOW_S = 0.0


def clean_text(text: str) -> str:
    """Drop control characters and lone surrogates, collapse whitespace."""
    text = text.encode("utf-8", "replace").decode("utf-8")  # lone surrogates -> '?'
    text = "".join(" " if unicodedata.category(c) in ("Cc", "Zl", "Zp") else c
                   for c in text if unicodedata.category(c) not in ("Cf", "Cs", "Co", "Cn") or c == "\u200d")
    return " ".join(text.split())


class Translator:
    """A loaded model and tokenizer on one device, prepared for inference (``optimize_for_inference``).
    The model is read-only after loading: safe to share between threads, since every call keeps its
    state in local variables. ``trace`` keeps finished traces in a bounded cache (``trace_cache.py``;
    ``cache_size=0`` turns it off) and, with ``batch_workers`` > 0, decodes concurrent requests
    together (``batcher.py``)."""

    def __init__(self, checkpoint: Optional[str | Path] = None, device: str = "auto",
                 cache_size: int = TRACE_CACHE_SIZE, batch_workers: int = 0, max_batch: int = MAX_BATCH,
                 batch_window_s: float = BATCH_WINDOW_S, attribution_threads: Optional[int] = None,
                 decode_processes: int = 0, decode_threads: int = 1) -> None:
        """`attribution_threads`: intra-op threads for an attribution's passes (None: the process's setting).
        `decode_processes` (with `batch_workers`): the batcher's batches are decoded in that many processes of
        their own, `decode_threads` torch threads each (``decode_process.py``), instead of in this one."""
        self.device = resolve_device(device)
        self.attribution_threads = attribution_threads
        # One attribution computes at a time (its passes take every core and a bounded chunk of memory);
        # requests for one already computed, or being computed, do not wait for this: the cache answers them.
        self._computing = threading.Lock()
        model, self.tokenizer = load_checkpoint(checkpoint, self.device)
        self.model = optimize_for_inference(model)
        self.cfg = self.model.cfg
        # Longest source in pieces (EOS included), leaving room for positions on the target side.
        self.max_src_tokens = source_limit(self.model)
        counts = load_piece_counts(checkpoint)
        fits = bool(counts) and len(counts["source"]) == len(counts.get("target", ())) == self.cfg.vocab_size
        self.source_counts = counts["source"] if fits else None
        self.french_ratio = doubt.french_log_ratio(counts["source"], counts["target"]) if fits else None
        self.checkpoint_id = checkpoint_identity(checkpoint, self.device)
        self.cache = TraceCache(cache_size, keep=lambda t: not t.timed_out,
                                after_evictions=release_freed_memory) if cache_size > 0 else None
        self.attributions = TraceCache(ATTRIBUTION_CACHE_SIZE, frozen=lambda a: a,
                                       maxbytes=ATTRIBUTION_CACHE_BYTES) if cache_size > 0 else None
        self.batcher = (MicroBatcher(self._trace_batch, max_batch, batch_workers, batch_window_s, "trace")
                        if batch_workers > 0 else None)
        self.decoders = self._start_decoders(checkpoint, decode_processes if self.batcher else 0,
                                             batch_workers, decode_threads)

    def _start_decoders(self, checkpoint, processes: int, workers: int,
                        threads: int) -> Optional[DecodeProcesses]:
        """The decoding processes, or None (decode here): none asked for, a GPU (each process would hold a
        CUDA context and a copy of the model, and they would take turns on the one GPU), or they failed to
        start (said in the log; the app still serves). No more processes than batcher workers: one
        would sit idle."""
        if processes <= 0 or self.device.type != "cpu":
            return None
        try:
            return DecodeProcesses(checkpoint, str(self.device), min(processes, workers), threads,
                                   self.checkpoint_id)
        except Exception:  # noqa: BLE001
            log.exception("the decoding processes did not start; decoding in the app's process")
            return None

    def encode_source(self, text: str) -> tuple[list[int], bool]:
        """Source ids ending in EOS, cut to the model's limit; and whether they were cut."""
        ids = self.tokenizer.encode(text)
        return cut_source(ids, self.cfg.eos_id, self.max_src_tokens)

    def translate(self, sentences: Sequence[str], batch_tokens: int = BATCH_TOKENS,
                  use_cache: bool = True) -> list[str]:
        """Batched greedy translation, sorted by length for speed, returned in input order."""
        texts = [clean_text(s) for s in sentences]
        texts = [doubt.ordinary_case(t) for t in texts]                # as source() does
        out = translate_batch(self.model, self.tokenizer, texts, batch_tokens, self.max_src_tokens, use_cache)
        return [o if t else "" for o, t in zip(out, texts)]

    def source(self, text: str) -> Source:
        """Text to pieces: cleaned, cut to the limits, tokenized, with notes for the user.

        Raises ValueError with a message for the user when there is nothing to translate."""
        notes = []
        if text is not None and not isinstance(text, str):
            raise ValueError(f"The English sentence must be text, not {type(text).__name__} "
                             f"{params.shown(text)}.")
        text = text or ""
        if len(text) > MAX_INPUT_CHARS:
            text = text[:MAX_INPUT_CHARS]
            notes.append(f"The input was cut to its first {MAX_INPUT_CHARS} characters.")
        text = clean_text(text)
        if not text:
            raise ValueError("There is nothing to translate: type an English sentence.")
        if doubt.ordinary_case(text) != text:
            text = doubt.ordinary_case(text)
            notes.append(f"Your text is mostly in capitals, which the model rarely saw in training: it "
                         f"translated it in ordinary case (“{text[:80]}{'…' if len(text) > 80 else ''}”).")
        ids, truncated = self.encode_source(text)
        if truncated:
            notes.append(f"The input is longer than the model's limit of {self.max_src_tokens - 1} pieces; "
                         f"only the first {self.max_src_tokens - 1} were translated.")
        pieces = self.tokenizer.pieces(ids)
        counts = tuple(int(self.source_counts[i]) for i in ids) if self.source_counts else ()
        if self.tokenizer.unk_id in ids and all(p in (WORD_MARKER, UNK_PIECE) for p in pieces[:-1]):
            notes.append("None of these characters are in the model's vocabulary (it knows English and "
                         "French text); they all became <unk>.")
        else:
            notes += doubt.input_doubts(text, ids[:-1], pieces[:-1], counts[:-1] or None, self.french_ratio)
        return Source(text, ids, pieces, truncated, tuple(notes), counts)

    def trace(self, text: str, top_k: int = TOP_K, max_new_tokens: Optional[int] = None,
              deadline_s: float = TRACE_DEADLINE_S) -> TranslationTrace:
        """Translate one sentence and record every step and attention map (see trace.py). The trace
        is shared with every caller of the same cleaned text and settings: never change it."""
        source = self.source(text)
        settings = dict(top_k=top_k, max_new_tokens=max_new_tokens, deadline_s=deadline_s)
        make = lambda: self._decode(source, settings)
        if self.cache is None:
            return make()
        trace = self.cache.get(TraceKey.of(source.text, self.checkpoint_id, **settings), make)
        # The same model input can come with other notes (e.g. "the input was cut"): this caller's own.
        return trace if trace.source == source else dataclasses.replace(trace, source=source)

    def _decode(self, source: Source, settings: dict) -> TranslationTrace:
        if self.batcher is None:
            return trace_greedy(self.model, self.tokenizer, source, **settings)
        out = self.batcher.submit((source, tuple(sorted(settings.items()))))
        if isinstance(out, Exception):
            raise out
        return out

    def _trace_batch(self, items: Sequence[tuple[Source, tuple]]) -> list:
        """The batcher's work: items with the same settings decoded in one batch (``trace_items``), in a
        decoding process when there are some, else here."""
        if self.decoders is not None:
            return self.decoders.trace_batch(items)
        return trace_items(self.model, self.tokenizer, items)

    # --- steering the decoder (model/steering.py): each raises ValueError with a message for the user
    def french_ids(self, french: str) -> tuple[list[int], tuple[str, ...]]:
        """Your French as piece ids ending in </s>, within the limits; and notes for the user."""
        if len(french or "") > MAX_INPUT_CHARS:
            raise ValueError(f"The French text is longer than the limit of {MAX_INPUT_CHARS} characters.")
        text = clean_text(french or "")
        if not text:
            raise ValueError("Type a French sentence for the model to read.")
        ids = self.tokenizer.encode(text) + [self.cfg.eos_id]
        limit = min(MAX_FORCED_PIECES, self.cfg.max_len)
        if len(ids) > limit:
            raise ValueError(f"The French text has {len(ids)} pieces with </s>; the limit is {limit}. "
                             f"Shorten it.")
        notes = ("Some characters of the French are not in the model's vocabulary: they became <unk>.",) \
            if self.tokenizer.unk_id in ids else ()
        return ids, notes

    def forced(self, text: str, french: str, top_k: int = TOP_K) -> ForcedResult:
        """Teacher forcing: how probable the model finds your French translation of `text`, piece by piece."""
        source = self.source(text)
        ids, notes = self.french_ids(french)
        return forced_pass(self.model, self.tokenizer, source, ids, top_k, source.notes + notes)

    def piece_id(self, piece: str) -> int:
        piece = params.text(piece, "piece").strip()
        found = self.tokenizer.piece_id(piece) if piece else None
        if found is None:
            raise ValueError(f"{str(piece)[:40]!r} is not a piece of the model's vocabulary. Pick one of the "
                             "candidates, or type a piece as the step view shows it (e.g. ▁chat).")
        return found

    def what_if(self, text: str, step: int, piece: str, prefix: Sequence[int] = (), top_k: int = TOP_K,
                deadline_s: float = TRACE_DEADLINE_S) -> TranslationTrace:
        """Decoding where step `step` (1-based) takes `piece` instead, after `prefix` (default: the model's
        greedy choices); greedy again after it."""
        step = params.whole_number(step, "step", 1, self.cfg.max_len)
        token = self.piece_id(piece)
        if prefix and step > len(prefix):
            raise ValueError(f"There is no step {step}: this translation has {len(prefix)} steps.")
        return branch(self.model, self.tokenizer, self.source(text), step - 1, token, prefix, top_k,
                      deadline_s)

    def attribution(self, text: str, method: str = "both", step: Optional[int] = None,
                    rival: str = "", progress=None,
                    estimate=None) -> tuple[TranslationTrace, list[Attribution]]:
        """The greedy trace of `text` and its attribution by `method` (integrated_gradients, gradient_x_input
        or both): of every target piece's probability, or with `step` (1-based) and `rival` (a piece, "▁"
        optional) of log p(chosen) − log p(rival) at that step. Kept and shared like traces: computed once for
        everyone asking for the same sentence at the same time. `progress(done, total, what)`: how far the
        computation has got (probes/attribution.py), told only to the caller that runs it; so is
        `estimate(attributions)`, the methods' results so far while Integrated Gradients refines (gradient ×
        input, one point, comes first)."""
        if method not in (*METHODS, "both"):
            raise ValueError(f"Unknown method {method!r}: use integrated_gradients, gradient_x_input or "
                             f"both.")
        trace = self.limited_trace(text, "Attribution is")
        rival_id = None
        if step is not None:
            step, rival_id = self.contrast_step(trace, step), self.rival_id(rival)
            if rival_id == trace.tgt_ids[step - 1]:
                raise ValueError(f"«{rival}» is the piece the model chose at step {step}: pick a rival.")
        methods = METHODS if method == "both" else (method,)
        done: dict = {}
        for m in sorted(methods, key=lambda m: m == "integrated_gradients"):   # the one-point method first
            told = None if estimate is None else (
                lambda a: estimate([a if k == "integrated_gradients" else done[k] for k in methods
                                    if k in done
                                    or k == "integrated_gradients"]))
            def make(m=m, told=told):   # (the passes' memory handed back after: a cache hit computes nothing)
                threads = self.attribution_threads if self.device.type == "cpu" else None
                with releasing(), self._computing, intra_op_threads(threads):
                    return attribute(self.model, trace.source.ids, trace.tgt_ids, m, trace.src_pieces,
                                     trace.tgt_pieces, step=step, rival_id=rival_id,
                                     rival_piece=self.tokenizer.pieces([rival_id])[0] if rival_id else "",
                                     progress=progress, estimate=told)
            key = TraceKey.of(trace.source.text, self.checkpoint_id, method=m, step=step, rival=rival_id)
            done[m] = make() if self.attributions is None else self.attributions.get(key, make)
        return trace, [done[m] for m in methods]

    @staticmethod
    def contrast_step(trace: TranslationTrace, step) -> int:
        step = params.whole_number(step, "step", 1, 10**6)
        if step > len(trace.steps):
            raise ValueError(f"There is no step {step}: this translation has {len(trace.steps)} steps.")
        return step

    def rival_id(self, rival: str) -> int:
        """A rival piece as the step view shows it (▁la) or as a word (la)."""
        text = params.text(rival, "rival piece").strip()
        if not text:
            raise ValueError("Pick a rival piece: one of the step's candidates, or type one (e.g. ▁la).")
        for piece in (text, WORD_MARKER + text):
            found = self.tokenizer.piece_id(piece)
            if found is not None:
                return found
        return self.piece_id(text)          # its message: not a piece of the vocabulary

    def beam(self, text: str, beam: int, alpha: float = BEAM_ALPHA,
             deadline_s: float = TRACE_DEADLINE_S) -> BeamResult:
        """Beam search of width `beam` (1 = greedy) for one sentence."""
        beam = params.whole_number(beam, "beam width", 1, BEAM_MAX)
        return beam_search(self.model, self.tokenizer, self.source(text), beam, alpha, deadline_s=deadline_s)

    def translate_beam(self, sentences: Sequence[str], beam: int, alpha: float = BEAM_ALPHA) -> list[str]:
        """Beam search for many sentences, one at a time (the CLI's and evaluate's ``--beam N``)."""
        out = []
        for s in sentences:
            text = clean_text(s[:MAX_INPUT_CHARS])
            out.append(self.beam(text, beam, alpha, deadline_s=None).translation if text else "")
        return out

    # ---------------------------------------------------------------- the probes, for the views: the page
    # reaches the model only through these (tests/test_imports.py), so a view never holds the model itself
    def num_parameters(self) -> int:
        return self.model.num_parameters()

    def positional_table(self):
        """The positional encodings the model adds (sinusoidal, or learned), as a (positions, d_model)
        array."""
        return self.model.positional.pe.detach().float().cpu().numpy()

    def decoder_input(self, trace: TranslationTrace) -> list[int]:
        """<s> y1 ... y_{n-1}: what the decoder read while it wrote the trace's translation."""
        return [self.cfg.bos_id, *trace.tgt_ids[:-1]]

    def logit_lens(self, trace: TranslationTrace) -> Lens:
        return logit_lens(self.model, trace.source.ids, trace.tgt_ids, self.tokenizer.pieces)

    def head_vectors(self, trace: TranslationTrace, kind: str, layer: int, head: int, queries,
                     keys) -> HeadVectors:
        return head_vectors(self.model, trace.source.ids, self.decoder_input(trace), kind, layer, head,
                            queries, keys)

    def input_parts(self, trace: TranslationTrace) -> InputParts:
        return input_parts(self.model, trace.source.ids, trace.src_pieces)

    def layer_parts(self, trace: TranslationTrace, stack: str, layer: int, position: int,
                    labels) -> LayerParts:
        return layer_parts(self.model, trace.source.ids, self.decoder_input(trace), stack, layer, position,
                           labels)

    def attention_forms(self, trace: TranslationTrace, kind: str, layer: int,
                        repeats: int = 15) -> tuple[dict, int]:
        """The three ways to compute one attention sub-layer on this trace's inputs to it, timed: their
        results (``probes.attention_forms.compare``) and the number of queries."""
        import torch
        src, tgt_in = torch.tensor([trace.source.ids]), torch.tensor([self.decoder_input(trace)])
        with torch.inference_mode():
            mha, q_in, kv_in = layer_inputs(self.model, src, tgt_in, kind, layer)
        mask = causal_mask(q_in.size(1), q_in.size(1)) if kind == "decoder" else None
        return attention_forms.compare(mha, q_in, kv_in, mask, repeats=repeats), q_in.size(1)

    # --- causal experiments (probes/knockout.py, probes/patching.py): each raises ValueError with a message
    def limited_trace(self, text: str, what: str = "Knock-outs and patching are") -> TranslationTrace:
        """The greedy trace a computation on request runs on, within the limit that bounds its time and
        memory."""
        trace = self.trace(text)
        if (longest := max(len(trace.src_pieces), len(trace.tgt_pieces))) > ATTRIBUTION_MAX_PIECES:
            raise ValueError(f"{what} limited to {ATTRIBUTION_MAX_PIECES} pieces on either side (this "
                             f"sentence has {longest}): try a shorter sentence.")
        return trace

    def knock_out(self, text: str, ko: KnockOut) -> KnockOutResult:
        """`text` translated again with the parts `ko` names switched off, and its original translation read
        through the knocked-out model."""
        trace = self.limited_trace(text)
        limit = output_limit(self.model, len(trace.source.ids), None)
        with releasing():
            return knock_out(self.model, trace.source.ids, trace.tgt_ids, ko, limit, self.tokenizer.pieces,
                             self.tokenizer.decode)

    def head_importance(self, text: str, method: str = "zero") -> HeadImportance:
        """Every head of `text`'s run knocked out alone: how each piece of its translation's log-probability
        moves."""
        if method not in KNOCKOUT_METHODS:
            raise ValueError(f"Unknown knock-out method {str(method)[:20]!r}: use zero or mean.")
        trace = self.limited_trace(text)
        with releasing():
            return head_importance(self.model, trace.source.ids, trace.tgt_ids, method, trace.tgt_pieces)

    def patching(self, text_a: str, text_b: str, step: Optional[int] = None,
                 piece: Optional[str] = "") -> PatchMap:
        """`text_a`'s run with parts of `text_b`'s copied in, read at `step` (1-based; default: the first step
        whose piece the two translations do not share) for `piece` (default: text_a's piece there)."""
        a, b = self.limited_trace(text_a), self.limited_trace(text_b)
        if step in (None, "", 0):
            step = next((i for i, (x, y) in enumerate(zip(a.tgt_ids, b.tgt_ids), 1) if x != y), None)
            if step is None:
                raise ValueError("The two sentences translate the same way: pick the step to read (and a "
                                 "piece).")
        step = params.whole_number(step, "step", 1, len(a.tgt_ids))
        token = a.tgt_ids[step - 1] if piece is None or piece == "" else self.piece_id(piece)
        with releasing():
            return patching(self.model, a.source.ids, b.source.ids, a.tgt_ids, step, token,
                            (a.source.text, b.source.text), a.src_pieces, b.src_pieces, a.tgt_pieces,
                            self.tokenizer.pieces([token])[0])
