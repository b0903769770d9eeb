"""The CI gate: judge a candidate policy from a cross-play run and say pass, fail or *could not judge*.

A verdict is a list of checks, each ``pass``, ``fail`` or ``error`` (could not judge):

- ``results``: the run holds the candidate's (and baseline's) row, with every cell scored;
- ``infra:<policy>|<simulator>``: the share of conversations lost to infrastructure failures in each
  cell the verdict reads is at most ``max_infra_rate`` (else the cell cannot be judged: error);
- ``transfer`` (``min_transfer``): the candidate's transfer ratio (held-out / training-simulator
  reward) is at least ``min_transfer``;
- ``regression`` (``baseline_policy`` + ``max_drop``): the candidate's held-out reward is at most
  ``max_drop`` below the baseline's, by a paired cluster bootstrap over tasks.

Non-strict checks compare the point estimate with the threshold; ``strict`` requires the whole 95 %
CI to clear it (the lower bound of the ratio, the upper bound of the drop). Exit code: 2 if any check
could not be judged, else 1 if any failed, else 0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal
from xml.etree import ElementTree as ET

from collapse_probe.crossplay import SCHEMA, heldout_task_rewards
from collapse_probe.errors import ConfigError

Status = Literal["pass", "fail", "error"]
EXIT_PASS, EXIT_FAIL, EXIT_CANNOT_JUDGE = 0, 1, 2
DEFAULT_MAX_INFRA_RATE = 0.1


@dataclass
class GateCheck:
    """One check of the gate."""

    name: str
    status: Status
    message: str
    """Why it passed, failed or could not be judged (shown in the summary and JUnit)."""
    value: float | None = None
    threshold: float | None = None
    ci95: list[float] | None = None


@dataclass
class GateVerdict:
    """All checks of one gate evaluation."""

    policy: str
    checks: list[GateCheck] = field(default_factory=list)
    strict: bool = False
    baseline_policy: str | None = None

    @property
    def exit_code(self) -> int:
        """2 if any check could not be judged, 1 if any failed, 0 if all passed."""
        if any(c.status == "error" for c in self.checks):
            return EXIT_CANNOT_JUDGE
        if any(c.status == "fail" for c in self.checks):
            return EXIT_FAIL
        return EXIT_PASS

    @property
    def outcome(self) -> str:
        return {EXIT_PASS: "pass", EXIT_FAIL: "fail", EXIT_CANNOT_JUDGE: "could not judge"}[self.exit_code]

    def to_dict(self) -> dict[str, Any]:
        return {
            "policy": self.policy,
            "baseline_policy": self.baseline_policy,
            "strict": self.strict,
            "outcome": self.outcome,
            "exit_code": self.exit_code,
            "checks": [asdict(c) for c in self.checks],
        }

    def markdown(self) -> str:
        """A summary for a pull-request comment."""
        icon = {"pass": "✅", "fail": "❌", "error": "⚠️"}
        head = {EXIT_PASS: "✅ passed", EXIT_FAIL: "❌ failed", EXIT_CANNOT_JUDGE: "⚠️ could not judge"}[self.exit_code]
        mode = "strict (95% CI must clear each threshold)" if self.strict else "point estimates"
        lines = [
            f"### collapse-probe gate: {head}",
            "",
            f"Candidate policy `{self.policy}`"
            + (f", baseline `{self.baseline_policy}`" if self.baseline_policy else "")
            + f"; mode: {mode}.",
            "",
            "| check | result | value | 95% CI | threshold | detail |",
            "|---|---|---|---|---|---|",
        ]
        infra = [c for c in self.checks if c.name.startswith("infra:")]
        rows = list(self.checks)
        if infra and all(c.status == "pass" for c in infra):
            # one row for healthy cells keeps the comment short; JUnit keeps one case per cell
            worst = max(infra, key=lambda c: c.value or 0.0)
            summary = GateCheck(f"infra ({len(infra)} cells)", "pass",
                                f"every cell within the limit; worst: {worst.message}", value=worst.value,
                                threshold=worst.threshold)  # fmt: skip
            rows = [c for c in rows if c not in infra]
            rows.insert(1 if rows and rows[0].name == "results" else 0, summary)
        for c in rows:
            ci = f"[{_f(c.ci95[0])}, {_f(c.ci95[1])}]" if c.ci95 else ""
            name = c.name.replace("|", "\\|")
            detail = c.message.replace("|", "\\|").replace("\n", " ")
            lines.append(
                f"| `{name}` | {icon[c.status]} {c.status} | {_f(c.value)} | {ci} | {_f(c.threshold)} | {detail} |"
            )
        return "\n".join(lines) + "\n"

    def junit_xml(self) -> str:
        """JUnit XML: one testcase per check; a failed check has a ``failure``, an unjudgeable one an ``error``."""
        fails = sum(1 for c in self.checks if c.status == "fail")
        errors = sum(1 for c in self.checks if c.status == "error")
        suites = ET.Element(
            "testsuites",
            name="collapse-probe gate",
            tests=str(len(self.checks)),
            failures=str(fails),
            errors=str(errors),
        )
        suite = ET.SubElement(
            suites,
            "testsuite",
            name=f"gate {self.policy}",
            tests=str(len(self.checks)),
            failures=str(fails),
            errors=str(errors),
            skipped="0",
        )
        for c in self.checks:
            case = ET.SubElement(suite, "testcase", classname="collapse_probe.gate", name=c.name)
            if c.status == "fail":
                el = ET.SubElement(case, "failure", message=c.message, type="threshold")
                el.text = c.message
            elif c.status == "error":
                el = ET.SubElement(case, "error", message=c.message, type="could-not-judge")
                el.text = c.message
            out = ET.SubElement(case, "system-out")
            out.text = f"value={_f(c.value)} ci95={c.ci95} threshold={_f(c.threshold)}"
        ET.indent(suites)
        return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"


def _f(x: float | None) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return ""
    return f"{x:.4g}"


def evaluate_gate(
    results: dict[str, Any],
    policy: str,
    *,
    min_transfer: float | None = None,
    baseline_policy: str | None = None,
    max_drop: float | None = None,
    max_infra_rate: float = DEFAULT_MAX_INFRA_RATE,
    strict: bool = False,
    n_boot: int = 2000,
    seed: int = 0,
) -> GateVerdict:
    """Judge ``policy`` from cross-play ``results`` (the ``results.json`` dictionary).

    Args:
        results: cross-play results (:func:`collapse_probe.crossplay.run_crossplay`).
        policy: the candidate policy spec (a row of the matrix).
        min_transfer: smallest acceptable transfer ratio (needs a training simulator in the run).
        baseline_policy: the policy to compare against (another row of the same run).
        max_drop: largest acceptable drop of held-out reward below the baseline (reward units).
        max_infra_rate: largest acceptable share of infrastructure failures in a cell the gate reads.
        strict: require the 95 % CI, not just the point estimate, to clear every threshold.
        n_boot: bootstrap resamples of the paired comparison.
        seed: bootstrap seed.

    Returns:
        The verdict; ``verdict.exit_code`` is 0 (pass), 1 (fail) or 2 (could not judge).

    Raises:
        ConfigError: contradictory or out-of-range options (these are the caller's error, not the run's).
    """
    _check_options(policy, min_transfer, baseline_policy, max_drop, max_infra_rate)
    verdict = GateVerdict(policy=policy, strict=strict, baseline_policy=baseline_policy)
    checks = verdict.checks

    # --- can the run be judged at all?
    problems = _structure_problems(results, [p for p in (policy, baseline_policy) if p is not None])
    if problems:
        checks.append(GateCheck("results", "error", "; ".join(problems)))
        return verdict
    cells: dict[tuple[str, str], dict[str, Any]] = {
        (str(c.get("policy")), str(c.get("simulator"))): c for c in results["cells"] if isinstance(c, dict)
    }
    sims: list[str] = list(results["simulators"])
    fps = results.get("fingerprints") or {}
    mixed = sorted(k for k, v in fps.items() if isinstance(v, list) and len(v) > 1) if isinstance(fps, dict) else []
    if mixed:
        checks.append(GateCheck(
            "results", "error",
            f"the run mixes outputs of different models under one spec: {', '.join(mixed)} "
            "(the model changed while the run was resumed); rerun into a fresh --out",
        ))  # fmt: skip
        return verdict
    train_sim = results.get("train_simulator")
    heldout = [s for s in sims if s != train_sim]
    rows = [p for p in (policy, baseline_policy) if p is not None]
    read = [(p, s) for p in rows for s in sims]
    unscored = [f"{p} vs {s}" for p, s in read if cells[(p, s)].get("n", 0) < 1]
    checks.append(
        GateCheck("results", "error", f"cells with no scored conversation: {', '.join(unscored)}")
        if unscored
        else GateCheck("results", "pass", f"{len(read)} cells present, every one scored")
    )
    for p, s in read:
        c = cells[(p, s)]
        infra = int(c.get("infra_failures", 0))
        total = int(c.get("n_conversations", c.get("n", 0) + infra))
        rate = infra / total if total else 1.0
        ok = rate <= max_infra_rate
        checks.append(GateCheck(
            f"infra:{p}|{s}", "pass" if ok else "error",
            f"{infra} of {total} conversations were infrastructure failures ({rate:.1%}; limit {max_infra_rate:.1%})"
            + ("" if ok else ": too many to judge this cell"),
            value=rate, threshold=max_infra_rate,
        ))  # fmt: skip
    if unscored:
        return verdict

    # --- transfer ratio
    if min_transfer is not None:
        checks.append(_transfer_check(results, policy, train_sim, min_transfer, strict))

    # --- regression against a baseline on the held-out simulators
    if baseline_policy is not None and max_drop is not None:
        checks.append(_regression_check(cells, policy, baseline_policy, heldout, max_drop, strict, n_boot, seed))
    if min_transfer is None and max_drop is None:
        # Without a threshold the gate is a health check of the run (complete, scored, infra failures
        # under the limit), as it always was; say so in the verdict, since such a gate passes any policy.
        checks.append(GateCheck(
            "thresholds", "pass",
            "none given: only the run's completeness and infrastructure failures were checked, not the policy; "
            "pass --min-transfer and/or --baseline-policy with --max-drop to judge it",
        ))  # fmt: skip
    return verdict


def _check_options(
    policy: str, min_transfer: float | None, baseline_policy: str | None, max_drop: float | None, max_infra_rate: float
) -> None:
    if not isinstance(policy, str) or not policy.strip():
        raise ConfigError(f"--policy: expected a policy spec of the run, got {policy!r}")
    if min_transfer is not None and (not math.isfinite(min_transfer) or min_transfer < 0):
        raise ConfigError(f"--min-transfer must be a number >= 0, got {min_transfer}")
    if (baseline_policy is None) != (max_drop is None):
        raise ConfigError("--baseline-policy and --max-drop go together: give both or neither")
    if max_drop is not None and (not math.isfinite(max_drop) or max_drop < 0):
        raise ConfigError(f"--max-drop must be a number >= 0, got {max_drop}")
    if not 0 <= max_infra_rate <= 1:
        raise ConfigError(f"--max-infra-rate must be in [0, 1], got {max_infra_rate}")
    if baseline_policy is not None and baseline_policy == policy:
        raise ConfigError(f"--baseline-policy {baseline_policy!r} is the candidate policy itself")


def _structure_problems(results: Any, rows: Sequence[str]) -> list[str]:
    if not isinstance(results, dict):
        return [f"results must be a JSON object, got {type(results).__name__}"]
    if results.get("schema") != SCHEMA:
        return [f"results schema is {results.get('schema')!r}, expected {SCHEMA!r}"]
    for key in ("policies", "simulators", "cells"):
        if not isinstance(results.get(key), list):
            return [f"results field {key!r} is missing or not a list"]
    problems = []
    for p in rows:
        if p not in results["policies"]:
            problems.append(f"policy {p!r} is not in this run (policies: {results['policies']})")
    if problems:
        return problems
    have = {(c.get("policy"), c.get("simulator")) for c in results["cells"] if isinstance(c, dict)}
    missing = [f"{p} vs {s}" for p in rows for s in results["simulators"] if (p, s) not in have]
    if missing:
        problems.append(f"missing cells: {', '.join(missing)}")
    return problems


def _transfer_check(
    results: dict[str, Any], policy: str, train_sim: str | None, min_transfer: float, strict: bool
) -> GateCheck:
    name = "transfer"
    if train_sim is None:
        return GateCheck(
            name,
            "error",
            "the run names no training simulator (--train-sim), so it has no transfer ratio",
            threshold=min_transfer,
        )
    if len(results["simulators"]) < 2:
        return GateCheck(name, "error", "the run has no held-out simulator", threshold=min_transfer)
    entry = next((t for t in results.get("transfer") or [] if t.get("policy") == policy), None)
    if entry is None:
        return GateCheck(
            name, "error", f"no transfer entry for policy {policy!r} in the results", threshold=min_transfer
        )
    ratio, ci = entry.get("transfer_ratio"), entry.get("ci95")
    if ratio is None:
        return GateCheck(
            name, "error", f"transfer ratio undefined: {entry.get('note') or 'unknown reason'}", threshold=min_transfer
        )
    desc = (
        f"held-out reward {_f(entry.get('heldout_reward'))} / training reward {_f(entry.get('train_reward'))} "
        f"on {train_sim} = {_f(ratio)}"
    )
    if strict:
        if not ci or ci[0] is None:
            return GateCheck(
                name,
                "error",
                f"{desc}; strict mode needs a CI and there is none ({entry.get('note') or 'too few tasks'})",
                value=ratio,
                threshold=min_transfer,
            )
        ok = ci[0] >= min_transfer
        msg = f"{desc}; CI lower bound {_f(ci[0])} {'>=' if ok else '<'} {_f(min_transfer)}"
    else:
        ok = ratio >= min_transfer
        msg = f"{desc} {'>=' if ok else '<'} {_f(min_transfer)}"
    return GateCheck(
        name,
        "pass" if ok else "fail",
        msg,
        value=ratio,
        threshold=min_transfer,
        ci95=list(ci) if ci and ci[0] is not None else None,
    )


def _regression_check(
    cells: dict[tuple[str, str], dict[str, Any]],
    policy: str,
    baseline: str,
    heldout: list[str],
    max_drop: float,
    strict: bool,
    n_boot: int,
    seed: int,
) -> GateCheck:
    from collapse_probe.metrics.transfer import cluster_bootstrap_diff

    name = "regression"
    if not heldout:
        return GateCheck(name, "error", "the run has no held-out simulator to compare on", threshold=max_drop)
    cand = heldout_task_rewards([cells[(policy, s)] for s in heldout])
    base = heldout_task_rewards([cells[(baseline, s)] for s in heldout])
    common = [t for t in cand if t in base]
    if not common:
        return GateCheck(
            name, "error", "no task is scored for both policies on every held-out simulator", threshold=max_drop
        )
    # drop = baseline − candidate; the bootstrap is paired by task, so task difficulty cancels
    est = cluster_bootstrap_diff(
        {t: [base[t]] for t in common}, {t: [cand[t]] for t in common}, n_boot=n_boot, seed=seed
    )
    assert est.value is not None and est.lo is not None and est.hi is not None  # defined for >= 1 paired task
    drop = float(est.value)
    ci = [float(est.lo), float(est.hi)]
    desc = (
        f"held-out reward {_f(sum(cand[t] for t in common) / len(common))} vs baseline "
        f"{_f(sum(base[t] for t in common) / len(common))} over {len(common)} tasks: drop {_f(drop)}"
    )
    if strict:
        if len(common) < 2:
            return GateCheck(
                name, "error", f"{desc}; strict mode needs at least 2 tasks for a CI", value=drop, threshold=max_drop
            )
        ok = ci[1] <= max_drop
        msg = f"{desc}; CI upper bound {_f(ci[1])} {'<=' if ok else '>'} {_f(max_drop)}"
    else:
        ok = drop <= max_drop
        msg = f"{desc} {'<=' if ok else '>'} {_f(max_drop)}"
    return GateCheck(name, "pass" if ok else "fail", msg, value=drop, threshold=max_drop, ci95=ci)


def gate_run_dir(run_dir: str | Path, policy: str, **options: Any) -> GateVerdict:
    """:func:`evaluate_gate` on a run directory (or a ``results.json``); a missing or unreadable result
    is a verdict that could not judge (exit 2), not an exception."""
    from collapse_probe.crossplay import load_results

    _check_options(
        policy,
        options.get("min_transfer"),
        options.get("baseline_policy"),
        options.get("max_drop"),
        options.get("max_infra_rate", DEFAULT_MAX_INFRA_RATE),
    )
    try:
        results = load_results(run_dir)
    except ConfigError as exc:
        return GateVerdict(
            policy=policy,
            checks=[GateCheck("results", "error", str(exc))],
            strict=bool(options.get("strict")),
            baseline_policy=options.get("baseline_policy"),
        )
    return evaluate_gate(results, policy, **options)
