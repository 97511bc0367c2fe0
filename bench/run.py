"""Benchmarks, side by side with PyTorch's reference in one process: ``python bench/run.py``.

Prints a table (medians over repetitions after warm-up; candidates interleaved and ratios
computed within the same run, so they hold on a noisy machine) and saves bench/last_run.json.
Sections: greedy latency (ours with/without KV cache vs nn.Transformer full recompute),
trace overhead, batched throughput on the Tatoeba test split, the app (cold start,
end-to-end request, redraw, figure JSON size, memory), training tokens/s fp32 vs bf16.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import statistics
import sys
import time
import warnings

from toolkit import ROOT, interleaved  # noqa: E402  (the checkout, on sys.path: bench/toolkit.py)

# nn.Transformer's own fast path
warnings.filterwarnings("ignore", message="The PyTorch API of nested tensors")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

from transformer.config import PAD_ID, max_output_pieces  # noqa: E402
from transformer.training.data import SHARED_DATA  # noqa: E402
from transformer.model.decoding import greedy_decode, pad_batch  # noqa: E402
from transformer.serving.translator import Translator  # noqa: E402
from transformer.viz import views  # noqa: E402

# Our own sentences (not corpus lines), 5, 12 and 30 words.
SENTENCES = {
    "short (5 words)": "My brother likes green tea.",
    "medium (12 words)": "The old man walked slowly to the market to buy fresh bread.",
    "long (30 words)": ("When the rain finally stopped in the late afternoon, the children ran outside to "
                        "play in the garden while their parents prepared dinner and talked about the long "
                        "week ahead."),
    "very long (60 words)": ("When the rain finally stopped in the late afternoon, the children ran outside "
                             "to play in the garden while their parents prepared dinner and talked about the "
                             "long week ahead. Later that evening, their grandmother called to say that she "
                             "would arrive on Saturday with a large basket of apples from her farm, and "
                             "everyone was happy because they had not seen her since the summer."),
}


def median_ms(fn, reps: int, warmup: int = 2) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


# ------------------------------------------------------------------ reference: nn.Transformer
def reference_transformer(model) -> nn.Transformer:
    """PyTorch's nn.Transformer with the same sizes and our weights copied in (final stack norms removed,
    since the paper's post-norm layers end in their own LayerNorm)."""
    c = model.cfg
    ref = nn.Transformer(c.d_model, c.n_heads, c.n_encoder_layers, c.n_decoder_layers, c.d_ff, dropout=0.0,
                         batch_first=True).eval()
    ref.encoder.norm = None
    ref.decoder.norm = None

    def mha(ours, theirs):
        theirs.in_proj_weight.copy_(torch.cat([ours.w_q.weight, ours.w_k.weight, ours.w_v.weight]))
        theirs.in_proj_bias.copy_(torch.cat([ours.w_q.bias, ours.w_k.bias, ours.w_v.bias]))
        theirs.out_proj.weight.copy_(ours.w_o.weight)
        theirs.out_proj.bias.copy_(ours.w_o.bias)

    def ffn_norms(ours, theirs, n):
        theirs.linear1.load_state_dict(ours.feed_forward.w_1.state_dict())
        theirs.linear2.load_state_dict(ours.feed_forward.w_2.state_dict())
        for i in range(1, n + 1):
            getattr(theirs, f"norm{i}").load_state_dict(getattr(ours, f"norm{i}").state_dict())

    with torch.no_grad():
        for o, t in zip(model.encoder_layers, ref.encoder.layers):
            mha(o.self_attn, t.self_attn)
            ffn_norms(o, t, 2)
        for o, t in zip(model.decoder_layers, ref.decoder.layers):
            mha(o.self_attn, t.self_attn)
            mha(o.cross_attn, t.multihead_attn)
            ffn_norms(o, t, 3)
    return ref


@torch.inference_mode()
def reference_greedy(model, ref, src, max_new):
    """Greedy decoding with nn.Transformer: encode once, recompute the whole decoder every step."""
    c = model.cfg
    pad = src == c.pad_id
    memory = ref.encoder(model.embed(src), src_key_padding_mask=pad)
    ys = torch.full((src.size(0), 1), c.bos_id, dtype=torch.long)
    for _ in range(max_new):
        T = ys.size(1)
        mask = nn.Transformer.generate_square_subsequent_mask(T)
        h = ref.decoder(model.embed(ys), memory, tgt_mask=mask, tgt_is_causal=True,
                        memory_key_padding_mask=pad)
        nxt = model.output_logits(h[:, -1]).argmax(-1)
        ys = torch.cat([ys, nxt[:, None]], 1)
        if (nxt == c.eos_id).all():
            break
    out = ys[0, 1:].tolist()
    return out[: out.index(c.eos_id)] if c.eos_id in out else out


def bench_latency(tr: Translator, reps: int) -> list[dict]:
    model = tr.model
    ref = reference_transformer(model)
    rows = []
    for name, text in SENTENCES.items():
        src = pad_batch([tr.encode_source(text)[0]], PAD_ID)
        max_new = max_output_pieces(src.size(1), model.cfg.max_len)
        ours = greedy_decode(model, src, max_new)[0]
        same = (ours == greedy_decode(model, src, max_new, use_cache=False)[0]
                == reference_greedy(model, ref, src, max_new))
        t = interleaved({
            "cache": lambda: greedy_decode(model, src, max_new),
            "nocache": lambda: greedy_decode(model, src, max_new, use_cache=False),
            "reference": lambda: reference_greedy(model, ref, src, max_new),
            "trace": lambda: tr.trace(text),
        }, reps)
        rows.append(dict(sentence=name, src_pieces=src.size(1), out_pieces=len(ours) + 1, same_tokens=same,
                         cache_ms=t["cache"], nocache_ms=t["nocache"], reference_ms=t["reference"],
                         trace_ms=t["trace"], speedup_vs_reference=t["reference"] / t["cache"],
                         cache_vs_nocache=t["nocache"] / t["cache"], trace_overhead=t["trace"] / t["cache"]))
    return rows


def bench_throughput(tr: Translator, limit: int) -> dict:
    path = SHARED_DATA / "tatoeba-eng-fra" / "test.tsv.gz"
    if not path.exists():
        return dict(skipped=f"{path} not found")
    with gzip.open(path, "rt", encoding="utf-8") as f:
        src = [line.split("\t")[0] for line in f][: limit or None]
    tr.translate(src[:64])
    t0 = time.perf_counter()
    tr.translate(src)
    secs = time.perf_counter() - t0
    return dict(sentences=len(src), seconds=secs, sentences_per_s=len(src) / secs)


def bench_training(tr: Translator, steps: int) -> dict:
    """Tokens/s for one training step of the bundled model's size, fp32 vs bf16 autocast, interleaved."""
    cfg = tr.cfg
    from transformer.model.transformer import Transformer
    torch.manual_seed(0)
    model = Transformer(cfg).train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    B, S, T = 200, 12, 14    # about 5,000 padded tokens per side, like the real run's batches
    src = torch.randint(4, cfg.vocab_size, (B, S))
    tin = torch.randint(4, cfg.vocab_size, (B, T))
    tout = torch.randint(4, cfg.vocab_size, (B, T))
    ntok = B * (S + T)

    def step(dtype):
        def run():
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=dtype == "bf16"):
                logits = model(src, tin).logits
            loss = F.cross_entropy(logits.float().reshape(-1, cfg.vocab_size), tout.reshape(-1),
                                   label_smoothing=0.1)
            opt.zero_grad()
            loss.backward()
            opt.step()
        return run
    t = interleaved({"fp32": step("fp32"), "bf16": step("bf16")}, steps, warmup=1)
    return dict(tokens_per_step=ntok, fp32_tok_s=ntok / (t["fp32"] / 1000),
                bf16_tok_s=ntok / (t["bf16"] / 1000), bf16_speedup=t["fp32"] / t["bf16"])


def bench_app(reps: int, requests: int) -> dict:
    """Cold start, end-to-end requests via gradio_client, redraw, JSON size, memory."""
    from gradio_client import Client

    from bench.load_test import app_rss_mb
    from harness.app import start_app, stop_app
    t0 = time.perf_counter()
    proc, url = start_app()
    try:
        client = Client(url, verbose=False)
        client.predict(SENTENCES["medium (12 words)"], api_name="/translate")
        cold = time.perf_counter() - t0
        e2e = median_ms(lambda: client.predict(SENTENCES["medium (12 words)"], api_name="/translate"), reps)
        redraw = median_ms(lambda: client.predict(3, 3, "mean over heads", "Light", False, "Viridis",
                                                  api_name="/step_view"), reps)
        explorer = median_ms(lambda: client.predict("encoder", 2, "3", "head", "shared across heads", "Light",
                                                    False, "Viridis", api_name="/explorer"), reps)
        texts = ["I like tea.", "Where are you going tonight?", "The children are playing in the snow.",
                 "He bought a new car last week.", SENTENCES["long (30 words)"]]
        for i in range(requests):
            client.predict(texts[i % len(texts)], api_name="/translate")
            client.predict(2, 2, "1", "Light", False, "Viridis", api_name="/step_view")
        rss = (app_rss_mb(proc) or {}).get("rss", float("nan"))      # its decoding processes included
    finally:
        stop_app(proc)
    return dict(cold_start_s=cold, translate_e2e_ms=e2e, step_redraw_e2e_ms=redraw,
                explorer_redraw_e2e_ms=explorer, rss_mb_after=rss, requests=requests * 2)


def bench_redraw(tr: Translator, reps: int) -> list[dict]:
    """Server-side redraw time and figure JSON size per view, from a stored trace (no model run)."""
    trace = tr.trace(SENTENCES["long (30 words)"])
    lk = views.Look()
    cases = {
        "step view (top-k + cross bars)": lambda: views.step_view(trace, 5, 3, "mean over heads", lk)[1:],
        "explorer: one head": lambda: [views.explorer_figure(trace, "encoder", 2, "3", "head", True, lk)],
        "explorer: rollout": lambda: [views.explorer_figure(trace, "cross", 3, "mean", "rollout", True, lk)],
        "explorer: all-heads grid (encoder)": lambda: [views.grid_figure(trace, "encoder", True, lk)],
        "explorer: all-heads grid (cross)": lambda: [views.grid_figure(trace, "cross", True, lk)],
        "explorer: all-heads grid (decoder)": lambda: [views.grid_figure(trace, "decoder", True, lk)],
        "head summary": lambda: [views.summary_view(trace, "cross", lk)[0]],
        "positional encoding (3 figures)": lambda: list(
            views.positional_views(trace, tr.cfg.d_model, [0, 1, 8, 9], lk)),
        "inside one head (2 figures)": lambda: list(
            views.inside_view(trace, "decoder", 2, "4", 3, False, lk)[:2]),
    }
    rows = []
    for name, fn in cases.items():
        ms = median_ms(lambda: [f.to_json() for f in fn()], reps)
        size = sum(len(f.to_json()) for f in fn())
        rows.append(dict(view=name, redraw_ms=ms, json_kb=size / 1024))
    return rows


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (f"{cpu}, {os.cpu_count()} cores, torch {torch.__version__} ({torch.get_num_threads()} threads), "
            f"Python {platform.python_version()}, "
            f"{'CUDA ' + torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'no GPU'}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--reps", type=int, default=15)
    p.add_argument("--quick", action="store_true", help="fewer repetitions, a slice of the test set")
    p.add_argument("--skip-app", action="store_true")
    p.add_argument("--skip-training", action="store_true")
    p.add_argument("--only-latency", action="store_true",
                   help="sections 1-2 only (about 25 s); bench/last_run.json is left as it is")
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", type=int, default=1,
                   help="torch intra-op threads for the latency sections (the app's default is 1)")
    args = p.parse_args(argv)
    reps = 5 if args.quick else args.reps
    torch.set_num_threads(args.threads)
    tr = Translator(None, args.device, cache_size=0)     # time the model, not the trace cache
    out = {"machine": machine()}
    print(f"# Benchmarks\nmachine: {out['machine']}\n")

    out["latency"] = lat = bench_latency(tr, reps)
    print("## 1-2. Greedy translation latency, batch 1 (ms, median) and trace overhead")
    print(f"{'sentence':20} {'pieces in/out':>13} {'KV cache':>9} {'no cache':>9} {'nn.Transformer':>15} "
          f"{'ref/ours':>9} {'trace':>8} {'trace/plain':>11} same")
    for r in lat:
        print(f"{r['sentence']:20} {r['src_pieces']:>6}/{r['out_pieces']:<6} {r['cache_ms']:9.1f} "
              f"{r['nocache_ms']:9.1f} {r['reference_ms']:15.1f} {r['speedup_vs_reference']:8.2f}x "
              f"{r['trace_ms']:8.1f} {r['trace_overhead']:10.2f}x {r['same_tokens']}")

    if args.only_latency:
        return 0
    torch.set_num_threads(os.cpu_count() or 1)         # the CLI's batched path uses every core
    out["throughput"] = thr = bench_throughput(tr, 500 if args.quick else 0)
    torch.set_num_threads(args.threads)
    print(f"\n## 3. Batched throughput (Tatoeba test split, CLI batched path, {os.cpu_count()} threads)")
    print(json.dumps(thr) if "skipped" in thr else
          f"{thr['sentences']} sentences in {thr['seconds']:.1f} s = {thr['sentences_per_s']:.0f} "
          f"sentences/s")

    out["redraw"] = red = bench_redraw(tr, reps)
    print("\n## 4a. Redraw from the stored trace (server side, 30-word sentence) and figure JSON per view")
    for r in red:
        print(f"{r['view']:38} {r['redraw_ms']:8.1f} ms {r['json_kb']:8.1f} KB")
    if not args.skip_app:
        out["app"] = app = bench_app(reps, 25 if args.quick else 50)
        print("\n## 4b. App end to end (gradio_client on 127.0.0.1)")
        print(f"cold start (process start to first translation answered): {app['cold_start_s']:.1f} s")
        print(f"Translate request, 12 words: {app['translate_e2e_ms']:.0f} ms; step-slider redraw: "
              f"{app['step_redraw_e2e_ms']:.0f} ms; explorer redraw: {app['explorer_redraw_e2e_ms']:.0f} ms")
        print(f"resident memory (decoding processes included) after {app['requests'] + 3 * reps} requests: "
              f"{app['rss_mb_after']:.0f} MB")
    if not args.skip_training:
        torch.set_num_threads(os.cpu_count() or 1)     # training uses every core
        out["training"] = trn = bench_training(tr, 3 if args.quick else 6)
        print("\n## 5. Training throughput (one step, bundled model size, ~5k tokens per side)")
        print(f"fp32 {trn['fp32_tok_s']:,.0f} tokens/s, bf16 autocast {trn['bf16_tok_s']:,.0f} tokens/s "
              f"({trn['bf16_speedup']:.2f}x)")
    (ROOT / "bench" / "last_run.json").write_text(json.dumps(out, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
