"""``crossplay``: the policy x simulator reward matrix, transfer ratios and policy strategy entropy.

Every cell of the matrix (one policy against one simulator on the same tasks and rollout seeds) runs
in *one* engine run: at each turn the engine sends all pending requests for the same model, whatever
the cell, to that model as one batch. Conversations are appended to ``conversations.jsonl`` as they
finish, so a killed run resumes where it stopped.

From the records this module computes (``results.json``, schema ``collapse-probe/crossplay/v1``):

- per cell: mean reward with a 95 % CI over tasks (the clusters), inside the arena's declared reward
  range, success rate, infrastructure failures (excluded from every mean, counted), and the per-task
  rewards the paired intervals need;
- per policy, when a training simulator is named: the *transfer ratio* = mean reward over the
  held-out simulators (every simulator but the training one, each weighted equally) / reward on the
  training simulator, with a 95 % CI over tasks that keeps each task's numerator and denominator
  paired (MOVER-R, :func:`~collapse_probe.metrics.transfer.transfer_ratio`);
- per policy: the *strategy entropy* of the policy's own turns (Chao–Wang–Jost over the classes a
  partitioner finds), the policy-diversity side of collapse: a policy that learned to exploit one
  simulator mode says the same thing to everybody.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, TypedDict

from pydantic import JsonValue

from collapse_probe._version import __version__
from collapse_probe.benchmarks import Arena, declared_reward_range
from collapse_probe.core._callable import config_and_options
from collapse_probe.core._constraints import Flag, OneOf, Specs, rule
from collapse_probe.core._records import INFRA_ERROR, ConversationRecord, record_fingerprints
from collapse_probe.core.limits import MAX_CONVERSATIONS, check_at_most
from collapse_probe.errors import ConfigError
from collapse_probe.metrics.partitioners import check_partitioner, usable_partitioners
from collapse_probe.metrics.rewards import CellStats, cell_summary, conversations, heldout_task_rewards, task_means
from collapse_probe.metrics.strategy import EntropyTurns, StrategyEntropy, policy_strategy_entropy
from collapse_probe.metrics.transfer import Estimate
from collapse_probe.models._usage import start_run_usage
from collapse_probe.results import Cell, CrossplayResults
from collapse_probe.rollout import EngineConfig, RunDir, make_specs, run_conversations
from collapse_probe.rollout.runspec import ArenaSpec, RunConfig, arena_record
from collapse_probe.simulators import Participant, vs_setting

SCHEMA = "collapse-probe/crossplay/v1"
STRATEGY_PARTITIONERS = usable_partitioners(model=False, benchmark=False)
"""Registered partitioners of policy messages: they need no model of their own (``judge`` needs one)
and no benchmark hook (``label`` reads simulator replies); an installed one that needs neither is
accepted too."""


class CrossplayConfig(RunConfig):
    """Configuration of a cross-play run (the CLI, the Python API and ``config.json`` share it): the
    matrix's policies and simulators, and the rollout and arena fields of
    :class:`~collapse_probe.rollout.runspec.RunConfig` (the tasks are the same in every cell, the seed of the
    task order and of every conversation is shared by all cells; ``max_live``, an execution setting, is
    recorded beside the config by :func:`run_crossplay_async`)."""

    policies: Annotated[list[str], Specs(1, distinct=True, name="policies"), Flag("--policies")] = ["smollm2"]
    """Policy (agent / persuader) specs, one matrix row each."""
    simulators: Annotated[list[str], Specs(1, distinct=True, name="simulators"), Flag("--sims")] = [
        "smollm2",
        "vs:smollm2",
    ]
    """Simulator (user / persuadee) specs, one matrix column each; ``vs:SPEC`` for Verbalized Sampling."""
    train_simulator: Annotated[str | None, Flag("--train-sim")] = None
    """The simulator the policies were trained against (must be one of :attr:`simulators`); the others are
    held out. ``None``: no transfer ratios, and every simulator counts as held out."""
    partitioner: Annotated[str, Flag("--partition", "--partitioner", metavar="NAME")] = "exact"
    """Partitioner of the policy's messages for the strategy entropy (``exact``, ``embedding``, ...)."""
    entropy_turns: Annotated[EntropyTurns, OneOf(("first", "all"))] = "first"
    """Which policy turns enter the strategy entropy: the opening move (``first``) or every turn (``all``)."""

    def to_dict(self) -> dict[str, JsonValue]:
        """JSON-ready copy, as ``config.json`` and ``results.json`` record it (``max_live``, an execution
        setting, is recorded beside it by :func:`run_crossplay_async`)."""
        return self.model_dump(mode="json", exclude={"max_live"})

    def validate(self) -> CrossplayConfig:  # type: ignore[override]
        """Check the configuration (the fields' declared constraints, the rules below and the partitioner).

        Raises:
            ConfigError: naming the field (flag), what was expected and what was received.
        """
        super().validate()
        check_partitioner(self.partitioner, "--partitioner", "the policy strategy entropy")
        return self

    @rule
    def _train_simulator_among_simulators(self) -> None:
        if self.train_simulator is not None and self.train_simulator not in self.simulators:
            raise ConfigError(
                f"--train-sim {self.train_simulator!r} is not among --sims {list(self.simulators)}; "
                "the training simulator must be one of the matrix columns"
            )

    @rule
    def _conversations_per_run(self) -> None:
        n_conv = self.tasks * self.rollouts * len(self.policies) * len(self.simulators)
        check_at_most(n_conv, MAX_CONVERSATIONS, "--tasks x --rollouts x cells =", "conversations")

    @property
    def heldout_simulators(self) -> list[str]:
        """Every simulator but the training one (all of them when there is none)."""
        return [s for s in self.simulators if s != self.train_simulator]


# ------------------------------------------------------------------------------------------------- pipeline


def arena_spec(config: CrossplayConfig) -> ArenaSpec:
    """The run's arena: the benchmark, ``max_turns`` and the benchmark's options among ``extra`` (the
    fields of its ``Options``; other entries of ``extra`` are only recorded)."""
    return ArenaSpec.from_dict({**(config.extra or {}), "benchmark": config.benchmark, "max_turns": config.max_turns})


def run_crossplay(config: CrossplayConfig, **kwargs: Any) -> CrossplayResults:
    """Synchronous :func:`run_crossplay_async` (same arguments); also works inside a running event loop
    such as a Jupyter notebook's."""
    from collapse_probe.core._sync import run_sync

    return run_sync(run_crossplay_async(config, **kwargs))


async def run_crossplay_async(
    config: CrossplayConfig,
    *,
    arena: Arena | None = None,
    participants: dict[str, Participant] | None = None,
    out: str | Path | None = None,
    progress: bool = True,
    vs_k: int = 5,
    cache: bool = True,
    report: bool = True,
    max_live: int | None = None,
    fresh: bool = False,
    keep_failed: bool = False,
) -> CrossplayResults:
    """Run the whole policy x simulator matrix in one engine run and compute its results.

    Args:
        config: what to run.
        arena: the benchmark (default: built from :func:`arena_spec` by the shared arena builder).
        participants: label -> participant for every policy and simulator spec (default: built with
            :func:`~collapse_probe.simulators.make_participant`).
        out: run directory; conversations already recorded there are not run again (resume), and
            ``results.json`` and ``report.html`` are written there.
        progress: show a progress bar.
        vs_k: candidates per Verbalized-Sampling turn when participants are built here. Recorded in
            ``config.json`` (the participants' value); a resume with another value is refused, naming it.
        cache: serve samples through the response cache when participants (or the arena) are built
            here; give the value they were built with otherwise. Recorded
            in ``config.json``; a run may resume with another value (cached answers are keyed on the
            model's fingerprint and the request, so they are the answers the run would get).
        report: write ``report.html`` (needs ``out``).
        max_live: at most this many conversations in flight (``None``: ``config.max_live``, whose own
            ``None`` is the whole matrix at once). An
            execution setting, recorded in ``config.json``: a run may resume with another value (every
            conversation has its own seed).
        fresh: start over in ``out`` (the previous run's files move to ``out/.previous/``).
        keep_failed: on resume, keep conversations that ended in an infrastructure failure instead
            of running them again.

    Returns:
        The typed results (:class:`~collapse_probe.results.CrossplayResults`; also written to
        ``out/results.json``).

    Raises:
        ConfigError: bad configuration, an unknown spec, or a run directory of another configuration.
    """
    config.validate()
    max_live = config.max_live if max_live is None else max_live
    labels = list(dict.fromkeys([*config.policies, *config.simulators]))
    if participants is None:
        from collapse_probe.simulators import make_participant

        participants = {s: make_participant(s, vs_k=vs_k, cache=cache) for s in labels}
    missing = [s for s in labels if s not in participants]
    if missing:
        raise ConfigError(f"no participant given for spec(s) {missing}")
    if arena is None:
        arena = arena_spec(config).build(labels, cache=cache)

    run_dir = None
    if out is not None:
        from collapse_probe.core._identity import participant_fingerprints

        run_dir = RunDir(out)
        fps = participant_fingerprints({s: participants[s] for s in labels})
        record = {
            **config.to_dict(),
            "arena": arena_record(arena),
            "version": __version__,
            "vs_k": vs_setting(participants[s] for s in labels),
            "max_live": max_live,
            "cache": cache,
        }
        run_dir.create(record, kind="crossplay", fingerprints=fps, fresh=fresh, resumable=("cache",))
    usage = start_run_usage(out)
    tasks = arena.load_tasks(config.tasks, seed=config.seed)
    specs = make_specs(tasks, config.policies, config.simulators, config.rollouts, config.seed)
    records = await run_conversations(
        arena,
        specs,
        participants,
        config=EngineConfig(temperature=config.temperature, progress=progress, max_live=max_live),
        run_dir=run_dir,
        retry_infra_failures=not keep_failed,
    )

    typed = CrossplayResults.build(
        {
            **crossplay_results(
                records, config, task_ids=[t.task_id for t in tasks], reward_range=declared_reward_range(arena)
            ),
            "usage": usage.finish(),
        }
    )
    if run_dir is not None:
        run_dir.write_results(typed)
        if report:
            from collapse_probe.core._reports import write_report

            write_report("crossplay", typed.to_json(), run_dir.path / "report.html")
    return typed


# ------------------------------------------------------------------------------------------------- results


def crossplay_results(
    records: Sequence[ConversationRecord],
    config: CrossplayConfig,
    *,
    task_ids: Sequence[str] | None = None,
    reward_range: tuple[float, float] | None = None,
) -> CrossplaySummary:
    """The ``results.json`` content for conversation records of a cross-play run (a pure function).

    Args:
        records: conversation records (as the engine writes them).
        config: the run's configuration.
        task_ids: task order for the per-task rewards (default: order of first appearance).
        reward_range: the arena's declared reward bounds
            (:func:`~collapse_probe.benchmarks.declared_reward_range`); intervals stay inside them.

    Returns:
        The results dictionary (schema :data:`SCHEMA`).
    """
    config.validate()
    if task_ids is None:
        task_ids = list(dict.fromkeys(r.task_id for r in records))
    by_cell: dict[tuple[str, str], list[ConversationRecord]] = {}
    for r in records:
        by_cell.setdefault((r.policy, r.simulator), []).append(r)

    cells: list[CellStats] = []
    for p in config.policies:
        for s in config.simulators:
            cells.append(cell_summary(by_cell.get((p, s), []), p, s, task_ids, reward_range=reward_range))
    cell_index = {(c["policy"], c["simulator"]): c for c in cells}

    transfer: list[TransferRow] = []
    if config.train_simulator is not None:
        for p in config.policies:
            transfer.append(
                policy_transfer(
                    cell_index[(p, config.train_simulator)],
                    [cell_index[(p, s)] for s in config.heldout_simulators],
                    reward_range=reward_range,
                )
            )

    diversity: list[StrategyEntropy] = []
    for p in config.policies:
        diversity.append(
            policy_strategy_entropy(
                [r for r in records if r.policy == p and r.status != INFRA_ERROR],
                p,
                partitioner=config.partitioner,
                turns=config.entropy_turns,
            )
        )

    heldout: dict[str, float | None] = {}
    for p in config.policies:
        means = [cell_index[(p, s)]["mean_reward"] for s in config.heldout_simulators]
        heldout[p] = _mean_or_none(means)

    return {
        "schema": SCHEMA,
        "version": __version__,
        "benchmark": config.benchmark,
        "policies": list(config.policies),
        "simulators": list(config.simulators),
        "train_simulator": config.train_simulator,
        "heldout_simulators": config.heldout_simulators,
        "tasks": list(task_ids),
        "rollouts": config.rollouts,
        "seed": config.seed,
        "reward_range": list(reward_range) if reward_range is not None else None,
        "cells": cells,
        "heldout_reward": heldout,
        "transfer": transfer,
        "policy_diversity": diversity,
        "config": config.to_dict(),
        "fingerprints": record_fingerprints(records),
    }


class TransferMeans(TypedDict):
    """The means a transfer ratio divides, over the tasks scored in every cell it reads."""

    train_reward: float | None
    heldout_reward: float | None
    n_tasks: int
    note: str | None
    """Why there is no ratio, or what limits its interval."""


class TransferRow(TransferMeans):
    """One policy's transfer ratio (``results.json``'s ``transfer``)."""

    policy: str
    train_simulator: str
    heldout_simulators: list[str]
    transfer_ratio: float | None
    ci95: list[float] | None
    ci95_lower: float | None
    """The interval's lower end (set also when the upper end is unbounded)."""
    method: str | None


class CrossplaySummary(TypedDict):
    """The ``results.json`` object of a cross-play run (schema :data:`SCHEMA`) before
    :class:`~collapse_probe.results.CrossplayResults` checks it (and the run's ``usage`` joins it)."""

    schema: str
    version: str
    benchmark: str
    policies: list[str]
    simulators: list[str]
    train_simulator: str | None
    heldout_simulators: list[str]
    tasks: list[str]
    rollouts: int
    seed: int
    reward_range: list[float] | None
    cells: list[CellStats]
    heldout_reward: dict[str, float | None]
    """Policy -> its mean reward over the held-out simulators (``None`` where a cell has none)."""
    transfer: list[TransferRow]
    policy_diversity: list[StrategyEntropy]
    """Each policy's strategy entropy (:func:`~collapse_probe.metrics.strategy.policy_strategy_entropy`)."""
    config: dict[str, JsonValue]
    fingerprints: dict[str, str | list[str]]


CellData = Mapping[str, object] | Cell
"""A cell of the matrix: its JSON object or the typed :class:`~collapse_probe.results.Cell`."""


def transfer_estimate(
    train_cell: CellData,
    heldout_cells: Sequence[CellData],
    *,
    level: float = 0.95,
    reward_range: tuple[float, float] | None = None,
) -> tuple[Estimate | None, TransferMeans]:
    """Transfer ratio of one policy with its interval at ``level`` (the computation behind
    :func:`policy_transfer`, which the gate repeats at its own level).

    Returns:
        The estimate (``None`` when no task is scored in every cell) and the means it divides:
        ``{"train_reward", "heldout_reward", "n_tasks", "note"}``.
    """
    from collapse_probe.metrics.transfer import transfer_ratio

    info = TransferMeans(train_reward=None, heldout_reward=None, n_tasks=0, note=None)
    if not heldout_cells:
        info["note"] = "no held-out simulator"
        return None, info
    train_t = task_means(train_cell)
    heldout_t = heldout_task_rewards(heldout_cells)
    common = [t for t in train_t if t in heldout_t]
    if not common:
        info["note"] = "no task is scored on the training and every held-out simulator"
        return None, info
    est = transfer_ratio(
        {t: [heldout_t[t]] for t in common},
        {t: [train_t[t]] for t in common},
        level=level,
        reward_range=reward_range,
        n_units=(conversations(heldout_cells, common), conversations([train_cell], common)),
    )
    info = TransferMeans(
        train_reward=sum(train_t[t] for t in common) / len(common),
        heldout_reward=sum(heldout_t[t] for t in common) / len(common),
        n_tasks=len(common),
        note=est.note,
    )
    return est, info


def policy_transfer(
    train_cell: CellStats,
    heldout_cells: Sequence[CellStats],
    *,
    reward_range: tuple[float, float] | None = None,
) -> TransferRow:
    """Transfer ratio of one policy: held-out reward / training-simulator reward, with a task-cluster CI.

    Per task, the training reward is the task's mean over rollouts on the training simulator and
    the held-out reward the mean over held-out simulators of the task's mean on each (every simulator
    weighs the same). Tasks scored in every one of these cells enter; the ratio is
    mean_task(held-out) / mean_task(training), and the 95 % CI keeps a task's training and held-out
    values together (MOVER-R over tasks, inside ``reward_range`` when the arena declares one:
    :func:`~collapse_probe.metrics.transfer.transfer_ratio`). With no infrastructure failures these
    means equal the cells' mean rewards. A training reward of 0 makes the ratio undefined: it is then
    ``None`` with the reason in ``note``, never a made-up number; a training reward whose interval
    reaches 0 leaves the CI without an upper end (``ci95`` ``None``, ``ci95_lower`` set, a ``note``).
    """
    est, info = transfer_estimate(train_cell, heldout_cells, level=0.95, reward_range=reward_range)
    return TransferRow(
        policy=train_cell["policy"],
        train_simulator=train_cell["simulator"],
        heldout_simulators=[c["simulator"] for c in heldout_cells],
        train_reward=info["train_reward"],
        heldout_reward=info["heldout_reward"],
        transfer_ratio=est.value if est else None,
        ci95=[est.lo, est.hi] if est and est.lo is not None and est.hi is not None else None,
        ci95_lower=est.lo if est else None,
        method=est.method if est else None,
        n_tasks=info["n_tasks"],
        note=info["note"],
    )


def _mean_or_none(values: Sequence[float | None]) -> float | None:
    present = [float(v) for v in values if v is not None and not math.isnan(v)]
    if not values or len(present) < len(values):
        return None
    return sum(present) / len(present)


def cell_problem(
    c: Mapping[str, object], policy: str, sim: str, bounds: tuple[float, float] | None = None
) -> str | None:
    """The first value of a cross-play cell that cannot be read (NaN, None, a string, a mean without
    scored conversations, a reward outside the declared range...), in one line, or ``None``: the cell
    parsed through :class:`~collapse_probe.results.Cell`, the one check of a cell."""
    from collapse_probe.results._crossplay import cell_problem as problem

    return problem(dict(c), f"cell {policy} vs {sim}", bounds)


def crossplay(
    config: CrossplayConfig | Mapping[str, object] | None = None, /, *, out: str | Path | None = None, **kwargs: Any
) -> CrossplayResults:
    """The cross-play matrix as one call (``collapse_probe.crossplay(...)``): :func:`run_crossplay`.

    Args:
        config: a :class:`CrossplayConfig` (or a mapping of its fields); ``None`` for the defaults.
        out: the run directory (``None``: nothing is written).
        **kwargs: fields of :class:`CrossplayConfig` (they override ``config``'s), then the options of
            :func:`run_crossplay_async` (``arena``, ``participants``, ``vs_k``, ``cache``, ``report``, ...).

    Returns:
        The typed results (:class:`~collapse_probe.results.CrossplayResults`, what ``results.json``
        holds): ``m.cells[0].mean_reward``; ``m.to_json()`` gives its JSON object.
    """
    cfg, options = config_and_options(
        CrossplayConfig, config, kwargs, what="collapse_probe.crossplay", options_of=run_crossplay_async
    )
    return run_crossplay(cfg, out=out, **options)


async def crossplay_async(
    config: CrossplayConfig | Mapping[str, object] | None = None, /, *, out: str | Path | None = None, **kwargs: Any
) -> CrossplayResults:
    """:func:`crossplay` for async code: ``await collapse_probe.crossplay_async(...)``."""
    cfg, options = config_and_options(
        CrossplayConfig, config, kwargs, what="collapse_probe.crossplay_async", options_of=run_crossplay_async
    )
    return await run_crossplay_async(cfg, out=out, **options)
