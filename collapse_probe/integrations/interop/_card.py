"""``card``: a simulator card, the portable, fingerprinted summary of a simulator that a leaderboard or
a model card can cite, built from audit, cross-play and play run directories.

Every figure on the card is copied from a run's ``results.json``, never recomputed: ``card.json``
gives each one with its ``source`` (the run and the JSON pointer, RFC 6901, of the value inside
``results.json``), so a reader can check it, and a test does. The card names the simulator (spec,
sampling mode, the content fingerprint its runs recorded), the benchmark and states, both verdict
views with their intervals (``verdicts.meaning`` / ``verdicts.reward`` where the audit wrote them,
else ``verdict`` with ``summary.collapse_error`` and the decision ε), entropy, realism against people
where it was measured, transfer where a cross-play run measured it, failure handling, cost and the
tool versions. ``card_fingerprint`` is the SHA-256 of the rest of ``card.json`` (canonical JSON), and
each source run is pinned by the SHA-256 of its ``results.json`` and ``config.json``.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal, NotRequired, TypedDict

from pydantic import JsonValue

from collapse_probe.errors import ConfigError

SCHEMA = "collapse-probe/card/v1"
CARD_KINDS = ("audit", "crossplay", "play")
HeadlineBlock = Literal["collapse_error", "entropy", "effective_modes", "decision_collapse_error", "n_states",
                        "by_kind", "infra_failures", "samples_per_state"]  # fmt: skip
HEADLINE: tuple[HeadlineBlock, ...] = ("collapse_error", "entropy", "effective_modes", "decision_collapse_error",
                                       "n_states", "by_kind", "infra_failures", "samples_per_state")  # fmt: skip
"""The blocks of an audit's ``summary`` a card carries as they are (``card.json`` ``audits``)."""

Pointer = Sequence[str | int]
"""A JSON pointer's parts: object keys and array indices."""


class FigureSource(TypedDict):
    """Where a figure was read: the run (its index in ``sources``) and the value's JSON pointer."""

    run: int
    pointer: str
    ci95_pointer: NotRequired[str]
    """The pointer of the figure's interval, where it has one."""


class Figure(TypedDict):
    """One figure of the card (``card.json`` ``figures``)."""

    section: str
    """The card section it is shown under (``verdict``, ``states``, ``entropy``, ...)."""
    name: str
    """What it is, as the card's table names it."""
    value: int | float | str | None
    """The value at its pointer (``None``: results.json holds a number JSON cannot, see ``note``)."""
    source: FigureSource
    ci95: NotRequired[list[int | float]]
    note: NotRequired[str]
    """What the figure means beside its name, or why it has no value."""


class CardSimulator(TypedDict):
    """The simulator a card describes."""

    spec: str
    mode: object
    """The audit's sampling mode (``direct``, ``vs``...; ``None`` without an audit)."""
    fingerprint: object
    """The content fingerprint its runs recorded (``None``: not recorded)."""


class CardSource(TypedDict):
    """The card's record of one run it was built from (what it is, the hashes of its files)."""

    run: str
    kind: str
    schema: object
    version: object
    results_sha256: str | None
    config_sha256: str | None


class AuditText(TypedDict):
    """The card's account of one audit run: its partitioner, states, notices, verdicts and the headline
    blocks of its ``summary`` (:data:`HEADLINE`) as results.json holds them."""

    run: int
    partitioner: object
    states_audited: object
    notices: list[object]
    verdict: object
    verdicts: object
    collapse_error: NotRequired[object]
    entropy: NotRequired[object]
    effective_modes: NotRequired[object]
    decision_collapse_error: NotRequired[object]
    n_states: NotRequired[object]
    by_kind: NotRequired[object]
    infra_failures: NotRequired[object]
    samples_per_state: NotRequired[object]


class CrossplayEntry(TypedDict):
    """The card's account of one cross-play run: the cells against the simulator and its transfers."""

    run: int
    train_simulator: object
    cells: list[Mapping[str, object]]
    transfer: list[Mapping[str, object]]


class SimulatorCard(TypedDict):
    """``card.json``: what :func:`simulator_card` builds and :func:`write_card` writes."""

    schema: str
    tool_version: str
    simulator: CardSimulator
    benchmarks: list[str]
    audits: list[AuditText]
    crossplay: list[CrossplayEntry]
    failure_handling: str
    sources: list[CardSource]
    figures: list[Figure]
    null_reasons: NotRequired[dict[str, str]]
    """Each value results.json held as ``NaN``/infinity, nulled here, by its path, with the reason."""
    card_fingerprint: NotRequired[str]
    """SHA-256 of the rest of the card (canonical JSON); set last."""


class _Run(TypedDict):
    """A run directory the card is built from."""

    path: Path
    kind: str
    config: Mapping[str, object]
    """Its ``config.json``."""
    results: dict[str, JsonValue]
    """Its ``results.json``, as the typed results write it."""


def _obj(value: object) -> Mapping[str, object]:
    """``value`` when it is a JSON object, else an empty one (a block results.json does not hold)."""
    return value if isinstance(value, dict) else {}


def _list(value: object) -> list[object]:
    """``value`` when it is a JSON array, else an empty one."""
    return value if isinstance(value, list) else []


def _sha256(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def _pointer(parts: Pointer) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def resolve_pointer(doc: object, pointer: str) -> object:
    """The value at a JSON pointer (RFC 6901) in ``doc``; ``KeyError`` when it is not there."""
    cur = doc
    if pointer == "":
        return cur
    for raw in pointer.lstrip("/").split("/"):
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(cur, list):
            cur = cur[int(part)]
        elif isinstance(cur, dict):
            cur = cur[part]
        else:
            raise KeyError(pointer)
    return cur


def _get(doc: object, parts: Pointer) -> object:
    try:
        return resolve_pointer(doc, _pointer(parts))
    except (KeyError, IndexError, ValueError):
        return None


class _Builder:
    """Collects the card's figures, each with the pointer it was read from."""

    def __init__(self) -> None:
        self.figures: list[Figure] = []

    def add(self, section: str, name: str, run_i: int, results: Mapping[str, object], parts: Pointer,
            ci_parts: Pointer | None = None, note: str | None = None) -> None:  # fmt: skip
        got = _get(results, parts)
        if got is None or isinstance(got, bool) or not isinstance(got, int | float | str):
            return
        value: int | float | str | None = got
        if isinstance(value, float) and not math.isfinite(value):  # a results.json written with NaN
            note = f"results.json holds {value!r} here, which is not a number: no figure"
            value = None
        fig: Figure = {"section": section, "name": name, "value": value,
                               "source": {"run": run_i, "pointer": _pointer(parts)}}  # fmt: skip
        if ci_parts is not None:
            ci = _get(results, ci_parts)
            if (
                isinstance(ci, list)
                and len(ci) == 2
                and all(isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x) for x in ci)
            ):
                fig["ci95"] = ci
                fig["source"]["ci95_pointer"] = _pointer(ci_parts)
        if note:
            fig["note"] = note
        self.figures.append(fig)


_VIEW_FIELDS = ("n_states", "classes", "over", "reason", "interval_label", "closed_answer_share", "closed_set_mass")
"""The fields of a verdict view the card shows beside its label and ε̂ (the last three: NO REWARD SIGNAL's)."""


def _load(run_dir: str | Path) -> _Run:
    from collapse_probe.results import load
    from collapse_probe.rollout._rundir import read_run_config

    p = Path(run_dir)
    if not p.is_dir():
        raise ConfigError(f"{run_dir}: no such run directory (expected an audit, crossplay or play --out)")
    config = read_run_config(p)
    kind = config.get("kind")
    if kind not in CARD_KINDS:
        raise ConfigError(
            f"{p}: holds a {kind or 'unknown'} run; a simulator card summarises {', '.join(CARD_KINDS)} runs"
        )
    return {"path": p, "kind": str(kind), "config": config, "results": load(p).to_json()}


def _simulators_of(run: _Run) -> list[str]:
    res = run["results"]
    if run["kind"] == "audit":
        return [str(res.get("simulator"))]
    if run["kind"] == "crossplay":
        return [str(s) for s in _list(res.get("simulators"))]
    return [str(run["config"].get("sim"))]


def _choose(runs: list[_Run], simulator: str | None) -> str:
    if simulator is not None:
        for r in runs:
            if simulator not in _simulators_of(r):
                raise ConfigError(
                    f"--sim {simulator}: {r['path']} has no results for this simulator "
                    f"(it has {', '.join(_simulators_of(r))})"
                )
        return simulator
    audited = list(dict.fromkeys(s for r in runs if r["kind"] == "audit" for s in _simulators_of(r)))
    if len(audited) > 1:
        raise ConfigError(f"the runs audit {len(audited)} simulators ({', '.join(audited)}); a card describes one: "
                          "make one card per simulator, or name it with --sim")  # fmt: skip
    if audited:
        return _choose(runs, audited[0])
    common = set(_simulators_of(runs[0])).intersection(*(set(_simulators_of(r)) for r in runs[1:]))
    trained = {r["results"].get("train_simulator") for r in runs if r["kind"] == "crossplay"} - {None}
    if len(trained) == 1 and next(iter(trained)) in common:
        return str(next(iter(trained)))
    if len(common) == 1:
        return next(iter(common))
    raise ConfigError(f"which simulator is the card about? the runs hold {', '.join(sorted(common)) or 'no common one'}; "
                      "name it with --sim")  # fmt: skip


def _fingerprint(run: _Run, spec: str) -> object:
    fps = run["config"].get("fingerprints")
    if isinstance(fps, dict) and spec in fps:
        return fps[spec]
    fps = run["results"].get("fingerprints")
    return fps.get(spec) if isinstance(fps, dict) else None


def _audit_figures(b: _Builder, i: int, res: Mapping[str, object]) -> None:
    b.add("states", "states measured", i, res, ["summary", "n_states"])
    b.add("states", "replies per state (N)", i, res, ["samples_per_state"])
    for kind in _obj(_get(res, ["summary", "by_kind"])):
        b.add("states", f"ε̂ at {kind} states", i, res, ["summary", "by_kind", kind, "collapse_error"],
              ["summary", "by_kind", kind, "ci95"])  # fmt: skip
    b.add("verdict", "verdict", i, res, ["verdict"])
    verdicts = res.get("verdicts")
    if isinstance(verdicts, dict):  # the two views: {label, estimate, ci95, n_states, classes, over, reason}
        for view in ("meaning", "reward"):
            v = verdicts.get(view)
            if isinstance(v, str):
                b.add("verdict", f"{view} view", i, res, ["verdicts", view])
            elif isinstance(v, dict):
                b.add("verdict", f"{view} view", i, res, ["verdicts", view, "label"])
                b.add("verdict", f"{view} view ε̂", i, res, ["verdicts", view, "estimate"], ["verdicts", view, "ci95"])
                for key in _VIEW_FIELDS:
                    b.add("verdict", f"{view} view: {key.replace('_', ' ')}", i, res, ["verdicts", view, key])
    for view in ("meaning", "reward"):  # the sequential test that decided each view
        seq = ["summary", "sequential", "views", view]
        b.add("verdict", f"{view} view: exact lower bound on ε̄ at the last look", i, res, seq + ["lower"])
        b.add("verdict", f"{view} view: exact upper bound on ε̄ at the last look", i, res, seq + ["upper"])
        b.add("verdict", f"{view} view: replies per state at the last look", i, res, seq + ["replies_per_state"])
        b.add("verdict", f"{view} view: why the sequential test stopped", i, res, seq + ["reason"])
    b.add("verdict", "sequential test: cap (replies per state)", i, res, ["summary", "sequential", "cap"])
    b.add("verdict", "sequential test: its looks and error", i, res, ["summary", "sequential", "rule"])
    b.add("verdict", "meaning view ε̂ (mean over states)", i, res, ["summary", "collapse_error", "estimate"],
          ["summary", "collapse_error", "ci95"])  # fmt: skip
    b.add("verdict", "ε*", i, res, ["epsilon_star"])
    # the same fields, under the same names, as the audit's terminal table and report
    b.add("views", "decision-label ε (the benchmark's labels, not the reward's classes)", i, res,
          ["summary", "decision_collapse_error", "estimate"], ["summary", "decision_collapse_error", "ci95"],
          note="at the states that ask for a decision; the reward view is in the verdict")  # fmt: skip
    b.add("views", "decision-label ε: states", i, res, ["summary", "decision_collapse_error", "n_states"])
    b.add("views", "exact: P(the whole reply is a closed answer), format compliance", i, res,
          ["summary", "exact", "closed_set_mass"], note="format compliance, not collapse")  # fmt: skip
    b.add(
        "views", "exact: ε of the answer given a closed answer", i, res, ["summary", "exact", "collapse_error_in_set"]
    )
    b.add("views", "exact: ε with 'outside the set' as one class", i, res,
          ["summary", "exact", "collapse_error_with_outside"])  # fmt: skip
    b.add("views", "exact: states", i, res, ["summary", "exact", "n_states"])
    b.add("entropy", "entropy, nats (Chao–Wang–Jost)", i, res, ["summary", "entropy", "estimate"],
          ["summary", "entropy", "ci95"])  # fmt: skip
    summary = _obj(res.get("summary"))
    if summary.get("effective_modes_lower_bound_only"):
        n = res.get("samples_per_state")
        b.add("entropy", "effective modes exp(H): at least", i, res, ["summary", "effective_modes_lower_bound"],
              note=f"lower bound only: {n} replies per state cannot resolve more classes")  # fmt: skip
    else:
        b.add("entropy", "effective modes exp(H)", i, res, ["summary", "effective_modes"],
              note="estimate incl. unseen classes")  # fmt: skip
    b.add("entropy", "accumulated ε̄_H", i, res, ["summary", "accumulated_collapse_error"])
    hr = res.get("human_reference")
    if isinstance(hr, dict):
        for k in ("wasserstein", "ks_statistic", "ks_pvalue", "l1_binned", "simulated_mean", "human_mean"):
            b.add("people", f"donations: {k}", i, res, ["human_reference", "donations", k],
                  ["human_reference", "donations", "ci95", k])  # fmt: skip

        def walk(node: object, parts: Pointer) -> None:
            if isinstance(node, dict):
                if isinstance(node.get("estimate"), int | float) and not isinstance(node.get("estimate"), bool):
                    b.add("people", " ".join(str(p) for p in parts[1:]), i, res, [*parts, "estimate"], [*parts, "ci95"])
                for k, v in node.items():
                    if k != "donations":
                        walk(v, [*parts, k])

        walk(hr, ["human_reference"])
    b.add("variance", "simulator share of reward variance", i, res, ["variance_share", "share"],
          ["variance_share", "ci"])  # fmt: skip
    b.add("variance", "variance share: what it is", i, res, ["variance_share", "note"])
    for k in ("task", "simulator", "agent", "judge"):
        b.add("variance", f"{k} share of reward variance", i, res, ["variance", "shares", k, "estimate"],
              ["variance", "shares", k, "ci95"])  # fmt: skip
    b.add("variance", "flip rate (tasks whose success differs between trials)", i, res, ["variance", "flip_rate"])
    for k in sorted(_obj(_obj(res.get("variance")).get("pass_k")), key=int):
        b.add("variance", f"pass^{k}", i, res, ["variance", "pass_k", k])
    for k in ("flagged", "flagged_critical", "failed", "failed_flagged", "failed_flagged_share"):
        b.add("published", f"simulator errors flagged: {k}", i, res, ["simulator_errors", k])
    for k in ("conversations", "infra_failures", "prefixes_answered_once", "states", "sha256", "format", "path"):
        b.add("published", f"published file: {k}", i, res, ["source", k])
    b.add("failures", "states excluded: infrastructure failures", i, res, ["summary", "infra_failures"])
    b.add("failures", "empty replies dropped", i, res, ["summary", "n_empty_responses"])
    b.add("failures", "VS parse failure rate", i, res, ["summary", "vs_parse_failures", "rate"])


def _crossplay_figures(b: _Builder, i: int, res: Mapping[str, object], sim: str) -> None:
    for j, c in enumerate(_list(res.get("cells"))):
        if isinstance(c, dict) and c.get("simulator") == sim:
            b.add("transfer", f"reward of {c.get('policy')} against it", i, res, ["cells", j, "mean_reward"],
                  ["cells", j, "ci95"])  # fmt: skip
            b.add(
                "failures", f"infrastructure failures ({c.get('policy')} vs it)", i, res, ["cells", j, "infra_failures"]
            )
    for j, t in enumerate(_list(res.get("transfer"))):
        if not isinstance(t, dict):
            continue
        role = (
            "trained on it"
            if t.get("train_simulator") == sim
            else "held out"
            if sim in _list(t.get("heldout_simulators"))
            else None
        )
        if role is None:
            continue
        b.add("transfer", f"transfer ratio of {t.get('policy')} ({role})", i, res, ["transfer", j, "transfer_ratio"],
              ["transfer", j, "ci95"])  # fmt: skip
        b.add("transfer", f"transfer note ({t.get('policy')})", i, res, ["transfer", j, "note"])


def _usage_figures(b: _Builder, i: int, res: Mapping[str, object]) -> None:
    for spec, u in _obj(res.get("usage")).items():
        if isinstance(u, dict):
            for k in ("requests", "input_tokens", "output_tokens", "cost_usd"):
                b.add("cost", f"{spec}: {k}", i, res, ["usage", spec, k])


def simulator_card(run_dirs: list[str | Path], simulator: str | None = None) -> SimulatorCard:
    """The card (``card.json``'s content) of the simulator the runs measure.

    Raises:
        ConfigError: no runs, a run of another kind or without results, runs about different
            simulators (or one spec answered by two models), or no way to tell which simulator.
    """
    from collapse_probe._version import __version__

    if not run_dirs:
        raise ConfigError("card: give at least one run directory")
    runs = [_load(d) for d in run_dirs]
    sim = _choose(runs, simulator)
    fps = _one_model(runs, sim)
    b = _Builder()
    sources: list[CardSource] = []
    benchmarks: list[object] = []
    modes: list[object] = []
    texts: list[AuditText] = []
    crossplay: list[CrossplayEntry] = []
    for i, r in enumerate(runs):
        res = r["results"]
        sources.append(_source(r))
        benchmarks.append(res.get("benchmark") or r["config"].get("benchmark"))
        if r["kind"] == "audit":
            modes.append(res.get("mode"))
            texts.append(_audit_text(i, res))
            _audit_figures(b, i, res)
        elif r["kind"] == "crossplay":
            crossplay.append(_crossplay_entry(i, res, sim))
            _crossplay_figures(b, i, res, sim)
        else:
            b.add("transfer", f"reward of {res.get('policy')} against it (play)", i, res, ["summary", "mean_reward"],
                  ["summary", "ci95"])  # fmt: skip
            b.add("failures", "infrastructure failures (play)", i, res, ["summary", "infra_failures"])
        _usage_figures(b, i, res)
    fingerprint = next((v for v in fps.values() if v is not None), None)
    card: SimulatorCard = {
        "schema": SCHEMA,
        "tool_version": __version__,
        "simulator": {"spec": sim, "mode": next((m for m in modes if m), None), "fingerprint": fingerprint},
        "benchmarks": sorted({str(x) for x in benchmarks if x}),
        "audits": texts,
        "crossplay": crossplay,
        "failure_handling": (
            "infrastructure failures (outages, rate limits, empty or null answers) are excluded from every "
            "estimate and counted; a rerun on the same run directory runs them again. Request retries are "
            "printed at the end of each run and not recorded in results.json."
        ),
        "sources": sources,
        "figures": b.figures,
    }
    from collapse_probe.core._output import null_nonfinite

    card, reasons = null_nonfinite(card)  # a results.json written with NaN: null here, with the reason
    if reasons:
        card["null_reasons"] = reasons
    card["card_fingerprint"] = _card_fingerprint(card)
    return card


def _one_model(runs: list[_Run], sim: str) -> dict[str, object]:
    """Run path -> the fingerprint of the model that answered as ``sim`` in it (``None``: not recorded).

    Raises:
        ConfigError: two runs recorded different models under the spec.
    """
    fps = {str(r["path"]): _fingerprint(r, sim) for r in runs}
    distinct = {json.dumps(v, sort_keys=True) for v in fps.values() if v is not None}
    if len(distinct) > 1:
        raise ConfigError(
            f"the runs measured different models under the spec {sim!r} ("
            + "; ".join(f"{k}: {v}" for k, v in fps.items() if v is not None)
            + "); a card describes one simulator"
        )
    return fps


def _source(r: _Run) -> CardSource:
    """The card's record of one run it was built from (what it is, the hashes of its files)."""
    res = r["results"]
    return {
        "run": str(r["path"]), "kind": r["kind"], "schema": res.get("schema"), "version": res.get("version"),
        "results_sha256": _sha256(r["path"] / "results.json"), "config_sha256": _sha256(r["path"] / "config.json"),
    }  # fmt: skip


def _audit_text(i: int, res: Mapping[str, object]) -> AuditText:
    """The card's account of audit run ``i``: its partitioner, states, notices, verdicts and headline."""
    summary = _obj(res.get("summary"))
    text: AuditText = {
        "run": i, "partitioner": res.get("partitioner"), "states_audited": res.get("states_audited"),
        "notices": _list(res.get("notices")), "verdict": res.get("verdict"), "verdicts": res.get("verdicts"),
    }  # fmt: skip
    for k in HEADLINE:  # the headline blocks as results.json holds them (the figures below point into them)
        if k in summary:
            text[k] = summary[k]
    return text


def _crossplay_entry(i: int, res: Mapping[str, object], sim: str) -> CrossplayEntry:
    """The card's account of cross-play run ``i``: the cells against ``sim`` and the transfers it is in."""
    return {
        "run": i, "train_simulator": res.get("train_simulator"),
        "cells": [c for c in _list(res.get("cells")) if isinstance(c, dict) and c.get("simulator") == sim],
        "transfer": [t for t in _list(res.get("transfer")) if isinstance(t, dict)
                     and (t.get("train_simulator") == sim or sim in _list(t.get("heldout_simulators")))],
    }  # fmt: skip


def _card_fingerprint(card: SimulatorCard) -> str:
    body = {k: v for k, v in card.items() if k != "card_fingerprint"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()


def _fmt(v: object) -> str:
    if v is None:
        return "n/a"
    if isinstance(v, float):
        return f"{v:.3f}"
    return str(v)


def card_markdown(card: SimulatorCard) -> str:
    """``card.md``: the card for people (figures rounded to 3 decimals; exact values in ``card.json``)."""
    sim = card["simulator"]
    lines = [
        f"# Simulator card: {sim['spec']}",
        "",
        f"- simulator: `{sim['spec']}`" + (f" ({sim['mode']})" if sim.get("mode") else ""),
        f"- fingerprint: `{sim.get('fingerprint')}`",
        f"- benchmarks: {', '.join(card['benchmarks']) or 'n/a'}",
        f"- collapse-probe {card['tool_version']}; card fingerprint `{card['card_fingerprint']}`",
        "",
    ]
    for a in card["audits"]:
        lines.append(f"- audit {a['run']}: classes by {a.get('partitioner')}; over {a.get('states_audited')}")
        lines += [f"  - {n}" for n in a["notices"]]
    titles = {
        "verdict": "Verdict: meaning and reward views", "states": "Benchmark and states", "entropy": "Entropy",
        "people": "Realism against people", "transfer": "Transfer and reward against this simulator",
        "views": "Other views: decision labels and exact closed-set scores",
        "variance": "Reward variance", "published": "Published trajectories", "failures": "Failure handling",
        "cost": "Cost",
    }  # fmt: skip
    for section, title in titles.items():
        figs = [f for f in card["figures"] if f["section"] == section]
        lines += ["", f"## {title}", ""]
        if not figs:
            lines.append({
                "people": "Not measured (audit with `--human DIR` to compare with people).",
                "transfer": "Not measured (a cross-play run with this simulator measures it).",
            }.get(section, "Not measured."))  # fmt: skip
            if section == "failures":
                lines.append("")
                lines.append(card["failure_handling"])
            continue
        lines += ["| figure | value | 95% CI | run |", "| --- | --- | --- | --- |"]
        for f in figs:
            ci = f.get("ci95")
            ci_s = f"[{_fmt(float(ci[0]))}, {_fmt(float(ci[1]))}]" if ci else ""
            value = _fmt(f["value"]).replace("|", "\\|").replace("\n", " ")
            lines.append(f"| {f['name']} | {value} | {ci_s} | {f['source']['run']} |")
        if section == "failures":
            lines += ["", card["failure_handling"]]
    lines += ["", "## Sources", ""]
    for i, s in enumerate(card["sources"]):
        lines.append(f"{i}. `{s['run']}` ({s['kind']}, {s['schema']}, collapse-probe {s['version']}); "
                     f"results.json sha256 `{s['results_sha256']}`")  # fmt: skip
    lines += ["", "Every figure is copied from the run's results.json; card.json gives each one's JSON pointer.", ""]
    return "\n".join(lines)


def write_card(card: SimulatorCard, out: str | Path) -> tuple[Path, Path]:
    """Write ``card.md`` at ``out`` and ``card.json`` beside it (same stem); returns both paths.

    Both files are new: the JSON name comes from ``out`` (``--out package.md`` puts it at
    ``package.json``), so an existing file at either name refuses the card before anything is
    written, and neither is ever written through a link, into a FIFO or into a run's folder (see
    :func:`collapse_probe.core._output.write_outputs`).

    Raises:
        ConfigError: ``out`` does not end in ``.md``, or one of the two paths may not be written
            (naming it and why).
    """
    from collapse_probe.core._output import dumps_json, null_nonfinite, write_outputs

    md = Path(out)
    if md.suffix != ".md":
        raise ConfigError(
            f"--out {out}: a card is written as Markdown; give a path ending in .md (card.json goes beside it)"
        )
    js = md.with_suffix(".json")
    data, reasons = null_nonfinite(card)
    if reasons:
        data["null_reasons"] = reasons
    written = write_outputs([
        (md, card_markdown(card)),
        (js, dumps_json(data, where=js, indent=2) + "\n"),
    ])  # fmt: skip
    return written[0], written[1]
