"""Retire pieces of a checkpoint's SentencePiece vocabulary: the encoder no longer cuts text into them.

    python3 tools/retire_pieces.py checkpoints/en-fr-base/tokenizer.model 0,000

The vocabulary keeps its size and ids (the model's embeddings are untouched, and a retired piece the model
writes still decodes); only how new text is cut changes. Why: the bundled vocabulary holds the piece "0,000",
so "20,000" was cut `▁2` `0,000` while "12,000" is `▁12` `,000`, and every model since cycle 6 wrote a whole
ten thousand with a zero lost ("20,000" → « 2 000 », "100,000" → « 10 000 »); with the piece retired,
"20,000" is `▁20` `,000`, the cut the model reads right. Marks the pieces UNUSED in the model's protobuf
(SentencePiece's own way of taking a piece out of segmentation), so it needs the `protobuf` package
(requirements-dev), which the app does not.
"""
from __future__ import annotations

import argparse
import sys

import sentencepiece as spm


def retire(model_path: str, pieces: list[str], out: str | None = None) -> list[str]:
    """Mark `pieces` UNUSED in the tokenizer at `model_path` (written to `out`, default in place); returns the
    pieces retired now (those already retired are skipped)."""
    from sentencepiece import sentencepiece_model_pb2 as pb

    proto = pb.ModelProto()
    with open(model_path, "rb") as f:
        proto.ParseFromString(f.read())
    by_text = {p.piece: p for p in proto.pieces}
    missing = [p for p in pieces if p not in by_text]
    if missing:
        raise SystemExit(f"not in the vocabulary: {missing}")
    done = []
    for text in pieces:
        piece = by_text[text]
        if piece.type == pb.ModelProto.SentencePiece.NORMAL:
            piece.type = pb.ModelProto.SentencePiece.UNUSED
            done.append(text)
        elif piece.type != pb.ModelProto.SentencePiece.UNUSED:
            raise SystemExit(f"{text!r} is not a normal piece (type {piece.type})")
    with open(out or model_path, "wb") as f:
        f.write(proto.SerializeToString())
    return done


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", help="a tokenizer.model (SentencePiece)")
    ap.add_argument("pieces", nargs="+", help="pieces to retire, as the vocabulary writes them")
    ap.add_argument("--out", help="write here instead of in place")
    ap.add_argument("--show", nargs="*", default=["20,000", "100,000", "12,000"],
                    help="texts whose cut is printed after")
    args = ap.parse_args(argv)
    done = retire(args.model, args.pieces, args.out)
    print(f"retired: {done or 'nothing (already retired)'}")
    sp = spm.SentencePieceProcessor(model_file=args.out or args.model)
    for text in args.show:
        print(f"{text!r} -> {sp.encode(text, out_type=str)}")


if __name__ == "__main__":
    sys.exit(main())
