"""The live collapse monitor: per training step, how collapsed the simulator is on the states the
rollouts visit, and whether the policy is collapsing onto its mode.

At a fraction of the simulator's turns the monitor *shadow-samples* N − 1 extra replies to the same
state (:mod:`~collapse_probe.integrations.monitor._shadow`); with the training reply they are N draws from
φ(·|s, a^π) at a state the training rollouts actually visit (Definition 3.1). Per step it reports

- the mean collapse error ε̂ over the shadowed states with its bias-aware interval, in two views:
  meaning classes (the audit's partition) and reward classes (what the reward pays for);
- the response entropy (Chao–Wang–Jost, nats) of those states;
- ε̄_H, the accumulated collapse error along the step's rollouts, Σ_t P(turn t reached) · E[ε | turn t]
  (turns stratified: every visited simulator turn has the same chance of being shadowed);
- the simulator-side share of reward variance at the shadowed states (Lemma 3.3: the N replies of
  one state share the agent's prefix, so their reward variance is the simulator's);
- the zero-std group share and the mean train reward of the step's groups, and the zero-std groups by
  cause (``zero_std``: all-success, all-fail, and simulator-caused: the simulator's training replies of
  the group fell in one meaning class at every turn);
- the policy's strategy entropy over its own messages;

and two alarms: **collapse** — a run-wide sequential test of "ε ≥ ε* at the shadowed states" is rejected
(:mod:`~collapse_probe.integrations.monitor._sequential`: a false alarm anywhere in the run has chance ≤ 1 − level);
**strategy entropy** —
over the last ``entropy_window`` steps the policy's strategy entropy fell by ``entropy_drop`` (relative)
while mean train reward rose by ``reward_rise`` (the policy is exploiting the simulator's mode).

One code path for every trainer: adapters (TRL, verl, OpenRLHF, ART, our own) wrap the simulator
with :meth:`CollapseMonitor.wrap`, report turns (:meth:`CollapseMonitor.on_turn` for the rollout
engine, :func:`~collapse_probe.integrations.monitor.play_simulator_turns` for arenas driven turn by turn,
:meth:`CollapseMonitor.record_turn` for anything else) and close each step with
:meth:`CollapseMonitor.end_step`.
"""

from __future__ import annotations

import json
import logging
import math
import os
import random
import reprlib
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NotRequired, TypedDict, cast

import numpy as np

from collapse_probe.core._constraints import Integer, check_value
from collapse_probe.core._jsonl import dumps_line
from collapse_probe.core._sync import run_sync
from collapse_probe.core.limits import MAX_SEED
from collapse_probe.errors import ConfigError
from collapse_probe.integrations.monitor._args import (
    check_extra,
    check_groups,
    check_paths,
    check_rewards,
    check_texts,
    check_turn,
)
from collapse_probe.integrations.monitor._config import MonitorConfig
from collapse_probe.integrations.monitor._rng import rng_isolated
from collapse_probe.integrations.monitor._sequential import CollapseTestState
from collapse_probe.integrations.monitor._shadow import CallableSimulator, ShadowSimulator, shadow_request
from collapse_probe.integrations.monitor._views import meaning_partition, reward_view_for, strategy_partition
from collapse_probe.models import GenerationRequest, derive_seed

if TYPE_CHECKING:
    from collapse_probe.metrics._intervals import IntervalEstimate

logger = logging.getLogger(__name__)

SCHEMA = "collapse-probe/monitor/v1"
MONITOR_ROWS = "monitor.jsonl"


class Alarm(TypedDict):
    """One alarm of a monitor row (``row["alarms"]``; what the ``on_alarm`` callback is handed)."""

    kind: Literal["collapse", "strategy_entropy"]
    """``collapse``: the simulator collapsed (a view's run-wide test rejected ε ≥ ε*); ``strategy_entropy``:
    the policy's strategy entropy fell while the train reward rose."""
    step: int
    value: float
    """The collapse test's e-value, or the ratio of the later to the earlier strategy entropy."""
    threshold: float
    """The value at which the alarm is raised."""
    message: str
    """What happened, in one line."""
    view: NotRequired[str]
    """The collapse alarm's view (``meaning`` or ``reward``)."""
    epsilon_star: NotRequired[float]
    """The collapse alarm's ε*."""
    window: NotRequired[int]
    """The steps the collapse alarm's interval pools."""


class AlarmCallbackError(TypedDict):
    """A failure of the ``on_alarm`` callback (:attr:`CollapseMonitor.alarm_callback_errors_`)."""

    step: int
    alarm: str
    """The alarm's ``kind``."""
    error: str


class IntervalFigures(TypedDict):
    """The mean collapse error over a step's shadowed states with its bias-aware interval
    (``collapse_error``, ``reward_collapse_error``)."""

    estimate: float
    ci95: list[float | None]
    plugin: float
    """The mean plug-in ``1 - max_count / N``."""
    n_states: int
    n: int
    """Replies in all."""
    low_confidence: bool


class NoStates(TypedDict):
    """A view's collapse error at a step with no state it could measure."""

    estimate: None
    ci95: None
    n_states: int
    """0."""


class PooledInterval(IntervalFigures):
    """The mean collapse error over a view's recent shadowed states (``collapse_error_pooled``)."""

    window: NotRequired[int]
    """Steps pooled."""
    steps: NotRequired[list[int]]
    """``[first, last]`` step pooled."""


class ResponseEntropy(TypedDict):
    """The mean response entropy (Chao–Wang–Jost, nats) of the step's shadowed states."""

    estimate: float
    ci95: list[float | None]
    note: str


class StrategyEntropy(TypedDict):
    """The entropy of the policy's strategy messages of the step."""

    estimate: float
    ci95: list[float | None]
    n_messages: int
    n_classes: int
    partition: str
    """The strategy partition the classes are of."""


class AccumulatedError(TypedDict):
    """ε̄_H: the accumulated collapse error along the step's rollouts (``method`` says how)."""

    estimate: float
    turns_covered: int
    """Simulator turns with shadowed states."""
    turns: int
    """Simulator turns reached."""
    method: str


class SimVarianceShare(TypedDict):
    """The simulator-side share of reward variance at the step's shadowed states (the reward view)."""

    share: float | None
    ci: list[float] | None
    within: float
    between: float
    total: float
    n_states: int
    note: str | None


class SamplingState(TypedDict):
    """Where the shadow sampling stands (:meth:`CollapseMonitor.sampling_state`)."""

    phase: float
    """The systematic-sampling phase, in [0, 1)."""
    shadow_counter: int
    """Shadow requests made so far (their seeds derive from it)."""


class MonitorRow(TypedDict):
    """One row of ``monitor.jsonl``: what the monitor measured at a training step (its keys in the
    order written). A caller's ``extra=`` fields follow the row's own."""

    step: int
    collapse_error: IntervalFigures | NoStates
    """The meaning view's mean ε over the shadowed states."""
    reward_collapse_error: IntervalFigures | NoStates
    """The reward view's (no states without a reward view)."""
    response_entropy: ResponseEntropy | None
    accumulated_collapse_error: AccumulatedError | None
    sim_variance_share: SimVarianceShare | None
    strategy_entropy: StrategyEntropy | None
    train_reward: float | None
    """The mean of the step's finite rewards."""
    zero_std_share: float | None
    """The share of the step's groups whose rewards have no spread."""
    shadow_states: int
    simulator_turns: int
    rollouts: int
    shadow_failures: int
    empty_replies: int
    partition: str
    """The meaning view's partition."""
    samples_per_state: int
    zero_std: NotRequired[dict[str, object]]
    """The zero-std groups by cause (:func:`~collapse_probe.metrics.variance.zero_std_by_cause`) and the
    partition the simulator-caused ones were told by (``classes``); with groups only."""
    collapse_error_alarm_test: NotRequired[CollapseTestState]
    """The meaning view's run-wide test after this step (with shadowed states only)."""
    collapse_error_pooled: NotRequired[PooledInterval]
    reward_collapse_error_alarm_test: NotRequired[CollapseTestState]
    reward_collapse_error_pooled: NotRequired[PooledInterval]
    alarms: NotRequired[list[Alarm]]
    """The step's alarms (in every row written)."""
    monitor_seconds: NotRequired[float]
    """What closing the step took (in every row written)."""
    null_reasons: NotRequired[dict[str, str]]
    """Each non-finite number nulled in the row, by its path, with the reason."""


_ALARM_VIEWS: tuple[
    tuple[
        Literal["meaning", "reward"],
        Literal["collapse_error_alarm_test", "reward_collapse_error_alarm_test"],
        Literal["collapse_error_pooled", "reward_collapse_error_pooled"],
    ],
    ...,
] = (
    ("meaning", "collapse_error_alarm_test", "collapse_error_pooled"),
    ("reward", "reward_collapse_error_alarm_test", "reward_collapse_error_pooled"),
)
"""Per view, the row's keys of its run-wide test and of its pooled interval."""


AlarmCallback = Callable[[Alarm, "CollapseMonitor"], None]
"""``callback(alarm, monitor)``: called once per alarm, e.g. to switch the simulator to Verbalized
Sampling or add a population member before the next step."""


@dataclass
class ShadowState:
    """One shadowed simulator state: the training reply and the shadow replies (N in all)."""

    rollout: str
    turn: int
    """Index of this simulator turn within its rollout (0 = the simulator's first reply)."""
    texts: list[str]
    """The training reply first, then the shadow replies."""
    context: Any = None
    """The conversation before the reply (an :class:`~collapse_probe.benchmarks.Episode`), for the reward view."""


@dataclass
class _Step:
    states: list[ShadowState] = field(default_factory=list)
    turns: dict[str, int] = field(default_factory=dict)
    """rollout -> simulator turns seen this step (shadowed or not)."""
    policy_texts: dict[str, str] = field(default_factory=dict)
    """rollout -> the policy's first message (its strategy), from the rollout engine's turns."""
    shadow_failures: int = 0
    empty_replies: int = 0
    rewards: list[float | None] = field(default_factory=list)
    groups: list[Hashable | None] = field(default_factory=list)
    results_texts: list[str] = field(default_factory=list)
    replies: dict[str, dict[int, str]] = field(default_factory=dict)
    """rollout -> simulator turn -> the training reply (for the zero-std groups' causes)."""


def _zero_std_share(rewards: Sequence[float | None], groups: Sequence[Hashable]) -> float | None:
    """Share of the step's groups whose finite rewards have no spread (fewer than 2, or all equal).

    Raises:
        ConfigError: not one group per reward.
    """
    if len(groups) != len(rewards):
        raise ConfigError(f"monitor end_step: {len(groups)} groups for {len(rewards)} rewards")
    by_group: dict[Hashable, list[float]] = {}
    for g, r in zip(groups, rewards, strict=True):
        if r is not None and _finite(r):
            by_group.setdefault(g, []).append(float(r))
    if not by_group:
        return None
    zero = sum(1 for v in by_group.values() if len(v) < 2 or float(np.std(v)) == 0.0)
    return zero / len(by_group)


def _interval_dict(iv: IntervalEstimate) -> IntervalFigures:
    return {
        "estimate": iv.estimate,
        "ci95": list(iv.ci95),
        "plugin": iv.plugin,
        "n_states": iv.n_states,
        "n": iv.n,
        "low_confidence": iv.low_confidence,
    }


def _finite(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


MAX_ALARM_WINDOW = 20
"""Most steps whose shadowed states the collapse alarm pools."""

_ALARM_MARGIN = 0.6
"""The alarm's window holds enough replies that identical ones would put the upper end at this share of ε*."""


def alarm_window(sizes: Sequence[Sequence[int]], epsilon_star: float, level: float = 0.95) -> int:
    """How many of the most recent steps the collapse alarm pools: the fewest whose shadowed states
    would, if every reply of each state agreed, give an upper end of ε at most 0.6 ε* — the exact
    pooled bound 1 − (0.8 α/2)^(1/T) (the upper end's margin) at the T trials their held-out modal shares are credited with
    (:func:`~collapse_probe.metrics._intervals.held_out_trials`) — and all of ``sizes`` when even they
    fall short.

    Args:
        sizes: per step, oldest first, the replies of each of its shadowed states.
        epsilon_star: the alarm's ε*.
        level: the interval's confidence level.

    Example:
        >>> alarm_window([[8, 8]] * 10, 0.2), alarm_window([[8] * 16], 0.2)
        (4, 1)
    """
    from collapse_probe.metrics._intervals import _HELD_OUT_MARGIN, held_out_trials

    need = math.log(_HELD_OUT_MARGIN * (1.0 - level) / 2) / math.log1p(-_ALARM_MARGIN * epsilon_star)
    trials = 0
    for w, step in enumerate(reversed(sizes), start=1):
        trials += int(held_out_trials(np.asarray(step, dtype=np.int64)).sum()) if len(step) else 0
        if trials >= need:
            return w
    return max(1, len(sizes))


class CollapseMonitor:
    """Measures simulator collapse live during RL training (see the module docstring).

    Args:
        config: what to measure and when to alarm (:class:`MonitorConfig`; keyword fields also accepted
            as ``CollapseMonitor(shadow_fraction=0.2, ...)``).
        arena: the benchmark (for the meaning key, the decision labels and the reward view); optional.
        out: run directory for ``monitor.jsonl`` (one row per step), ``config.json`` and ``report.html``.
        reward_view: a :class:`~collapse_probe.integrations.monitor.RewardView` or ``fn(context, text) -> float | None``;
            default: the arena's reward (``None`` without an arena: no reward view).
        on_alarm: optional :data:`AlarmCallback`.
        partitioner: a ready partitioner for the meaning view (overrides ``config.partition``).
        spool: a directory shared by the processes of one training run (trainers whose rollouts run in
            worker processes, as verl's agent loops and OpenRLHF's rollout actors do). A ``worker``
            monitor appends every turn and result it records there instead of keeping it; the
            trainer-side monitor takes everything spooled when it closes a step.
        worker: record into ``spool`` (requires it); a worker never closes steps.
    """

    def __init__(
        self,
        config: MonitorConfig | None = None,
        *,
        arena: Any = None,
        out: str | Path | None = None,
        reward_view: Any = None,
        on_alarm: AlarmCallback | None = None,
        partitioner: Any = None,
        spool: str | Path | None = None,
        worker: bool = False,
        **fields: Any,
    ) -> None:
        if config is None:
            unknown = sorted(set(fields) - set(MonitorConfig.model_fields))
            if unknown:
                raise ConfigError(f"CollapseMonitor got unknown option(s) {unknown}; see MonitorConfig")
            config = MonitorConfig(**fields)
        elif fields:
            raise ConfigError("pass either a MonitorConfig or its fields as keywords, not both")
        self.config = config.validate()
        check_paths(out, spool, on_alarm)
        if worker and spool is None:
            raise ConfigError("a worker monitor needs spool= (the directory the trainer-side monitor reads)")
        self.spool = Path(spool) if spool is not None else None
        self.worker = worker
        self.arena = arena
        self.out = Path(out) if out is not None else None
        self.reward_view = reward_view_for(arena, reward_view)
        self.on_alarm = on_alarm
        self._partitioner = partitioner
        self.partition_, self.notice_ = (
            ("custom", None) if partitioner is not None else meaning_partition(config.partition, arena)
        )
        self.strategy_partition_ = strategy_partition(config.strategy_partition)
        self._strategy_partitioner: Any = None
        self._rng = random.Random(derive_seed(config.seed, 0x5AD0))
        self._phase = self._rng.random()
        """Systematic sampling of turns: a turn is shadowed when the running sum of the fraction crosses an integer."""
        self._shadow_counter = 0
        self._step = _Step()
        self.rows_: list[MonitorRow] = []
        """Every row written so far (this process), in step order."""
        self.alarms_: list[Alarm] = []
        self.alarm_callback_errors_: list[AlarmCallbackError] = []
        """Each failure of the ``on_alarm`` callback: ``{"step", "alarm", "error"}``."""
        self._trackers: list[Any] | None = None
        self._run_dir: Any = None
        self._closed = False
        self._shadowers: list[ShadowSimulator] = []
        self._pool: dict[str, list[tuple[int, list[Any]]]] = {"meaning": [], "reward": []}
        """Per view, (step, class counts of its shadowed states) of the recent steps the collapse alarm pools."""
        self._step_counts: dict[str, list[Any]] = {}
        """The shadow samplers made by :meth:`wrap` (where :meth:`on_turn` looks for shadow replies)."""
        if self.notice_:
            logger.warning(self.notice_)
        if self.out is not None:
            self._open_run_dir()

    # ---- the simulator ------------------------------------------------------------------------

    def wrap(self, simulator: Any, *, cache: bool = False, vs_k: int = 5) -> Any:
        """The simulator with shadow sampling: give it to the trainer in place of the simulator.

        Args:
            simulator: a participant spec (``"smollm2"``, ``"vs:scripted:donor.json"``), a
                :class:`~collapse_probe.simulators.Participant`, a :class:`~collapse_probe.models.ChatModel`,
                or a function ``fn(messages) -> str`` (optionally taking ``seed=``).
            cache: for a spec, serve training replies through the response cache (shadow replies have
                their own seeds, hence their own cache keys).
            vs_k: candidates of a ``vs:`` spec.

        Returns:
            A :class:`~collapse_probe.simulators.Participant` for a spec or a participant, else a
            :class:`ShadowSimulator` (a ChatModel).
        """
        from collapse_probe.simulators import Participant, make_participant

        if isinstance(simulator, str):
            simulator = make_participant(simulator, vs_k=vs_k, cache=cache)
        if isinstance(simulator, Participant):
            shadow = ShadowSimulator(
                simulator.model, self, mode=simulator.mode, vs_k=simulator.vs_k, batching=self._batching(False)
            )
            self._shadowers.append(shadow)
            return Participant(simulator.label, shadow, simulator.mode, simulator.vs_k)
        if hasattr(simulator, "generate") and hasattr(simulator, "spec"):
            shadow = ShadowSimulator(simulator, self, batching=self._batching(False))
        elif callable(simulator):
            shadow = ShadowSimulator(CallableSimulator(simulator), self, batching=self._batching(True))
        else:
            raise ConfigError(
                f"monitor.wrap: expected a model spec, a Participant, a ChatModel or a function (messages) -> str, got {type(simulator).__name__}"
            )
        self._shadowers.append(shadow)
        return shadow

    def _batching(self, is_callable: bool) -> str:
        if self.config.batching != "auto":
            return self.config.batching
        return "separate" if is_callable else "joint"

    def _pick_turns(self, n: int) -> list[int]:
        """Indices of the ``n`` simulator turns of one call to shadow (systematic sampling)."""
        picks = []
        f = self.config.shadow_fraction
        for i in range(n):
            self._phase += f
            if self._phase >= 1.0:
                self._phase -= 1.0
                picks.append(i)
        return picks

    def sampling_state(self) -> SamplingState:
        """Where the shadow sampling stands (the systematic-sampling phase and the shadow seed counter):
        a trainer stores it with its checkpoint so that a resumed run shadows the same turns with the
        same seeds as the run that was not interrupted (see :meth:`restore_sampling_state`)."""
        return {"phase": self._phase, "shadow_counter": self._shadow_counter}

    def restore_sampling_state(self, state: Mapping[str, object]) -> None:
        """Continue the shadow sampling from a :meth:`sampling_state` taken at a checkpoint.

        Raises:
            ConfigError: ``state`` is not such a mapping (naming the field and what was given).
        """
        if not isinstance(state, Mapping):
            raise ConfigError(
                "monitor sampling state: expected the mapping sampling_state() returned ({phase, shadow_counter}), "
                f"got {reprlib.repr(state)}"
            )
        phase, counter = state.get("phase"), state.get("shadow_counter")
        if not isinstance(phase, float) or not 0 <= phase < 1:
            raise ConfigError(f"monitor sampling state: phase must be a number in [0, 1), got {phase!r}")
        check_value(counter, "monitor sampling state: shadow_counter", [Integer(0, most=MAX_SEED)])
        assert isinstance(counter, int)  # checked above
        self._phase, self._shadow_counter = phase, counter

    def _shadow_request(self, request: GenerationRequest) -> GenerationRequest:
        self._shadow_counter += 1
        seed = derive_seed(derive_seed(self.config.seed, 0x5EED), self._shadow_counter)
        return shadow_request(request, self.config.shadow_samples - 1, seed)

    # ---- recording turns ----------------------------------------------------------------------

    def record_turn(
        self,
        rollout: str,
        reply: str,
        shadows: Sequence[str] | None = None,
        *,
        context: Any = None,
        turn: int | None = None,
        failed: bool = False,
    ) -> None:
        """Record one simulator turn of the current step.

        Args:
            rollout: the rollout (conversation) it belongs to.
            reply: the training reply.
            shadows: the shadow replies at this state (``None``: the turn was not shadowed).
            context: the conversation before the reply (an Episode), for the reward view; kept as given,
                so pass a snapshot (the rollout engine and :func:`play_simulator_turns` do).
            turn: the turn's index among the rollout's simulator turns (default: counted here).
            failed: the shadow call failed (counted; the state is not measured).

        Raises:
            ConfigError: an argument of the wrong type (``shadows="abc"`` is not three replies), naming it.
        """
        shadow_texts = check_turn(rollout, reply, shadows, turn, failed)
        if self.worker:
            self._spool_write(
                "turn", (rollout, reply, shadow_texts), {"context": context, "turn": turn, "failed": failed}
            )
            return
        st = self._step
        t = st.turns.get(rollout, 0) if turn is None else turn
        st.turns[rollout] = max(st.turns.get(rollout, 0), t + 1)
        if isinstance(reply, str):
            st.replies.setdefault(rollout, {})[t] = reply.strip()
        if failed:
            st.shadow_failures += 1
            return
        if shadow_texts is None:
            return
        texts = [x for x in [reply, *shadow_texts] if isinstance(x, str) and x.strip()]
        st.empty_replies += 1 + len(shadow_texts) - len(texts)
        if len(texts) < 2:
            st.shadow_failures += 1
            return
        st.states.append(ShadowState(rollout, t, [x.strip() for x in texts], context))

    def record_policy(self, rollout: str, text: str) -> None:
        """Record the policy's strategy message of a rollout (its first message)."""
        check_texts([text], "record_policy text")
        if self.worker:
            self._spool_write("policy", (rollout, text), {})
            return
        self._step.policy_texts.setdefault(rollout, text)

    def record_results(
        self,
        rewards: Sequence[float | None],
        *,
        groups: Sequence[Hashable] | None = None,
        policy_texts: Sequence[str] | None = None,
    ) -> None:
        """Add trajectory rewards of the current step (``None``: not scored), their groups (prompt / task),
        and the policy's strategy messages; :meth:`end_step` uses them when not given its own.

        Raises:
            ConfigError: a reward that is not a finite number or ``None`` (NaN, inf, a string), groups that
                are unhashable or not one per reward, ``policy_texts`` that is not a list of strings.
        """
        rewards = check_rewards(rewards)
        groups = check_groups(groups, len(rewards))
        policy_texts = check_texts(policy_texts, "policy_texts")
        if self.worker:
            self._spool_write("results", (list(rewards),), {"groups": groups, "policy_texts": policy_texts})
            return
        st = self._step
        st.rewards.extend(rewards)
        st.groups.extend(groups if groups is not None else [None] * len(rewards))
        st.results_texts.extend(policy_texts or [])

    def on_turn(self, event: Any) -> None:
        """The rollout engine's ``on_turn`` hook (:class:`~collapse_probe.rollout.TurnEvent`)."""
        key = str(event.spec.key)
        if event.side == "policy":
            self.record_policy(key, event.text)
            return
        shadowed, shadows = False, None
        for m in self._shadowers:
            shadowed, shadows = m.take(event.request)
            if shadowed:
                break
        self._record(key, event.text, shadowed, shadows, getattr(event, "before", None))

    def _record(self, key: str, reply: str, shadowed: bool, shadows: list[str] | None, before: Any) -> None:
        if shadowed:
            self.record_turn(key, reply, shadows, context=before, failed=shadows is None)
        else:
            self.record_turn(key, reply, None, context=before)

    # ---- closing a step -----------------------------------------------------------------------

    def end_step(
        self,
        step: int,
        *,
        rewards: Sequence[float | None] | None = None,
        groups: Sequence[Hashable] | None = None,
        policy_texts: Sequence[str] | None = None,
        extra: Mapping[str, object] | None = None,
        rollouts: Sequence[str] | None = None,
    ) -> MonitorRow:
        """Close training step ``step`` (counted from 0): compute its row, check the alarms, write
        the row to ``monitor.jsonl`` and the trackers, and start the next step. See :meth:`aend_step`."""
        return run_sync(self.aend_step(step, rewards=rewards, groups=groups, policy_texts=policy_texts, extra=extra,
                                       rollouts=rollouts))  # fmt: skip

    async def aend_step(
        self,
        step: int,
        *,
        rewards: Sequence[float | None] | None = None,
        groups: Sequence[Hashable] | None = None,
        policy_texts: Sequence[str] | None = None,
        extra: Mapping[str, object] | None = None,
        rollouts: Sequence[str] | None = None,
    ) -> MonitorRow:
        """Async form of :meth:`end_step`.

        Args:
            step: the training step, from 0.
            rewards: the step's trajectory rewards (``None`` for a rollout that could not be scored).
            groups: the group (prompt / task) of each reward, for the zero-std group share.
            policy_texts: the policy's strategy messages of the step (default: the first policy message
                of each rollout reported through :meth:`on_turn`).
            extra: more fields for the row (e.g. ``{"simulator": spec}``; not the row's own fields).
            rollouts: the rollout (as reported to :meth:`record_turn`) of each reward: with it, the row's
                ``zero_std`` says which zero-std groups the simulator caused (its replies one class).

        Raises:
            ConfigError: an argument of the wrong type or value (a NaN reward, ``policy_texts="abc"``,
                unhashable groups, ``extra={"step": ...}``), naming it.
        """
        check_value(step, "monitor step", [Integer(0)])
        if rewards is not None:
            rewards = check_rewards(rewards)
            groups = check_groups(groups, len(rewards))
        elif groups is not None:
            raise ConfigError("monitor groups: given without rewards (the groups are those of the rewards)")
        policy_texts = check_texts(policy_texts, "policy_texts")
        extra = check_extra(extra)
        if self.worker:
            raise ConfigError("a worker monitor spools its records; close steps with the trainer-side monitor")
        t0 = time.perf_counter()
        self._drain_spool()
        st, self._step = self._step, _Step()
        if rewards is None and st.rewards:
            rewards = st.rewards
            groups = st.groups if all(g is not None for g in st.groups) else None
        if policy_texts is None and st.results_texts:
            policy_texts = st.results_texts
        if rollouts is not None and (rewards is None or len(rollouts) != len(rewards)):
            raise ConfigError(f"monitor end_step: rollouts must give one rollout per reward, got {len(rollouts)}")
        with rng_isolated():
            row = await self._row(step, st, rewards, groups, policy_texts)
            if rewards is not None and groups is not None:
                row["zero_std"] = await self._zero_std(st, rewards, groups, rollouts)
        row["alarms"] = self._alarms(row)
        row["monitor_seconds"] = round(time.perf_counter() - t0, 4)
        if extra:
            # the caller's fields after the row's own (check_extra refused a key the row has): a
            # TypedDict is open, the row with more keys is still a MonitorRow
            row = cast("MonitorRow", {**row, **extra})
        self._write(row)
        for alarm in row["alarms"]:
            logger.warning("monitor alarm at step %d: %s", step, alarm["message"])
            if self.on_alarm is not None:
                self._call_on_alarm(alarm, step)
        return row

    def _call_on_alarm(self, alarm: Alarm, step: int) -> None:
        """Run the ``on_alarm`` callback; one that raises neither stops the training loop nor passes
        unseen: each failure is kept in :attr:`alarm_callback_errors_` and the first is logged."""
        assert self.on_alarm is not None
        try:
            self.on_alarm(alarm, self)
        except Exception as exc:  # the user's callback: the training loop goes on
            detail = f"{type(exc).__name__}: {str(exc).splitlines()[0][:300] if str(exc) else ''}".rstrip(": ")
            self.alarm_callback_errors_.append({"step": step, "alarm": alarm["kind"], "error": detail})
            if len(self.alarm_callback_errors_) == 1:
                logger.warning(
                    "monitor: the on_alarm callback raised at step %d (%s); training goes on, later failures are "
                    "kept in monitor.alarm_callback_errors_ without a message",
                    step,
                    detail,
                )

    async def _row(
        self,
        step: int,
        st: _Step,
        rewards: Sequence[float | None] | None,
        groups: Sequence[Hashable] | None,
        policy_texts: Sequence[str] | None,
    ) -> MonitorRow:
        from collapse_probe.metrics import class_counts

        c = self.config
        states = st.states
        n_rollouts = len(st.turns)
        row: MonitorRow = {
            "step": step,
            "collapse_error": {"estimate": None, "ci95": None, "n_states": 0},
            "reward_collapse_error": {"estimate": None, "ci95": None, "n_states": 0},
            "response_entropy": None,
            "accumulated_collapse_error": None,
            "sim_variance_share": None,
            "strategy_entropy": None,
            "train_reward": None,
            "zero_std_share": None,
            "shadow_states": len(states),
            "simulator_turns": sum(st.turns.values()),
            "rollouts": n_rollouts,
            "shadow_failures": st.shadow_failures,
            "empty_replies": st.empty_replies,
            "partition": self.partition_,
            "samples_per_state": c.shadow_samples,
        }
        if states:
            await self._meaning_view(row, st, step)
        texts = list(policy_texts) if policy_texts is not None else list(st.policy_texts.values())
        texts = [t for t in texts if isinstance(t, str) and t.strip()]
        if texts:
            from collapse_probe.metrics import entropy_interval

            pc = class_counts(self._strategy().partition(texts))
            ent = entropy_interval(pc, level=c.level, seed=c.seed + step)
            row["strategy_entropy"] = {"estimate": ent.estimate, "ci95": list(ent.ci95), "n_messages": len(texts),
                                       "n_classes": int(pc.size), "partition": self.strategy_partition_}  # fmt: skip
        if rewards is not None:
            vals = [float(r) for r in rewards if r is not None and _finite(r)]
            row["train_reward"] = float(np.mean(vals)) if vals else None
            if groups is not None:
                row["zero_std_share"] = _zero_std_share(rewards, groups)
        return row

    async def _meaning_view(self, row: MonitorRow, st: _Step, step: int) -> None:
        """Fill the step's meaning-view figures into ``row``: the mean ε over the shadow states, the
        response entropy, the accumulated ε over turns and (with a reward view) the reward view's ε."""
        from collapse_probe.metrics import (
            class_counts,
            collapse_error_intervals,
            mean_collapse_error_interval,
            mean_entropy_interval,
        )

        c = self.config
        states = st.states
        n_rollouts = len(st.turns)
        labels = await self._meaning().apartition_many([s.texts for s in states])
        counts = [class_counts(lab) for lab in labels]
        self._step_counts["meaning"] = counts
        row["collapse_error"] = _interval_dict(mean_collapse_error_interval(counts, level=c.level, seed=c.seed + step))
        ent = mean_entropy_interval(counts, level=c.level, seed=c.seed + step)
        row["response_entropy"] = {"estimate": ent.estimate, "ci95": list(ent.ci95), "note": ent.note}
        per_state = [iv.estimate for iv in collapse_error_intervals(counts, level=c.level, seed=c.seed + step)]
        by_turn: dict[int, list[float]] = {}
        for s, e in zip(states, per_state, strict=True):
            by_turn.setdefault(s.turn, []).append(e)
        reached = {t: sum(1 for n in st.turns.values() if n > t) for t in range(max(st.turns.values(), default=0))}
        covered = [t for t in reached if t in by_turn]
        row["accumulated_collapse_error"] = {
            "estimate": float(sum(reached[t] / n_rollouts * float(np.mean(by_turn[t])) for t in covered)),
            "turns_covered": len(covered),
            "turns": len(reached),
            "method": "sum over simulator turns t of P(turn t reached) x mean bias-aware ε̂ at turn t",
        }
        if self.reward_view is not None:
            row["reward_collapse_error"], row["sim_variance_share"] = await self._reward_view(states, step)

    async def _zero_std(self, st: _Step, rewards: Sequence[float | None], groups: Sequence[Hashable],
                        rollouts: Sequence[str] | None) -> dict[str, object]:  # fmt: skip
        """The step's zero-std groups by cause: all-success, all-fail, and those where the simulator's training
        replies fell in one meaning class at every turn the group's rollouts reached (simulator-caused)."""
        from collapse_probe.metrics.variance import zero_std_by_cause

        by_group: dict[Hashable, tuple[list[float], list[str]]] = {}
        for i, (g, r) in enumerate(zip(groups, rewards, strict=True)):
            if r is not None and _finite(r):
                vals, keys = by_group.setdefault(g, ([], []))
                vals.append(float(r))
                if rollouts is not None:
                    keys.append(str(rollouts[i]))
        lo, hi = (0.0, 1.0)
        if self.arena is not None:
            from collapse_probe.benchmarks import declared_reward_range

            lo, hi = declared_reward_range(self.arena) or (0.0, 1.0)
        classes: list[Any] = [None] * len(by_group)
        if rollouts is not None:
            ask: list[list[str]] = []
            where: list[tuple[int, int]] = []  # (group, turn) of each list of replies partitioned
            for gi, (vals, keys) in enumerate(by_group.values()):
                seqs = [st.replies.get(k, {}) for k in keys]
                if not seqs or any(not q for q in seqs) or max(vals) - min(vals) > 1e-12:
                    continue
                for t in range(max(len(q) for q in seqs)):
                    texts = [q[t] for q in seqs if t in q]
                    if len(texts) >= 2:
                        ask.append(texts)
                        where.append((gi, t))
                classes[gi] = [[] for _ in keys]
            labels = await self._meaning().apartition_many(ask) if ask else []
            for (gi, t), labs in zip(where, labels, strict=True):
                seqs = [st.replies.get(k, {}) for k in list(by_group.values())[gi][1]]
                it = iter(labs)
                for j, q in enumerate(seqs):
                    if t in q:
                        classes[gi][j].append(next(it))
        out = zero_std_by_cause([v for v, _ in by_group.values()], classes, success=hi, failure=lo)
        return {**out, "classes": f"the simulator's training replies by {self.partition_} partition, turn by turn"}

    async def _reward_view(
        self, states: list[ShadowState], step: int
    ) -> tuple[IntervalFigures | NoStates, SimVarianceShare | None]:
        from collapse_probe.metrics import class_counts, mean_collapse_error_interval, simulator_variance_share

        assert self.reward_view is not None
        c = self.config
        ctx = [s.context for s in states]
        texts = [s.texts for s in states]
        values = await self.reward_view.values(ctx, texts)
        classes = await self.reward_view.classes(ctx, texts, values)
        counts, by_prefix = [], []
        for cls, vals in zip(classes, values, strict=True):
            if all(x is None for x in cls):
                continue  # the reward does not read the reply at this state
            counts.append(class_counts(["not read by the reward" if x is None else x for x in cls]))
            v = [x for x in vals if x is not None]
            if len(v) >= 2:
                by_prefix.append(v)
        view: IntervalFigures | NoStates = {"estimate": None, "ci95": None, "n_states": 0}
        self._step_counts["reward"] = counts
        if counts:
            view = _interval_dict(mean_collapse_error_interval(counts, level=c.level, seed=c.seed + step))
        share: SimVarianceShare | None = None
        if by_prefix:
            vs = simulator_variance_share(by_prefix, n_boot=200, level=c.level, seed=c.seed + step, estimator="anova")
            share = {"share": vs.share, "ci": list(vs.ci) if vs.ci else None, "within": vs.within, "between": vs.between,
                     "total": vs.total, "n_states": vs.n_prefixes, "note": vs.note}  # fmt: skip
        return view, share

    def _meaning(self) -> Any:
        if self._partitioner is None:
            from collapse_probe.metrics.partitioners import partitioner_for

            self._partitioner = partitioner_for(self.partition_, self.arena)
        return self._partitioner

    def _strategy(self) -> Any:
        if self._strategy_partitioner is None:
            from collapse_probe.metrics.partitioners import get_partitioner

            self._strategy_partitioner = get_partitioner(self.strategy_partition_)
        return self._strategy_partitioner

    # ---- the spool (records from worker processes) --------------------------------------------

    def _spool_write(self, op: str, args: tuple[object, ...], kwargs: Mapping[str, object]) -> None:
        import base64
        import pickle
        import socket

        from collapse_probe.core._output import append_line

        assert self.spool is not None
        # pickle, not JSON: a context is an arena's Episode with arena-private state; the spool is
        # written and read by this package on one machine for one run
        blob = base64.b64encode(pickle.dumps((op, args, kwargs))).decode()
        line = (json.dumps({"op": op, "data": blob}) + "\n").encode()
        path = self.spool / f"{socket.gethostname()}-{os.getpid()}-{id(self):x}.jsonl"
        append_line(path, line, "the monitor's spool")  # one write per record: appends never interleave

    def _drain_spool(self) -> None:
        """Replay what worker monitors spooled since the last step into this step."""
        import base64
        import pickle

        if self.spool is None or not self.spool.is_dir():
            return
        for path in sorted(self.spool.glob("*.jsonl")):
            taking = path.with_name(path.name + f".taking-{os.getpid()}")
            try:
                os.replace(path, taking)  # later appends start a new file
            except FileNotFoundError:
                continue
            for raw in taking.read_bytes().splitlines(keepends=True):
                if not raw.endswith(b"\n"):
                    continue  # torn by a killed worker
                try:
                    op, args, kwargs = pickle.loads(base64.b64decode(json.loads(raw)["data"]))
                except (ValueError, KeyError, pickle.UnpicklingError, EOFError):
                    logger.warning("monitor: skipped an unreadable record in %s", path)
                    continue
                handlers: dict[str, Callable[..., None]] = {
                    "turn": self.record_turn,
                    "policy": self.record_policy,
                    "results": self.record_results,
                }
                handlers[op](*args, **kwargs)
            taking.unlink()

    # ---- alarms -------------------------------------------------------------------------------

    def _alarms(self, row: MonitorRow) -> list[Alarm]:
        c = self.config
        out: list[Alarm] = []
        step_counts, self._step_counts = self._step_counts, {}
        for view, test_key, pooled_key in _ALARM_VIEWS:
            counts = step_counts.get(view) or []
            test = self._sequential_test(view, test_key, row, counts)
            pooled = self._pooled_view(view, row["step"], counts)
            if pooled is not None:
                row[pooled_key] = pooled
            e_value = test["e_value"] if test is not None else None
            if test is None or view not in c.alarm_views or e_value is None:
                continue
            if e_value >= test["threshold"]:
                out.append(self._collapse_alarm(view, row["step"], test, e_value, pooled))
        entropy_alarm = self._entropy_alarm(row)
        if entropy_alarm is not None:
            out.append(entropy_alarm)
        self.alarms_.extend(out)
        return out

    def _collapse_alarm(
        self, view: str, step: int, test: CollapseTestState, e_value: float, pooled: PooledInterval | None
    ) -> Alarm:
        """The collapse alarm of one view, its run-wide test having rejected ε ≥ ε*."""
        c = self.config
        where = ""
        if pooled is not None:
            steps, ci = pooled["steps"], pooled["ci95"]
            over = f"step {steps[0]}" if steps[0] == steps[1] else f"steps {steps[0]}–{steps[1]}"
            where = (f"; ε̂ = {pooled['estimate']:.3f}, {int(c.level * 100)}% CI [{ci[0]:.3f}, {ci[1]:.3f}] over "
                     f"{pooled['n_states']} shadowed states of {over}")  # fmt: skip
        return {
            "kind": "collapse",
            "view": view,
            "step": step,
            "value": e_value,
            "threshold": test["threshold"],
            "epsilon_star": c.epsilon_star,
            "window": pooled.get("window", 1) if pooled is not None else 1,
            "message": f"simulator collapsed ({view} view): the run-wide test of ε ≥ ε* = {c.epsilon_star:g} is "
                       f"rejected, e-value {e_value:.3g} ≥ {test['threshold']:g} after {test['looks']} "
                       f"steps (a false alarm anywhere in the run has chance ≤ {1 - c.level:.2g}){where}",
        }  # fmt: skip

    def _entropy_alarm(self, row: MonitorRow) -> Alarm | None:
        """The strategy-entropy alarm: over the last ``entropy_window`` steps the policy's strategy entropy
        fell (beyond its intervals' noise) while the train reward rose; ``None`` when it did not."""
        c = self.config
        history = [*self.rows_, row][-c.entropy_window :]
        strategy = [r.get("strategy_entropy") for r in history]
        ent = [s.get("estimate") if s else None for s in strategy]
        rew = [r.get("train_reward") for r in history]
        if len(history) != c.entropy_window or not all(_finite(x) for x in ent + rew):
            return None
        half = c.entropy_window // 2
        ent_f, rew_f = [float(x) for x in ent if x is not None], [float(x) for x in rew if x is not None]
        h0, h1 = float(np.mean(ent_f[:half])), float(np.mean(ent_f[-half:]))
        r0, r1 = float(np.mean(rew_f[:half])), float(np.mean(rew_f[-half:]))
        # the fall must also clear the sampling noise: the later steps' intervals lie below the earlier ones'
        # (an interval's lower end is always a number)
        los = [(s.get("ci95", [h0, h0]) if s else [h0, h0])[0] for s in strategy[:half]]
        lo0 = float(np.mean([x for x in los if x is not None]))
        # an entropy that is a lower bound only (upper end None) has no upper end to clear the noise with
        his = [(s.get("ci95", [h1, h1]) if s else [h1, h1])[1] for s in strategy[-half:]]
        hi1 = math.inf if any(x is None for x in his) else float(np.mean([x for x in his if x is not None]))
        if not (h0 > 0 and h1 <= (1 - c.entropy_drop) * h0 and hi1 < lo0 and r1 - r0 >= c.reward_rise):
            return None
        return {
            "kind": "strategy_entropy",
            "step": row["step"],
            "value": h1 / h0,
            "threshold": 1 - c.entropy_drop,
            "message": f"the policy's strategy entropy fell from {h0:.3f} to {h1:.3f} nats while train reward rose "
                       f"from {r0:.3f} to {r1:.3f} over the last {c.entropy_window} steps: it is exploiting the "
                       "simulator's mode",
        }  # fmt: skip

    def _sequential_test(
        self,
        view: str,
        key: Literal["collapse_error_alarm_test", "reward_collapse_error_alarm_test"],
        row: MonitorRow,
        counts: list[Any],
    ) -> CollapseTestState | None:
        """The collapse alarm's run-wide sequential test of one view (:mod:`~collapse_probe.integrations.monitor._sequential`),
        continued from the last row before this step (so a resumed run continues the same test), its
        record in ``row[key]``; ``None`` when the step has no shadowed states."""
        from collapse_probe.integrations.monitor._sequential import CollapseTest

        if not counts:
            return None
        c = self.config
        before = [r for r in self.rows_ if int(r.get("step", 0)) < row["step"]]
        test = CollapseTest.from_dict(before[-1].get(key) if before else None, c.epsilon_star, c.level)
        history = [cs for at, cs in self._pool[view] if at < row["step"]]
        record = test.update([[int(x) for x in np.asarray(cs).ravel()] for cs in counts],
                             [[[int(x) for x in np.asarray(cs).ravel()] for cs in h] for h in history])  # fmt: skip
        row[key] = record
        return record

    def _pooled_view(self, view: str, step: int, counts: list[Any]) -> PooledInterval | None:
        """The collapse alarm's interval of one view: the shadowed states of the last steps, pooled.

        One step may hold too few replies to decide: 2 states of 8 identical replies still give an
        upper end of 0.37. The alarm therefore pools the states of the most recent steps, as few as
        the evidence needs (:func:`alarm_window`: enough that identical replies would put the upper end
        at most 0.6 ε*), up to :data:`MAX_ALARM_WINDOW` steps. The simulator may change over those
        steps; the pooled states are then a mix of the steps' simulators, and the interval holds for
        any mix of states, so it bounds the mean ε over the window. It describes the recent steps (the
        row's ``collapse_error_pooled``); the alarm itself is the run-wide test of :meth:`_sequential_test`.
        """
        from collapse_probe.metrics import mean_collapse_error_interval

        c = self.config
        pool = self._pool[view]
        if counts:
            pool.append((step, counts))
        del pool[:-MAX_ALARM_WINDOW]
        if not counts or not pool:
            return None
        sizes = [[int(np.sum(x)) for x in cs] for _, cs in pool]
        window = alarm_window(sizes, c.epsilon_star, c.level)
        recent = pool[-window:]
        states = [x for _, cs in recent for x in cs]
        iv = mean_collapse_error_interval(states, level=c.level, seed=c.seed + step)
        return {**_interval_dict(iv), "window": len(recent), "steps": [recent[0][0], recent[-1][0]]}

    # ---- output -------------------------------------------------------------------------------

    def scalars(self, row: MonitorRow) -> dict[str, float]:
        """The row's numbers as flat ``collapse/…`` scalars (what trackers and trainers' logs get)."""
        p = self.config.prefix
        out: dict[str, float] = {}

        def put(name: str, v: object) -> None:
            if isinstance(v, int | float) and _finite(v):
                out[p + name] = float(v)

        for name, view in (
            ("epsilon", row.get("collapse_error")),
            ("reward_epsilon", row.get("reward_collapse_error")),
        ):
            ci = view.get("ci95") if view else None
            put(name, view.get("estimate") if view else None)
            if ci:
                put(name + "_lo", ci[0])
                put(name + "_hi", ci[1])
        for name, pooled in (
            ("epsilon_pooled_hi", row.get("collapse_error_pooled")),
            ("reward_epsilon_pooled_hi", row.get("reward_collapse_error_pooled")),
        ):
            ci = pooled.get("ci95") if pooled else None
            if ci:
                put(name, ci[1])
        entropy, strategy = row.get("response_entropy"), row.get("strategy_entropy")
        accumulated, share = row.get("accumulated_collapse_error"), row.get("sim_variance_share")
        put("response_entropy", entropy.get("estimate") if entropy else None)
        put("strategy_entropy", strategy.get("estimate") if strategy else None)
        put("accumulated_epsilon", accumulated.get("estimate") if accumulated else None)
        put("sim_variance_share", share.get("share") if share else None)
        put("zero_std_share", row.get("zero_std_share"))
        zs = row.get("zero_std") or {}
        put("zero_std_all_success", zs.get("all_success_share"))
        put("zero_std_all_fail", zs.get("all_fail_share"))
        put("zero_std_sim_caused", zs.get("simulator_caused_share"))
        put("train_reward", row.get("train_reward"))
        put("shadow_states", row.get("shadow_states"))
        put("alarms", len(row.get("alarms", [])))
        return out

    def _open_run_dir(self) -> None:
        from collapse_probe.rollout import RunDir

        assert self.out is not None
        self._run_dir = RunDir(self.out)
        record = {"schema": SCHEMA, "monitor": self.config.to_dict(), "partition": self.partition_,
                  "strategy_partition": self.strategy_partition_, "benchmark": getattr(self.arena, "name", None)}  # fmt: skip
        self._run_dir.create(record, kind="monitor")
        self._run_dir.write_config()
        path = self.out / MONITOR_ROWS
        if path.exists():
            self._run_dir.repair(MONITOR_ROWS)
            # the rows this monitor wrote before (a resumed run)
            rows = cast("list[MonitorRow]", self._run_dir.read_jsonl(MONITOR_ROWS))
            self.rows_ = sorted(rows, key=lambda r: int(r.get("step", 0)))

    def _write(self, row: MonitorRow) -> None:
        from collapse_probe.core._output import null_nonfinite

        row, reasons = null_nonfinite(row)  # a NaN given in extra= or computed: null, with the reason
        if reasons:
            row["null_reasons"] = reasons
        if self.rows_ and int(self.rows_[-1]["step"]) >= row["step"]:
            # a resumed run repeats steps after its last checkpoint: its new rows replace the old ones
            self.rows_ = [r for r in self.rows_ if int(r["step"]) < row["step"]]
            if self._run_dir is not None:
                self._rewrite_rows()
        self.rows_.append(row)
        if self._run_dir is not None:
            self._run_dir.append_jsonl(MONITOR_ROWS, row)
        scalars = self.scalars(row)
        if self.config.trackers:
            if self._trackers is None:
                from collapse_probe.integrations.monitor._trackers import open_trackers

                self._trackers = open_trackers(self.config.trackers, self.out, self.config.to_dict())
            for t in self._trackers:
                t.log(scalars, row["step"])

    def _rewrite_rows(self) -> None:
        assert self.out is not None
        p = self.out / MONITOR_ROWS
        tmp = p.with_name(p.name + ".tmp")
        tmp.write_bytes(b"".join(dumps_line(r, p) for r in self.rows_))
        os.replace(tmp, p)

    def write_report(self) -> Path | None:
        """Write ``report.html`` in the run directory from the rows so far (``None`` without one)."""
        if self.out is None:
            return None
        from collapse_probe.core._reports import write_report

        out: Path = write_report("monitor", self.rows_, self.out / "report.html", config=self.config)
        return out

    def close(self) -> None:
        """Write the report, close the trackers and release the run directory (idempotent)."""
        if self._closed:
            return
        self._closed = True
        self.write_report()
        for t in self._trackers or []:
            t.close()
        if self._run_dir is not None:
            self._run_dir.release()
