"""The CI gate: judge a candidate policy from a cross-play run and say pass, fail or *could not judge*.

A verdict is a list of checks, each ``pass``, ``fail`` or ``error`` (could not judge):

- ``results``: the run holds the candidate's (and baseline's) row, with every cell scored and every
  value the gate reads a finite number;
- ``infra:<policy>|<simulator>``: the share of conversations lost to infrastructure failures in each
  cell the verdict reads is at most ``max_infra_rate`` (else the cell cannot be judged: error);
- ``transfer`` (``min_transfer``): the candidate's transfer ratio (held-out / training-simulator
  reward, the held-out simulators pooled) is at least ``min_transfer``;
- ``transfer:<simulator>`` (``min_transfer_each``): each held-out simulator's own transfer ratio is at
  least ``min_transfer_each``, under the same rule (a policy that fails one kind of user fails here even
  where the pooled ratio passes). Under the ``interval`` rule the K checks hold a verdict-level error:
  a check passes when its lower end (one-sided 5 %) clears the threshold, so the verdict passes only
  when all K do (an intersection–union test: a policy below the threshold on any one simulator passes
  in at most 5 % of runs), and a check fails only when its upper end at one-sided 5 %/K lies below it
  (Bonferroni, which is Holm for "any fails"): a policy at or above the threshold on every simulator
  fails the verdict in at most 5 % of runs, whatever K and however the simulators' ratios correlate.
  Beside the pooled check, every held-out simulator's own ratio and interval is listed
  (``per_simulator``) whether or not it is required;
- ``regression`` (``baseline_policy`` + ``max_drop``): the candidate's held-out reward is at most
  ``max_drop`` below the baseline's, paired by task.

How a threshold check decides is the *rule* (``decision``):

- ``interval`` (default): pass when the whole interval at ``level`` (default 90 %: each end is a
  one-sided 95 % bound) clears the threshold, fail when the whole interval lies on the wrong side,
  otherwise could not judge. A policy whose true value is exactly the threshold passes in at most
  5 % of runs and fails in at most 5 % (measured: ``benchmarks/gate_error_rates.py``).
- ``point``: the point estimate against the threshold, as the gate decided before (a policy whose
  true transfer is 0.75 passes a 0.8 gate in 26–43 % of runs, the default in at most 2.4 %).
- ``strict``: the 95 % CI bound must clear the threshold, anything else fails (``--strict``).

The intervals are recomputed from the cells' per-task rewards (tasks are the independent units),
inside the run's declared ``reward_range`` (:mod:`collapse_probe.metrics.transfer`). Exit code: 3 if
the run itself could not be judged (``results`` or an ``infra:`` check), else 1 if any check failed (a
threshold that fails decides the verdict whatever another, undecided one would say), else 3 if any
could not be judged, else 0. Exit code 2 is kept for usage errors (``collapse-probe gate`` with no
threshold, a run directory that does not exist, a policy the run does not have), as every command of
the package exits on bad input, so a CI job tells a mistyped gate from weak evidence.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated, Any, Final, TypedDict, cast

from collapse_probe.core._constraints import Config, Flag, Number, OneOf, rule
from collapse_probe.errors import ConfigError
from collapse_probe.metrics.rewards import conversations, heldout_task_rewards
from collapse_probe.metrics.transfer import Estimate
from collapse_probe.pipelines.crossplay import SCHEMA, transfer_estimate
from collapse_probe.results import Cell, CrossplayResults, GateResults, read_crossplay
from collapse_probe.results._crossplay import reward_outside_range
from collapse_probe.results._gate import (
    GATE_SCHEMA,
    STRICT_LEVEL,
    Decision,
    GateCheck,
    SimulatorTransfer,
    Status,
    format_interval,
    format_number,
)

__all__ = ["GateCheck", "GateConfig", "Status", "evaluate_gate", "exit_code_of", "gate_run_dir"]

DECISIONS: tuple[Decision, ...] = ("interval", "point", "strict")
EXIT_PASS, EXIT_FAIL, EXIT_CANNOT_JUDGE = 0, 1, 3
"""Pass, fail, could not judge (2 is a usage error of ``collapse-probe gate``, as of every command)."""
DEFAULT_MAX_INFRA_RATE = 0.1
DEFAULT_LEVEL = 0.90
"""Two-sided level of the interval the default rule reads: each end is a one-sided 95 % bound."""


class GateConfig(Config):
    """What the gate asks of a candidate policy (the CLI's flags, the keywords of :func:`evaluate_gate`)."""

    policy: str
    """The candidate policy spec (a row of the run)."""
    min_transfer: Annotated[float | None, Number(ge=0, optional=True)] = None
    """Fail below this transfer ratio (held-out / training-simulator reward)."""
    min_transfer_each: Annotated[
        float | None, Number(ge=0, optional=True), Flag("--min-transfer-each", metavar="X")
    ] = None
    """Fail when any one held-out simulator's own transfer ratio is below X (the same rule as :attr:`min_transfer`).
    Under the interval rule the fail side's 5 % is split over the K simulators: a policy at or above X on
    every one fails the verdict in at most 5 % of runs."""
    baseline_policy: str | None = None
    """Compare the candidate's held-out reward with this policy of the same run."""
    max_drop: Annotated[float | None, Number(ge=0, optional=True)] = None
    """Fail when the held-out reward drops more than this below the baseline's (reward units, paired by task)."""
    max_infra_rate: Annotated[float, Number(ge=0, le=1)] = DEFAULT_MAX_INFRA_RATE
    """Could not judge when a cell has more than this share of infrastructure failures."""
    decision: Annotated[Decision | None, OneOf(DECISIONS, optional=True)] = None
    """How a threshold check decides: ``interval`` (default: pass when the whole interval clears the
    threshold, fail when it lies beyond, else could not judge), ``point`` (the point estimate) or
    ``strict`` (the 95 % CI bound must clear, else fail)."""
    level: Annotated[float | None, Number(gt=0, lt=1, optional=True)] = None
    """Two-sided level of the interval the rule reads (default 0.9 for ``interval``: each end a
    one-sided 95 % bound; 0.95 for ``strict`` and ``point``)."""
    strict: bool = False
    """The strict rule (the same as :attr:`decision="strict"`): the 95 % CI bound must clear each threshold,
    anything else fails."""

    @rule
    def _options_agree(self) -> None:
        if not self.policy.strip():
            raise ConfigError(f"--policy: expected a policy spec of the run, got {self.policy!r}")
        if (self.baseline_policy is None) != (self.max_drop is None):
            raise ConfigError("--baseline-policy and --max-drop go together: give both or neither")
        if self.baseline_policy is not None and self.baseline_policy == self.policy:
            raise ConfigError(f"--baseline-policy {self.baseline_policy!r} is the candidate policy itself")
        if self.strict and self.decision not in (None, "strict"):
            raise ConfigError(f"--strict is the strict rule; it contradicts --decision {self.decision}")

    @property
    def rule(self) -> Decision:
        """The rule a threshold check decides by (``strict`` and ``decision`` resolved)."""
        return "strict" if self.strict else (self.decision or "interval")

    @property
    def rule_level(self) -> float:
        """The two-sided level of the interval the rule reads (``level``, else the rule's default)."""
        if self.level is not None:
            return float(self.level)
        return STRICT_LEVEL if self.rule in ("strict", "point") else DEFAULT_LEVEL


def exit_code_of(checks: Sequence[GateCheck]) -> int:
    """3 if the run could not be judged, else 1 if any check failed, else 3 if any could not be judged, else 0."""
    if any(c.status == "error" and (c.name == "results" or c.name.startswith("infra:")) for c in checks):
        return EXIT_CANNOT_JUDGE
    if any(c.status == "fail" for c in checks):
        return EXIT_FAIL
    if any(c.status == "error" for c in checks):
        return EXIT_CANNOT_JUDGE
    return EXIT_PASS


OUTCOMES: Final = {EXIT_PASS: "pass", EXIT_FAIL: "fail", EXIT_CANNOT_JUDGE: "could not judge"}


def _results(
    policy: str,
    checks: list[GateCheck],
    *,
    rule: Decision,
    level: float,
    baseline_policy: str | None,
    per_simulator: Sequence[SimulatorTransfer] = (),
) -> GateResults:
    """The checks as the gate's typed results (``gate --json``, schema ``collapse-probe/gate/v1``)."""
    code = exit_code_of(checks)
    return GateResults.build({
        "schema": GATE_SCHEMA,
        "policy": policy,
        "baseline_policy": baseline_policy,
        "strict": rule == "strict",
        "decision": rule,
        "level": level,
        "outcome": OUTCOMES[code],
        "exit_code": code,
        "checks": [c.model_dump() for c in checks],
        "per_simulator": list(per_simulator),
    })  # fmt: skip


def evaluate_gate(
    results: dict[str, object] | CrossplayResults,
    policy: str,
    *,
    min_transfer: float | None = None,
    baseline_policy: str | None = None,
    max_drop: float | None = None,
    max_infra_rate: float = DEFAULT_MAX_INFRA_RATE,
    min_transfer_each: float | None = None,
    strict: bool = False,
    decision: Decision | None = None,
    level: float | None = None,
) -> GateResults:
    """Judge ``policy`` from cross-play ``results`` (the ``results.json`` object, or its typed model).

    Args:
        results: cross-play results (:func:`collapse_probe.pipelines.crossplay.run_crossplay`); a dictionary is
            parsed through :class:`~collapse_probe.results.CrossplayResults` first, and a value of the
            wrong type in it is a ``results`` check that could not judge, naming the cell and field.
        policy: the candidate policy spec (a row of the matrix).
        min_transfer: smallest acceptable transfer ratio (needs a training simulator in the run).
        min_transfer_each: smallest acceptable transfer ratio of every held-out simulator on its own.
        baseline_policy: the policy to compare against (another row of the same run).
        max_drop: largest acceptable drop of held-out reward below the baseline (reward units).
        max_infra_rate: largest acceptable share of infrastructure failures in a cell the gate reads.
        strict: the strict rule (same as ``decision="strict"``).
        decision: ``"interval"`` (default), ``"point"`` or ``"strict"`` (module docstring).
        level: two-sided level of the interval the rule reads (default 0.90 for ``interval``, 0.95
            for ``strict``).

    Returns:
        The typed verdict (:class:`~collapse_probe.results.GateResults`); ``exit_code`` is 0 (pass),
        1 (fail) or 3 (could not judge).

    Raises:
        ConfigError: contradictory or out-of-range options (these are the caller's error, not the run's).
    """
    config = GateConfig(
        policy=policy, min_transfer=min_transfer, baseline_policy=baseline_policy, max_drop=max_drop,
        max_infra_rate=max_infra_rate, min_transfer_each=min_transfer_each, strict=strict, decision=decision,
        level=level,
    )  # fmt: skip
    rule, lvl = config.rule, config.rule_level
    checks: list[GateCheck] = []
    per_simulator: list[SimulatorTransfer] = []
    _judge_run(
        results, policy, checks, per_simulator, _Judge(rule, lvl), min_transfer=min_transfer,
        baseline_policy=baseline_policy, max_drop=max_drop, max_infra_rate=max_infra_rate,
        min_transfer_each=min_transfer_each,
    )  # fmt: skip
    return _results(policy, checks, rule=rule, level=lvl, baseline_policy=baseline_policy, per_simulator=per_simulator)


def _judge_run(
    results: object,
    policy: str,
    checks: list[GateCheck],
    per_simulator: list[SimulatorTransfer],
    judge: _Judge,
    *,
    min_transfer: float | None,
    baseline_policy: str | None,
    max_drop: float | None,
    max_infra_rate: float,
    min_transfer_each: float | None,
) -> None:
    """Append every check of ``policy`` on ``results`` to ``checks`` (and the held-out simulators'
    own ratios to ``per_simulator``), stopping where the rest cannot be judged."""
    rows = [p for p in (policy, baseline_policy) if p is not None]
    readable = _readable(results, rows, checks)
    if readable is None:
        return
    typed, cells, bounds = readable
    if not _cells_checked(typed, cells, rows, checks, max_infra_rate):
        return
    sims = typed.simulators
    train_sim = typed.train_simulator
    heldout = [s for s in sims if s != train_sim]

    # --- transfer ratio
    if min_transfer is not None:
        checks.append(_transfer_check(typed, cells, policy, train_sim, min_transfer, judge, bounds)[0])
    if min_transfer is not None or min_transfer_each is not None:
        each = heldout if train_sim in sims else []
        _transfer_each(typed, cells, policy, each, checks, per_simulator, judge, bounds, min_transfer_each)

    # --- regression against a baseline on the held-out simulators
    if baseline_policy is not None and max_drop is not None:
        checks.append(_regression_check(cells, policy, baseline_policy, heldout, max_drop, judge, bounds))
    if min_transfer is None and max_drop is None and min_transfer_each is None:
        # Without a threshold the gate is a health check of the run (complete, scored, infra failures
        # under the limit), as it always was; say so in the verdict, since such a gate passes any policy.
        checks.append(GateCheck(
            "thresholds", "pass",
            "none given: only the run's completeness and infrastructure failures were checked, not the policy; "
            "pass --min-transfer and/or --baseline-policy with --max-drop to judge it",
        ))  # fmt: skip


def _readable(
    results: object, rows: list[str], checks: list[GateCheck]
) -> tuple[CrossplayResults, dict[tuple[str, str], Cell], tuple[float, float] | None] | None:
    """``(typed results, cells by (policy, simulator), reward bounds)`` when the run can be judged at all
    (typed, every row's cells there, one model per spec, every reward inside the range); else ``None``,
    with the reason appended to ``checks``."""
    typed, problem = _typed(results)
    problem = problem or _structure_problem(typed, rows)
    if typed is None or problem:
        checks.append(GateCheck("results", "error", problem or "unreadable results"))
        return None
    cells = {(c.policy, c.simulator): c for c in typed.cells}
    mixed = sorted(k for k, v in typed.fingerprints.items() if isinstance(v, list) and len(v) > 1)
    if mixed:
        checks.append(GateCheck(
            "results", "error",
            f"the run mixes outputs of different models under one spec: {', '.join(mixed)} "
            "(the model changed while the run was resumed); rerun into a fresh --out",
        ))  # fmt: skip
        return None
    read = [(p, s) for p in rows for s in typed.simulators]
    bounds = None if typed.reward_range is None else (typed.reward_range[0], typed.reward_range[1])
    bad = next((msg for p, s in read if (msg := reward_outside_range(cells[(p, s)], bounds))), None)
    if bad:
        checks.append(GateCheck("results", "error", bad))
        return None
    return typed, cells, bounds


def _cells_checked(
    typed: CrossplayResults,
    cells: dict[tuple[str, str], Cell],
    rows: list[str],
    checks: list[GateCheck],
    max_infra_rate: float,
) -> bool:
    """Append the check that every cell of ``rows`` is scored and each cell's infrastructure check;
    whether every cell was scored (else nothing more can be judged)."""
    read = [(p, s) for p in rows for s in typed.simulators]
    unscored = [f"{p} vs {s}" for p, s in read if cells[(p, s)].n < 1]
    checks.append(
        GateCheck("results", "error", f"cells with no scored conversation: {', '.join(unscored)}")
        if unscored
        else GateCheck("results", "pass", f"{len(read)} cells present, every one scored")
    )
    for p, s in read:
        c = cells[(p, s)]
        infra = c.infra_failures
        total = c.n + infra if c.n_conversations is None else c.n_conversations
        rate = infra / total if total else 1.0
        ok = rate <= max_infra_rate
        checks.append(GateCheck(
            f"infra:{p}|{s}", "pass" if ok else "error",
            f"{infra} of {total} conversations were infrastructure failures ({rate:.1%}; limit {max_infra_rate:.1%})"
            + ("" if ok else ": too many to judge this cell"),
            value=rate, threshold=max_infra_rate,
        ))  # fmt: skip
    return not unscored


def _transfer_each(
    typed: CrossplayResults,
    cells: dict[tuple[str, str], Cell],
    policy: str,
    each: list[str],
    checks: list[GateCheck],
    per_simulator: list[SimulatorTransfer],
    judge: _Judge,
    bounds: tuple[float, float] | None,
    min_transfer_each: float | None,
) -> None:
    """Each held-out simulator's own transfer ratio (into ``per_simulator``; a check with
    ``--min-transfer-each``)."""
    train_sim = typed.train_simulator
    for s in each:
        check, n_tasks = _transfer_check(
            typed, cells, policy, train_sim, min_transfer_each or 0.0, judge, bounds, s, shared=len(each)
        )
        per_simulator.append(SimulatorTransfer(
            simulator=s, value=check.value, ci95=check.ci95, interval=check.interval, n_tasks=n_tasks,
            status=check.status if min_transfer_each is not None else None,
            note=None if check.value is not None else check.message,
        ))  # fmt: skip
        if min_transfer_each is not None:
            checks.append(check)


def _typed(results: object) -> tuple[CrossplayResults | None, str | None]:
    """The typed results, or why they cannot be read (not a cross-play result; a value of the wrong type)."""
    if isinstance(results, CrossplayResults):
        return results, None
    if not isinstance(results, dict):
        return None, f"results must be a JSON object, got {type(results).__name__}"
    if results.get("schema") != SCHEMA:
        return None, f"results schema is {results.get('schema')!r}, expected {SCHEMA!r}"
    try:
        return read_crossplay(results, "results"), None
    except ConfigError as exc:
        return None, str(exc).removeprefix("results: ")


def _structure_problem(results: CrossplayResults | None, rows: Sequence[str]) -> str | None:
    """Why the run has no verdict for ``rows``: a row that is not a policy of the run, or a missing cell."""
    if results is None:
        return None
    problems = [f"policy {p!r} is not in this run (policies: {results.policies})" for p in rows
                if p not in results.policies]  # fmt: skip
    if problems:
        return "; ".join(problems)
    have = {(c.policy, c.simulator) for c in results.cells}
    missing = [f"{p} vs {s}" for p in rows for s in results.simulators if (p, s) not in have]
    return f"missing cells: {', '.join(missing)}" if missing else None


class _RuleFields(TypedDict, total=False):
    """What a threshold check records of the rule that decided it (:class:`GateCheck`'s fields)."""

    value: float
    threshold: float
    rule: Decision
    ci95: list[float | None] | None
    """The 95 % interval of ``value`` (``None`` when it has neither end)."""
    interval: list[float | None]
    """The interval the rule read, at ``level`` (not under the point rule)."""
    level: float
    fail_level: float


@dataclass(frozen=True)
class _Judge:
    """A threshold decision under one rule (module docstring)."""

    rule: Decision
    level: float

    def __call__(
        self,
        name: str,
        desc: str,
        value: float,
        report: Estimate,
        decide: Estimate,
        threshold: float,
        higher_is_better: bool,
        fail_level: float | None = None,
    ) -> GateCheck:
        """``fail_level``: the two-sided level whose far end ``decide`` carries (the fail side's
        Bonferroni share); ``None`` when both ends are at :attr:`level`."""
        op_ok, op_bad = (">=", "<") if higher_is_better else ("<=", ">")
        near, far = (decide.lo, decide.hi) if higher_is_better else (decide.hi, decide.lo)
        extra: _RuleFields = {"value": value, "threshold": threshold, "rule": self.rule}
        extra["ci95"] = None if report.lo is None and report.hi is None else [report.lo, report.hi]
        if self.rule != "point":
            extra.update({"interval": [decide.lo, decide.hi], "level": self.level})
        interval = f"{self.level:.0%} CI {format_interval([decide.lo, decide.hi])}"
        if fail_level is not None:
            extra["fail_level"] = fail_level
            one_sided = (1 - fail_level) / 2
            interval = (f"interval {format_interval([decide.lo, decide.hi])} ({'lower' if higher_is_better else 'upper'} "
                        f"end one-sided {(1 - self.level) / 2:.1%}, {'upper' if higher_is_better else 'lower'} end "
                        f"one-sided {one_sided:.2%}: the simulators share the verdict's fail error)")  # fmt: skip
        why = f" ({decide.note})" if decide.note else ""

        def clears(bound: float | None) -> bool:
            return bound is not None and (bound >= threshold if higher_is_better else bound <= threshold)

        if self.rule == "point":
            ok = value >= threshold if higher_is_better else value <= threshold
            shown = (
                f"; 95% CI {format_interval([report.lo, report.hi])}"
                if report.lo is not None or report.hi is not None
                else ""
            )
            msg = f"{desc} {op_ok if ok else op_bad} {format_number(threshold)} (rule: point estimate{shown})"
            return GateCheck(name, "pass" if ok else "fail", msg, **extra)
        side = "lower" if higher_is_better else "upper"
        if self.rule == "strict":
            if near is None:
                msg = f"{desc}; strict mode needs a CI {side} bound and there is none{why}"
                return GateCheck(name, "error", msg, **extra)
            ok = clears(near)
            msg = f"{desc}; {interval}: CI {side} bound {format_number(near)} {op_ok if ok else op_bad} {format_number(threshold)} (rule: strict)"
            return GateCheck(name, "pass" if ok else "fail", msg, **extra)
        if clears(near):
            msg = f"{desc}; {interval} clears {format_number(threshold)}: its {side} end {format_number(near)} {op_ok} {format_number(threshold)} (rule: interval)"
            return GateCheck(name, "pass", msg, **extra)
        if far is not None and not clears(far):
            where = "below" if higher_is_better else "above"
            msg = f"{desc}; {interval} lies {where} {format_number(threshold)} (rule: interval)"
            return GateCheck(name, "fail", msg, **extra)
        msg = (
            f"{desc}; could not judge: the {interval} contains {format_number(threshold)}{why} (rule: interval; more tasks or "
            "rollouts narrow it, --decision point compares the point estimate)"
        )
        return GateCheck(name, "error", msg, **extra)


def _transfer_check(
    results: CrossplayResults,
    cells: dict[tuple[str, str], Cell],
    policy: str,
    train_sim: str | None,
    min_transfer: float,
    judge: _Judge,
    bounds: tuple[float, float] | None,
    only: str | None = None,
    shared: int = 1,
) -> tuple[GateCheck, int | None]:
    """The pooled transfer check, or with ``only`` the transfer to that one held-out simulator; and its tasks.

    ``shared``: how many per-simulator checks share the verdict's fail-side error; under the
    ``interval`` rule the upper end that decides a fail is then a one-sided (1 − level)/2/``shared``
    bound (Bonferroni over the simulators), the lower end that decides a pass stays (1 − level)/2."""
    name = "transfer" if only is None else f"transfer:{only}"
    if train_sim is None:
        return GateCheck(
            name,
            "error",
            "the run names no training simulator (--train-sim), so it has no transfer ratio",
            threshold=min_transfer,
        ), None
    if train_sim not in results.simulators:
        return GateCheck(name, "error", f"the training simulator {train_sim!r} is not a column of the run",
                         threshold=min_transfer), None  # fmt: skip
    heldout = [cells[(policy, s)] for s in results.simulators if s != train_sim and (only is None or s == only)]
    if not heldout:
        return GateCheck(name, "error", "the run has no held-out simulator", threshold=min_transfer), None
    train = cells[(policy, train_sim)]
    report, info = transfer_estimate(train, heldout, level=STRICT_LEVEL, reward_range=bounds)
    decide, _ = transfer_estimate(train, heldout, level=judge.level, reward_range=bounds)
    fail_level = None
    if judge.rule == "interval" and shared > 1 and decide is not None:
        fail_level = 1.0 - (1.0 - judge.level) / shared
        upper, _ = transfer_estimate(train, heldout, level=fail_level, reward_range=bounds)
        decide = replace(decide, hi=None if upper is None else upper.hi)
    if report is None or decide is None or report.value is None:
        why = info["note"] or "unknown reason"
        return GateCheck(name, "error", f"transfer ratio undefined: {why}", threshold=min_transfer), info[
            "n_tasks"
        ] or None
    desc = (
        f"{'held-out' if only is None else only} reward {format_number(info['heldout_reward'])} / training reward "
        f"{format_number(info['train_reward'])} on {train_sim} = {format_number(report.value)} over {info['n_tasks']} tasks"
    )
    check = judge(name, desc, report.value, report, decide, min_transfer, higher_is_better=True, fail_level=fail_level)
    return check, info["n_tasks"]


def _regression_check(
    cells: dict[tuple[str, str], Cell],
    policy: str,
    baseline: str,
    heldout: list[str],
    max_drop: float,
    judge: _Judge,
    bounds: tuple[float, float] | None,
) -> GateCheck:
    from collapse_probe.metrics.transfer import paired_mean_diff

    name = "regression"
    if not heldout:
        return GateCheck(name, "error", "the run has no held-out simulator to compare on", threshold=max_drop)
    cand_cells = [cells[(policy, s)] for s in heldout]
    base_cells = [cells[(baseline, s)] for s in heldout]
    cand, base = heldout_task_rewards(cand_cells), heldout_task_rewards(base_cells)
    common = [t for t in cand if t in base]
    if not common:
        return GateCheck(
            name, "error", "no task is scored for both policies on every held-out simulator", threshold=max_drop
        )

    # drop = baseline − candidate, paired by task so that task difficulty cancels
    def drop(level: float) -> Estimate:
        return paired_mean_diff(
            {t: [base[t]] for t in common}, {t: [cand[t]] for t in common}, level, reward_range=bounds,
            n_units=(conversations(base_cells, common), conversations(cand_cells, common)),
        )  # fmt: skip

    report, decide = drop(STRICT_LEVEL), drop(judge.level)
    desc = (
        f"held-out reward {format_number(sum(cand[t] for t in common) / len(common))} vs baseline "
        f"{format_number(sum(base[t] for t in common) / len(common))} over {len(common)} tasks: drop {format_number(report.value)}"
    )
    assert report.value is not None  # defined for >= 1 paired task
    return judge(name, desc, report.value, report, decide, max_drop, higher_is_better=False)


def gate_run_dir(run_dir: str | Path, policy: str, **options: Any) -> GateResults:
    """:func:`evaluate_gate` on a run directory (or a ``results.json``); a missing or unreadable result
    is a verdict that could not judge (exit 3), not an exception."""
    from collapse_probe.results import load

    config = GateConfig(policy=policy, **options)
    try:
        results = cast(CrossplayResults, load(run_dir, kind="crossplay"))
    except ConfigError as exc:
        checks = [GateCheck("results", "error", str(exc))]
        return _results(policy, checks, rule=config.rule, level=config.rule_level,
                        baseline_policy=config.baseline_policy)  # fmt: skip
    return evaluate_gate(results, policy, **options)


def gate(results: CrossplayResults | Mapping[str, object] | str | Path, policy: str, /, **options: Any) -> GateResults:
    """The CI gate as one call (``collapse_probe.gate(...)``): :func:`evaluate_gate` on cross-play
    results, given as the results themselves (typed or their JSON object) or as a run directory /
    ``results.json`` path (:func:`gate_run_dir`). ``options`` are :func:`evaluate_gate`'s
    (``min_transfer``, ``baseline_policy``, ``max_drop``, ``decision``, ``level``, ...).

    Returns:
        The typed results (:class:`~collapse_probe.results.GateResults`, what ``gate --json`` writes):
        ``r.outcome``, ``r.checks``, ``r.per_simulator``; ``r.exit_code`` is what ``collapse-probe gate``
        exits with.
    """
    if isinstance(results, str | Path):
        return gate_run_dir(results, policy, **options)
    if isinstance(results, Mapping):
        results = dict(results)
    return evaluate_gate(results, policy, **options)  # anything else: refused there, in one line


async def gate_async(
    results: CrossplayResults | Mapping[str, object] | str | Path, policy: str, /, **options: Any
) -> GateResults:
    """:func:`gate` for async code (the file read and the arithmetic run in a worker thread)."""
    import asyncio

    return await asyncio.to_thread(gate, results, policy, **options)
