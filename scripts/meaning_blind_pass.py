"""Blind labelling passes over the meaning material, and the agreement between passes.

The shipped material (``collapse_probe/data/meaning/``) carries three labellings: ``labels`` /
``kind``, a blind second pass ``labels_second`` / ``kind_second`` and a third pass by an annotator
who had not seen the others, ``labels_third`` / ``kind_third``. This script reproduces the agreement
table of its README (every pass against every earlier one), scores a partitioner against the first
labels the same way (``--partition``, e.g. ``disclosure`` or ``exact``), and runs a further blind pass
(an independent annotator, a judge):

    python scripts/meaning_blind_pass.py agreement [--dir DIR] [--partition NAME]
    python scripts/meaning_blind_pass.py print --out WORKDIR [--dir DIR] [--seed N]
    python scripts/meaning_blind_pass.py apply --work WORKDIR [--name third] [--dir DIR]

``print`` writes ``states.txt`` and ``pairs.txt`` (every state's prefix and its replies in a shuffled
order, states shuffled; pairs shuffled with ``a`` and ``b`` swapped at random; no labels, kinds or
notes) and ``key.json`` (how to map the shuffled order back; not for the annotator's eyes). The
annotator writes ``states_labels.txt`` (one line per state: ``S012 0,1,1,0``, classes of the replies
in the printed order) and ``pairs_kinds.txt`` (``P007 c`` or ``P007 p``). ``apply`` maps them back,
stores them as ``labels_NAME`` in states (classes renumbered in order of first appearance) and
``kind_NAME`` in pairs (``contrast`` / ``paraphrase``), and prints the agreement with the first labels.
"""

from __future__ import annotations

import argparse
import inspect
import json
import random
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from collapse_probe.core._resources import package_path
from collapse_probe.errors import ConfigError
from collapse_probe.metrics import load_meaning_material

KINDS = {"c": "contrast", "p": "paraphrase"}


def _read(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _write(path: Path, records: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")


def _first_appearance(labels: list[int]) -> list[int]:
    first: dict[int, int] = {}
    return [first.setdefault(x, len(first)) for x in labels]


def _collapse_error(labels: list[int]) -> float:
    """ε = 1 − modal share of the classes."""
    return 1 - max(Counter(labels).values()) / len(labels)


def agreement(
    states: list[dict[str, Any]],
    pairs: list[dict[str, Any]],
    field: str,
    kind_field: str,
    base: str = "labels",
    base_kind: str = "kind",
) -> str:
    """The agreement table: per domain, states with identical partitions, mean |Δε| and mean ARI
    between ``base`` (the first labels unless told) and ``field``; pairs whose ``base_kind`` equals
    ``kind_field``, and Cohen's κ."""
    from sklearn.metrics import adjusted_rand_score, cohen_kappa_score

    rows: dict[str, list[float]] = defaultdict(lambda: [0, 0, 0.0, 0.0])
    for s in states:
        if field not in s or base not in s:
            continue
        for group in (s["domain"], "all"):
            row = rows[group]
            row[0] += 1
            row[1] += s[base] == s[field]
            row[2] += abs(_collapse_error(s[base]) - _collapse_error(s[field]))
            row[3] += adjusted_rand_score(s[base], s[field])
    out = [f"states ({field} vs {base}): domain, n, identical partitions, mean |delta eps|, mean ARI"]
    out += [
        f"  {g:12s} {n:4.0f} {same:4.0f} {de / n:.3f} {ari / n:.3f}" for g, (n, same, de, ari) in sorted(rows.items())
    ]
    done = [p for p in pairs if kind_field in p and base_kind in p]
    prow: dict[str, Counter[str]] = defaultdict(Counter)
    for p in done:
        for group in (p["domain"], "all"):
            prow[group]["n"] += 1
            prow[group]["agree"] += p[base_kind] == p[kind_field]
            prow[group][p[base_kind]] += 1
            prow[group][p[base_kind] + " agree"] += p[base_kind] == p[kind_field]
    out.append(f"pairs ({kind_field} vs {base_kind}): domain, n, agree, contrasts agreed / n, paraphrases agreed / n")
    out += [
        f"  {g:12s} {c['n']:4d} {c['agree']:4d} {c['contrast agree']:4d} / {c['contrast']:<4d}"
        f" {c['paraphrase agree']:4d} / {c['paraphrase']}"
        for g, c in sorted(prow.items())
    ]
    if done:
        kappa = cohen_kappa_score([p[base_kind] for p in done], [p[kind_field] for p in done])
        out.append(f"  Cohen's kappa {kappa:.3f}")
    return "\n".join(out)


def passes(states: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """The labelling passes stored in the states, first to last: ``(labels field, kind field)``,
    the first labels (``labels`` / ``kind``) and then every ``labels_NAME`` / ``kind_NAME``."""
    names = dict.fromkeys(k.removeprefix("labels_") for s in states for k in s if k.startswith("labels_"))
    return [("labels", "kind")] + [(f"labels_{n}", f"kind_{n}") for n in names]


def all_agreements(states: list[dict[str, Any]], pairs: list[dict[str, Any]]) -> str:
    """The agreement table of every pass against every earlier one (second vs first, third vs
    first, third vs second, ...)."""
    found = passes(states)
    return "\n\n".join(
        agreement(states, pairs, field, kind_field, base, base_kind)
        for i, (field, kind_field) in enumerate(found)
        for base, base_kind in found[:i]
    )


def partition_pass(states: list[dict[str, Any]], pairs: list[dict[str, Any]], name: str) -> None:
    """Label the material with the partitioner ``name`` as if it were one more pass: each state's
    replies partitioned (``labels_<name>``), each pair as a state of two replies (``kind_<name>``:
    ``contrast`` where it splits them). A partitioner that reads context gets the agent's last turn,
    as the audit gives it."""
    from collapse_probe.metrics.partitioners import get_partitioner

    partitioner = get_partitioner(name)
    groups = [s["replies"] for s in states] + [[p["a"], p["b"]] for p in pairs]
    prefixes = [s["prefix"] for s in states] + [p["prefix"] for p in pairs]
    contexts = [next((t["content"] for t in reversed(pre) if t["role"] == "assistant"), None) for pre in prefixes]
    if "contexts" in inspect.signature(partitioner.partition_many).parameters:
        labels = partitioner.partition_many(groups, contexts=contexts)
    else:
        labels = partitioner.partition_many(groups)
    for s, lab in zip(states, labels[: len(states)], strict=True):
        s[f"labels_{name}"] = _first_appearance(list(lab))
    for p, lab in zip(pairs, labels[len(states) :], strict=True):
        p[f"kind_{name}"] = "contrast" if lab[0] != lab[1] else "paraphrase"


def blind_print(states: list[dict[str, Any]], pairs: list[dict[str, Any]], work: Path, seed: int) -> None:
    """Write the shuffled, unlabelled prints and the key that maps them back."""
    rng = random.Random(seed)
    work.mkdir(parents=True, exist_ok=True)
    key: dict[str, Any] = {"states": {}, "pairs": {}}
    lines: list[str] = []
    for k, i in enumerate(rng.sample(range(len(states)), len(states))):
        s = states[i]
        perm = rng.sample(range(len(s["replies"])), len(s["replies"]))
        key["states"][f"S{k:03d}"] = {"state_id": s["state_id"], "perm": perm}
        lines.append(f"=== S{k:03d} ({s['domain']})")
        lines += [f"  [{t['role']}] {t['content']}" for t in s["prefix"]]
        lines += [f"  {j}) {s['replies'][r]}" for j, r in enumerate(perm)]
    (work / "states.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    lines = []
    for k, i in enumerate(rng.sample(range(len(pairs)), len(pairs))):
        p = pairs[i]
        a, b = (p["b"], p["a"]) if rng.random() < 0.5 else (p["a"], p["b"])
        key["pairs"][f"P{k:03d}"] = p["id"]
        lines.append(f"P{k:03d} ({p['domain']})")
        lines += [f"  [{t['role']}] {t['content']}" for t in p["prefix"]]
        lines += [f"  A: {a}", f"  B: {b}"]
    (work / "pairs.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (work / "key.json").write_text(json.dumps(key), encoding="utf-8")


def _answers(path: Path) -> dict[str, str]:
    if not path.is_file():
        raise ConfigError(f"{path}: no such file (the annotator's answers)")
    out = {}
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            parts = line.split()
            if len(parts) != 2:
                raise ConfigError(f"{path}: line {n}: expected 'KEY ANSWER', got {line!r}")
            out[parts[0]] = parts[1]
    return out


def apply_pass(states: list[dict[str, Any]], pairs: list[dict[str, Any]], work: Path, name: str) -> None:
    """Map the annotator's answers in ``work`` back onto the records, as ``labels_<name>`` and
    ``kind_<name>``."""
    key = json.loads((work / "key.json").read_text(encoding="utf-8"))
    by_state = {s["state_id"]: s for s in states}
    for printed, answer in _answers(work / "states_labels.txt").items():
        entry = key["states"].get(printed)
        if entry is None:
            raise ConfigError(f"states_labels.txt: {printed} is not a printed state")
        try:
            shown = [int(x) for x in answer.split(",")]
        except ValueError:
            raise ConfigError(f"states_labels.txt: {printed} {answer}: expected class numbers like 0,1,1,0") from None
        state = by_state[entry["state_id"]]
        if len(shown) != len(state["replies"]):
            raise ConfigError(
                f"states_labels.txt: {printed} has {len(shown)} classes for {len(state['replies'])} replies"
            )
        labels = [0] * len(shown)
        for position, reply in enumerate(entry["perm"]):
            labels[reply] = shown[position]
        state[f"labels_{name}"] = _first_appearance(labels)
    by_pair = {p["id"]: p for p in pairs}
    for pair, answer in _answers(work / "pairs_kinds.txt").items():
        if pair not in key["pairs"] or answer not in KINDS:
            raise ConfigError(f"pairs_kinds.txt: {pair} {answer}: expected a printed pair and 'c' or 'p'")
        by_pair[key["pairs"][pair]][f"kind_{name}"] = KINDS[answer]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("command", choices=["agreement", "print", "apply"])
    ap.add_argument("--dir", type=Path, default=package_path("data", "meaning"), help="the material")
    ap.add_argument("--out", "--work", dest="work", type=Path, help="working directory of a blind pass")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--partition", help="agreement: score this partitioner instead of the second pass")
    ap.add_argument("--name", default="third", help="the new pass is stored as labels_NAME and kind_NAME")
    args = ap.parse_args(argv)
    try:
        load_meaning_material(args.dir)  # a malformed line is refused here, naming file, line and field
        states, pairs = _read(args.dir / "states.jsonl"), _read(args.dir / "pairs.jsonl")
        if args.command == "agreement" and args.partition:
            partition_pass(states, pairs, args.partition)
            print(agreement(states, pairs, f"labels_{args.partition}", f"kind_{args.partition}"))
        elif args.command == "agreement":
            print(all_agreements(states, pairs))
        elif args.work is None:
            raise ConfigError(f"{args.command} needs --out / --work DIR")
        elif args.command == "print":
            blind_print(states, pairs, args.work, args.seed)
            print(f"wrote {args.work}/states.txt, pairs.txt and key.json")
        else:
            apply_pass(states, pairs, args.work, args.name)
            _write(args.dir / "states.jsonl", states)
            _write(args.dir / "pairs.jsonl", pairs)
            print(agreement(states, pairs, f"labels_{args.name}", f"kind_{args.name}"))
    except (ConfigError, OSError, json.JSONDecodeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
