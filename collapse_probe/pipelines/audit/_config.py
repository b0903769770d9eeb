"""Audit configuration, constants and the probe-state record."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from collapse_probe.benchmarks import Episode
from collapse_probe.benchmarks._registry import DEFAULT_BENCHMARK
from collapse_probe.benchmarks.p4g import DONATION_GRID, OPENINGS
from collapse_probe.core._constraints import AtMost, Config, Flag, Integer, Number, rule
from collapse_probe.core.limits import (
    MAX_BOOT,
    MAX_ROLLOUTS,
    MAX_SAMPLES_PER_STATE,
    MAX_SEED,
    MAX_STATES,
    MAX_TURNS,
    MAX_VARIANCE_DRAWS,
    MAX_VS_K,
    check_at_most,
    check_n_boot,
)
from collapse_probe.metrics.partitioners import check_partitioner, usable_partitioners
from collapse_probe.rollout.runspec import ArenaSpec, BenchmarkOptions, RolloutConfig

SCHEMA = "collapse-probe/audit/v1"
SAMPLES = "samples.jsonl"
PARTITIONS = usable_partitioners()
"""The registered partitions an audit can use (every one: it has a judge and a benchmark); an installed
partitioner (entry point ``collapse_probe.partitioners``) is accepted too."""
P4G_OPENINGS = OPENINGS
"""Fixed human-style persuader openings of the P4G probe states (:data:`collapse_probe.benchmarks.p4g.OPENINGS`)."""
P4G_AMOUNTS = DONATION_GRID
"""The closed answer set at the P4G elicitation state (:data:`collapse_probe.benchmarks.p4g.DONATION_GRID`)."""
DONATION_BINS = (0.0, 1e-9, 0.5, 1.0, 1.5, 2.0)
"""Bin edges for the L1 distance between donation distributions: $0, (0, .5], (.5, 1], (1, 1.5], (1.5, 2]."""


class AuditConfig(Config):
    """Configuration of an ``audit`` run (the CLI, the Python API and ``config.json`` share it)."""

    sim: str = "smollm2"
    """Simulator spec; ``vs:SPEC`` audits Verbalized Sampling."""
    benchmark: str = DEFAULT_BENCHMARK
    """Benchmark name (a registered one)."""
    policy: str | None = None
    """Policy spec: audit the on-policy states its rollouts against the simulator visit, the opening
    being the policy's own (default: P4G probe states with fixed human-style openings)."""
    states: Annotated[int, Integer(1), AtMost(MAX_STATES, "tasks")] = 2
    """Number of tasks probed (P4G: donor personas), not of states: each task gives two probe states, an
    opening and an elicitation (so 2 tasks are 4 probe states), or with ``--policy`` the simulator turns
    of :attr:`rollouts` on-policy conversations."""
    samples: Annotated[
        int,
        Integer(2, why="a collapse error needs at least 2 responses per state"),
        AtMost(MAX_SAMPLES_PER_STATE, "responses per state"),
    ] = 80
    """The cap on N, the responses sampled per state: the sequential audit draws them in looks of 20, 40,
    60, … and stops at the first look where the verdict is decisive (a cap below 20 makes no look and
    decides nothing; N < 20 is flagged low-confidence). A rerun with a raised cap continues the same test."""
    partition: Annotated[str | None, Flag("--partition", metavar="NAME")] = None
    """Equivalence classes of replies: ``exact``, ``embedding``, ``judge``, ``label`` or an installed
    partitioner. Default: by meaning, i.e. ``judge`` (LLM judge of bidirectional equivalence) when a
    judge is given, else ``embedding`` (sentence encoder, constrained by the benchmark's decision key;
    needs the embed extra, else the benchmark's fallback with a notice and no meaning verdict).
    ``exact``: equal text; ``label``: the benchmark's decision label."""
    judge: str | None = None
    """Judge model spec: it classes replies with ``--partition judge`` (default there: the simulator's
    model) and scores any part of the benchmark's reward that asks a judge (without one, a benchmark scores
    only what it can check itself)."""
    compare_vs: bool = False
    """Also audit the Verbalized-Sampling (or direct) mode on the same states and report the difference."""
    vs_k: Annotated[int, Integer(2, most=MAX_VS_K)] = 5
    """Candidates per Verbalized-Sampling turn."""
    human: str | None = None
    """Directory with the official P4G CSVs: add human-grounded states and compare with the human
    persuadees (with ``annotated_dialog.csv`` there: people's own ε at the matched states too, in
    ``human_reference.people_epsilon``)."""
    rollouts: Annotated[int, Integer(1, most=MAX_ROLLOUTS)] = 1
    """On-policy conversations per task."""
    max_turns: Annotated[int | None, Integer(1, optional=True), AtMost(MAX_TURNS, "rounds of a conversation")] = 3
    """Conversation rounds (``None``: the benchmark's own cap; tau2 has none by default)."""
    temperature: Annotated[float, Number(ge=0)] = 1.0
    """Sampling temperature of the audited responses and the on-policy rollouts."""
    top_p: Annotated[float, Number(gt=0, le=1)] = 1.0
    """Nucleus-sampling mass of the audited responses."""
    seed: Annotated[int, Integer(0, why="the bootstrap intervals are seeded by numpy", most=MAX_SEED)] = 0
    """Seed of the task order and of every sample."""
    epsilon_star: Annotated[float, Number(gt=0, lt=1)] = 0.2
    """ε*: each verdict view (by meaning, where the reward looks) is COLLAPSED when the upper end of the
    CI of its mean ε̂ is below it, NOT COLLAPSED when the lower end is above it."""
    bound_b: Annotated[float, Number(gt=0)] = 1.0
    """B, bound on the trajectory score-function norm, for the gradient-bias bound 2·B·R_max·ε̄_H."""
    r_max: Annotated[float, Number(gt=0)] = 1.0
    """Bound on |reward|, the R_max of the gradient-bias and reward-variance bounds (1 is the P4G range)."""
    variance_share: bool = False
    """Measure the simulator's share of reward variance by nested resampling (extra rollouts; needs a policy)."""
    variance_agents: Annotated[int, Integer(1, most=MAX_VARIANCE_DRAWS)] = 3
    """Agent seeds (agent prefixes) per task for the variance share."""
    variance_sims: Annotated[int, Integer(2, most=MAX_VARIANCE_DRAWS)] = 4
    """Simulator continuations per agent prefix for the variance share."""
    stop_early: bool = True
    """Stop drawing at the first look where every view's verdict is decisive (the sequential audit).
    ``--no-stop-early`` draws all ``--samples`` replies per state, for estimates at a fixed N; the verdict
    is the same sequential test either way."""
    exact: bool = True
    """Compute the exact class distribution where the model scores a closed answer set."""
    vendi: bool = False
    """Embed responses for the Vendi score (always on with the embedding partition)."""
    n_boot: Annotated[int, Integer(100, most=MAX_BOOT)] = 1000
    """Bootstrap resamples for the summary CIs."""
    batch_states: Annotated[int | None, Integer(1, optional=True, most=MAX_STATES)] = None
    """States sampled per ``generate`` call (each state's record is appended as its call finishes);
    ``None``: about 64 responses per call (``max(1, 64 // samples)``), which fills the local
    backend's micro-batches and still moves the progress bar often."""
    personas: str | None = None
    """P4G persona file (JSONL); default: the shipped personas (the arena's ``personas`` option)."""
    arena_options: Annotated[dict[str, Any] | None, BenchmarkOptions(optional=True), Flag("arena_options")] = None
    """The benchmark's other options (fields of its ``Options``, e.g. a data directory); ``max_turns``
    and ``judge`` count as such options where the benchmark takes them."""

    def validate(self) -> AuditConfig:  # type: ignore[override]
        """Check every field once (the declared constraints, the rules below and the partition),
        naming the flag, the allowed values and the value received."""
        super().validate()
        if self.partition is not None:
            check_partitioner(self.partition, "--partition", model=True, benchmark=True)
        return self

    @rule
    def _bootstrap_fits_in_memory(self) -> None:
        check_n_boot(self.n_boot, 1, "--n-boot")

    @rule
    def _rollouts_per_run(self) -> None:
        check_at_most(self.rollouts * self.states, MAX_STATES, "--states x --rollouts =", "rollouts")

    @property
    def rollout(self) -> RolloutConfig:
        """The tasks (``states``), rollouts per task, turns, seed and temperature as the
        :class:`~collapse_probe.rollout.runspec.RolloutConfig` ``play`` and ``crossplay`` share (a copy)."""
        return RolloutConfig(
            tasks=self.states, rollouts=self.rollouts, max_turns=self.max_turns, seed=self.seed,
            temperature=self.temperature,
        )  # fmt: skip

    @property
    def arena(self) -> ArenaSpec:
        """The benchmark and its options (``arena_options``, and ``personas`` where given)."""
        personas = {"personas": self.personas} if self.personas is not None else {}
        return ArenaSpec(self.benchmark, {**(self.arena_options or {}), **personas})

    @property
    def partitioner_name(self) -> str:
        """The partition asked for: ``partition``, else ``judge`` with a judge, else ``embedding``
        (the audit falls back, with a notice, when the embedding extra is not installed)."""
        return self.partition or ("judge" if self.judge else "embedding")


@dataclass
class ProbeState:
    """A simulator turn to audit: the episode up to (not including) the simulator's reply."""

    state_id: str
    source: str
    """``"opening"``, ``"elicitation"``, ``"human"`` or ``"on_policy"``."""
    turn: int
    """Number of earlier simulator turns in the conversation."""
    episode: Episode
    closed_set: bool = False
    """The state asks for a decision: the decision label and the closed answer set's exact scores apply."""
    kind: str | None = None
    """Kind of state, reported separately: ``"opening"``, ``"elicitation"``, ``"turn k"`` (on-policy:
    the k-th simulator turn); ``None``: derived from ``closed_set`` and ``turn``."""
    conversation: str | None = None
    """Key of the on-policy conversation the state comes from."""
    human_reply: str | None = None
    """The human persuadee's actual reply at this prefix (human states)."""


def state_kind(state: ProbeState) -> str:
    """``state.kind``, else ``"elicitation"`` where a decision is asked, ``"opening"`` at the first
    simulator turn and ``"turn k"`` after k earlier simulator turns."""
    if state.kind is not None:
        return state.kind
    if state.closed_set:
        return "elicitation"
    return "opening" if state.turn == 0 else f"turn {state.turn}"
