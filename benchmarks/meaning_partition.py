"""Held-out table of the `disclosure` meaning partition (docs/meaning-partition.md).

Every row is measured on material the model that reads it was not fitted on, with the shipped model's
C and cut (the fit script chose them by cross-validation on the training material; the retail set below
took no part in it):

- **airline, grouped by task**: the 73 labelled τ2-bench / τ-bench states (``../shared/datasets/
  tau2-real/states.jsonl``) in 5 folds that never share a task (a benchmark's task id); each fold's
  model is fitted on the other folds plus all constructed material;
- **airline, leave one source out**: fitted on the τ-bench (gpt-4o) states and checked on the τ2 (grok)
  ones, and the other way round;
- **constructed, leave one domain out**: the states and contrast / paraphrase pairs written for this
  project (``collapse_probe/data/meaning/``), each domain checked by a model fitted on the airline
  states and the other domains;
- **new domains (held out)**: ``collapse_probe/data/meaning/heldout/`` (states and contrast / paraphrase
  pairs written for this project in six domains no fit or rule saw), read by the shipped model;
- **retail (held out)**: ``../shared/datasets/tau2-real/retail/`` (gpt-4.1-mini, a source and domain no
  fit saw), read by the shipped model.

Beside the model: *exact* text and *rule-only* (one class iff two replies state the same items beyond
what the conversation said). Skips cleanly when ``../shared`` is absent.

    python benchmarks/meaning_partition.py [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "datasets" / "tau2-real"


def _rule(st) -> list[int]:  # noqa: ANN001
    reps, inverse = st.distinct()
    keys: dict[frozenset[str], int] = {}
    lab = [keys.setdefault(st.found[r] - st.known, len(keys)) for r in reps]
    return [lab[d] for d in inverse]


def _exact(st) -> list[int]:  # noqa: ANN001
    return st.distinct()[1]


def _rule_pair(p) -> bool:  # noqa: ANN001
    return bool(p.x[-1])  # the "same_items" feature: no item differs and no different choice


def benchmark_sources(states: list) -> list[str]:
    """The benchmarks the labelled states come from, as their split groups name them
    (``<benchmark>:<domain>:<task>``): one "source held out" row each."""
    return sorted({st.group.split(":", 1)[0] for st in states})


def airline_by_task(air: list, con: list, pairs: list, c: float, cut: float) -> dict[int, list[int]]:
    """Held-out labels of the benchmark states, 5 folds grouped by task, each fold's model fitted on
    the other folds and all constructed material."""
    from collapse_probe.metrics._service import _fit_lr, _predict, _splits

    held: dict[int, list[int]] = {}
    for a, b in _splits([st.group for st in air], 5):
        coef, icpt = _fit_lr([air[i] for i in a] + con, c, pairs)
        held.update(zip(b, _predict([air[i] for i in b], coef, icpt, cut), strict=True))
    return held


def material(shared: Path = SHARED) -> tuple[list, list, list]:
    """(benchmark states, constructed states, constructed pairs), as the fit script reads them."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "datasets" / "build"))
    from fit_service_partition import training_material

    from collapse_probe.metrics.partitioners import EmbeddingPartitioner

    states, pairs = training_material(shared / "states.jsonl", EmbeddingPartitioner().embed)
    air = [st for st in states if not st.group.startswith("constructed:")]
    con = [st for st in states if st.group.startswith("constructed:")]
    return air, con, pairs


def table(shared: Path = SHARED) -> dict:
    """The held-out rows (see the module docstring)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "datasets" / "build"))
    from fit_service_partition import read_jsonl

    from collapse_probe.core._resources import package_path
    from collapse_probe.metrics._service import (
        _fit_lr,
        _predict,
        _predict_pairs,
        evaluate,
        evaluate_pairs,
        labelled_pairs,
        labelled_states,
        load_service_model,
    )
    from collapse_probe.metrics.partitioners import EmbeddingPartitioner

    air, con, pairs = material(shared)
    shipped = load_service_model()
    c, cut = float(shipped.info.get("C") or 1.0), shipped.cut
    rows: list[dict] = []

    def state_rows(split: str, group: str, held: list, pred: list) -> None:
        truth = [st.labels for st in held]
        for name, p in (("exact", [_exact(st) for st in held]), ("rule-only", [_rule(st) for st in held]),
                        ("model", pred)):  # fmt: skip
            rows.append({"split": split, "group": group, "partition": name, **evaluate(p, truth)})

    held = airline_by_task(air, con, pairs, c, cut)
    by_sim: dict[str, list[int]] = {}
    for i, st in enumerate(air):
        by_sim.setdefault(st.simulator, []).append(i)
    state_rows("airline by task", "all", air, [held[i] for i in range(len(air))])
    for sim, idx in sorted(by_sim.items()):
        state_rows("airline by task", sim, [air[i] for i in idx], [held[i] for i in idx])
    # airline, leave one source out
    for bench in benchmark_sources(air):
        test = [st for st in air if st.group.startswith(bench + ":")]
        coef, icpt = _fit_lr([st for st in air if not st.group.startswith(bench + ":")] + con, c, pairs)
        state_rows("airline, source held out", bench, test, _predict(test, coef, icpt, cut))
    # constructed, leave one domain out
    domains = sorted({st.domain for st in con} | {p.domain for p in pairs})
    all_pred, all_test = [], []
    for d in domains:
        coef, icpt = _fit_lr(air + [st for st in con if st.domain != d], c, [p for p in pairs if p.domain != d])
        test = [st for st in con if st.domain == d]
        if test:
            pred = _predict(test, coef, icpt, cut)
            state_rows("constructed, domain held out", d, test, pred)
            all_pred += pred
            all_test += test
        held_pairs = [p for p in pairs if p.domain == d]
        for name, same in (("rule-only", [_rule_pair(p) for p in held_pairs]),
                           ("model", _predict_pairs(held_pairs, coef, icpt, cut))):  # fmt: skip
            rows.append({"split": "constructed pairs, domain held out", "group": d, "partition": name,
                         **evaluate_pairs(same, held_pairs)})  # fmt: skip
    if all_test:
        state_rows("constructed, domain held out", "all", all_test, all_pred)
    # the packaged held-out material: six domains no fit or rule saw
    heldout = package_path("data", "meaning", "heldout")
    if (heldout / "states.jsonl").is_file():
        test = labelled_states(read_jsonl(heldout / "states.jsonl", "held-out states"), EmbeddingPartitioner().embed)
        pred = _predict(test, shipped.coef, shipped.intercept, cut)
        state_rows("new domains (held out)", "all", test, pred)
        for d in sorted({st.domain for st in test}):
            idx = [i for i, st in enumerate(test) if st.domain == d]
            state_rows("new domains (held out)", d, [test[i] for i in idx], [pred[i] for i in idx])
        held_pairs = labelled_pairs(read_jsonl(heldout / "pairs.jsonl", "held-out pairs"), EmbeddingPartitioner().embed)
        same = _predict_pairs(held_pairs, shipped.coef, shipped.intercept, cut)
        for d in [*sorted({p.domain for p in held_pairs}), "all"]:
            idx = [i for i, p in enumerate(held_pairs) if d in ("all", p.domain)]
            for name, got in (
                ("rule-only", [_rule_pair(held_pairs[i]) for i in idx]),
                ("model", [same[i] for i in idx]),
            ):
                rows.append({"split": "new-domain pairs, held out", "group": d, "partition": name,
                             **evaluate_pairs(got, [held_pairs[i] for i in idx])})  # fmt: skip
    # retail, held out from every fit and choice
    retail = shared / "retail" / "states.jsonl"
    if retail.is_file():
        test = labelled_states(read_jsonl(retail, "retail states"), EmbeddingPartitioner().embed)
        state_rows("retail (held out)", "gpt-4.1-mini", test, _predict(test, shipped.coef, shipped.intercept, cut))
    return {"C": c, "cut": cut, "rows": rows}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    args = ap.parse_args()
    if not (SHARED / "states.jsonl").is_file():
        print(f"(no labelled states at {SHARED}: the meaning-partition table is skipped)")
        return 0
    out = table()
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    print(f"disclosure partition, held out (C = {out['C']:g}, cut = {out['cut']:g})")
    print(f"{'split':<36}{'group':<30}{'partition':<11}{'|Δε|':>7}{'ARI':>7}{'states':>8}")
    for r in out["rows"]:
        if "mean_abs_error" in r:
            print(f"{r['split']:<36}{r['group'][:29]:<30}{r['partition']:<11}{r['mean_abs_error']:>7.3f}"
                  f"{r['mean_ari']:>7.3f}{r['n_states']:>8}")  # fmt: skip
    print(f"\n{'pairs':<36}{'domain':<14}{'partition':<11}{'contrasts split':>17}{'paraphrases merged':>20}")
    for r in out["rows"]:
        if "contrasts_split" in r:
            cs = f"{r['contrasts_split']:.0%} of {r['n_contrasts']}"
            pm = f"{r['paraphrases_merged']:.0%} of {r['n_paraphrases']}"
            print(f"{r['split']:<36}{r['group']:<14}{r['partition']:<11}{cs:>17}{pm:>20}")

    return 0


if __name__ == "__main__":
    raise SystemExit(main())
