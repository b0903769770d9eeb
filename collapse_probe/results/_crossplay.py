"""``results.json`` of a cross-play run (schema ``collapse-probe/crossplay/v1``): the policy x simulator
reward matrix, transfer ratios and the policies' strategy entropy."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Final, Literal, Required, TypedDict

from pydantic import Field, ValidationError, field_validator, model_validator

from collapse_probe.errors import ConfigError
from collapse_probe.results._base import JSON, Count, Finite, FiniteInterval, ResultsModel, describe_error, expected
from collapse_probe.results._common import Fingerprints, Usage

OpenInterval = Annotated[list[Finite | None], Field(min_length=2, max_length=2)]
"""``[low, high]`` of finite numbers; a ``null`` end is unbounded on that side."""

CROSSPLAY_SCHEMA: Final = "collapse-probe/crossplay/v1"


class Cell(ResultsModel):
    """One cell of the matrix: one policy against one simulator on the run's tasks and rollout seeds.

    Every number the gate reads is typed strictly (a count is an integer >= 0, a reward a finite
    number), so a hand-edited or truncated cell is refused by name rather than judged.
    """

    policy: str
    """Row: the policy spec."""
    simulator: str
    """Column: the simulator spec."""
    n: Count
    """Scored conversations (infrastructure failures and unscored ones excluded)."""
    n_conversations: Count | None = None
    """Conversations recorded, scored or not (absent in runs before it was recorded: ``n + infra_failures``)."""
    n_tasks: Count | None = None
    """Tasks with at least one scored conversation."""
    mean_reward: Finite | None
    """Mean reward of the scored conversations (pooled); ``null`` only when none is scored."""
    ci95: FiniteInterval | None = None
    """95 % CI of the mean over tasks (the clusters), inside the declared reward range; ``null`` with
    fewer than 2 tasks."""
    ci95_method: str | None = None
    """The interval's method, in words."""
    ci95_note: str | None = None
    """Why there is no interval, or why the reward range was not used."""
    success_rate: Finite | None = None
    """Share of scored conversations the arena called a success."""
    infra_failures: Count = 0
    """Conversations lost to infrastructure failures (never scored)."""
    infra_rate: Finite | None = None
    """``infra_failures / n_conversations``."""
    infra_errors: dict[str, Count] = {}
    """Infrastructure error message (first 200 characters) -> how many conversations ended with it."""
    unscored: Count = 0
    """Conversations the arena could not judge (reward ``null`` without an infrastructure error)."""
    task_rewards: dict[str, list[Finite]]
    """Task id -> rewards of its scored conversations, in rollout order (the units of every interval)."""

    @model_validator(mode="after")
    def _consistent(self) -> Cell:
        if self.mean_reward is None and self.n != 0:
            raise ValueError(f"'mean_reward' is None with {self.n} scored conversations; expected a finite number")
        if self.mean_reward is not None and self.n == 0:
            raise ValueError(f"'mean_reward' is {self.mean_reward!r} with no scored conversation; expected null")
        total = sum(len(v) for v in self.task_rewards.values())
        if total != self.n:
            raise ValueError(f"'n' is {self.n} but task_rewards hold {total} rewards")
        return self


class Transfer(ResultsModel):
    """Transfer ratio of one policy: held-out reward / training-simulator reward, paired by task."""

    policy: str
    train_simulator: str
    heldout_simulators: list[str]
    train_reward: Finite | None
    """Mean over the common tasks of the policy's per-task reward on the training simulator."""
    heldout_reward: Finite | None
    """Mean over the common tasks of the per-task reward averaged over the held-out simulators."""
    transfer_ratio: Finite | None
    """``heldout_reward / train_reward``; ``null`` where undefined (the reason in ``note``)."""
    ci95: OpenInterval | None
    """95 % CI over tasks (MOVER-R); ``null`` when it has no upper end (see ``ci95_lower``)."""
    ci95_lower: Finite | None = None
    """Lower end of the CI, also when the upper end is unbounded."""
    method: str | None = None
    """The interval's method, in words."""
    n_tasks: Count
    """Tasks scored on the training and every held-out simulator."""
    note: str | None = None
    """Why the ratio or its interval is not defined."""


class PolicyDiversity(ResultsModel):
    """Strategy entropy of one policy's own messages (the policy-diversity side of collapse)."""

    policy: str
    partitioner: str
    """Partitioner of the policy's messages."""
    estimator: str
    """Entropy estimator (``chao_wang_jost``)."""
    turns: Literal["first", "all"]
    """Which policy turns entered: the opening move, or every turn."""
    n_messages: Count
    n_classes: Count | None
    strategy_entropy: float | None
    """Nats, incl. unseen classes."""
    collapse_error: float | None
    """Plug-in ``1 - max_count / n`` over the policy's classes."""
    low_confidence: bool
    """Fewer messages than the confident-sample threshold."""


class CrossplayResults(ResultsModel):
    """The whole matrix of one cross-play run."""

    schema_: Literal["collapse-probe/crossplay/v1"] = Field(CROSSPLAY_SCHEMA, alias="schema")
    """The results kind and version."""
    version: str | None = None
    """collapse-probe version that wrote the file."""
    benchmark: str
    policies: list[str]
    """Matrix rows."""
    simulators: list[str]
    """Matrix columns."""
    train_simulator: str | None = None
    """The simulator the policies were trained against (``null``: every simulator is held out)."""
    heldout_simulators: list[str] = []
    tasks: list[str] = []
    """Task ids in the run's order."""
    rollouts: int | None = None
    seed: int | None = None
    reward_range: FiniteInterval | None = None
    """The arena's declared ``[low, high]`` reward bounds, low < high (``null``: none declared)."""
    cells: list[Cell]
    heldout_reward: dict[str, float | None] = {}
    """Policy -> mean of its cells' mean rewards over the held-out simulators."""
    transfer: list[Transfer] = []
    """One entry per policy when a training simulator is named."""
    policy_diversity: list[PolicyDiversity] = []
    config: dict[str, JSON] = {}
    """The run's ``CrossplayConfig``."""
    fingerprints: Fingerprints = {}
    usage: Usage = {}

    @field_validator("reward_range")
    @classmethod
    def _ordered(cls, value: list[float] | None) -> list[float] | None:
        if value is not None and not value[0] < value[1]:
            raise ValueError(f"expected [low, high] with low < high, got {value}")
        return value


class CellJSON(TypedDict, total=False):
    """A :class:`Cell` as ``results.json`` holds it: the keys the report's figures read."""

    policy: Required[str]
    simulator: Required[str]
    n: int
    n_tasks: int | None
    mean_reward: float | None
    ci95: list[float] | None
    ci95_method: str | None
    success_rate: float | None
    infra_failures: int


class TransferJSON(TypedDict, total=False):
    """A :class:`Transfer` as ``results.json`` holds it: the keys the report's figures read."""

    policy: Required[str]
    train_reward: float | None
    heldout_reward: float | None
    transfer_ratio: float | None
    ci95: list[float] | None
    """Both ends finite when present (``null`` when the interval has no upper end)."""
    ci95_lower: float | None
    note: str | None


class PolicyDiversityJSON(TypedDict, total=False):
    """A :class:`PolicyDiversity` as ``results.json`` holds it: the keys the report's figures read."""

    policy: Required[str]
    partitioner: str
    estimator: str
    turns: str
    n_messages: int
    n_classes: int | None
    strategy_entropy: float | None
    low_confidence: bool


class CrossplayJSON(TypedDict, total=False):
    """A cross-play ``results.json`` object (:class:`CrossplayResults`, dumped): the keys the report's
    figures and the dashboard read; the others are there too."""

    policies: Required[list[str]]
    simulators: Required[list[str]]
    cells: Required[list[CellJSON]]
    train_simulator: str | None
    heldout_reward: dict[str, float | None]
    transfer: list[TransferJSON]
    policy_diversity: list[PolicyDiversityJSON]


def read_crossplay(data: Any, where: str = "results") -> CrossplayResults:
    """Parse a loaded cross-play ``results.json`` strictly, before anything judges it (the gate, a report).

    Every cell's ``mean_reward`` is a finite number, or null exactly when the cell has no scored
    conversation; counts are integers >= 0; intervals are finite; per-task rewards are lists of finite
    numbers; transfer entries hold finite numbers or null. A NaN, a string or a mean without
    conversations is a corrupt or hand-edited file, refused rather than read as a pass.

    Raises:
        ConfigError: one line naming ``where``, the cell (``cell P vs S``) or entry, and the field.
    """
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: results must be a JSON object, got {type(data).__name__}")
    try:
        return CrossplayResults.parse(data)
    except ValidationError as exc:
        raise ConfigError(f"{where}: {crossplay_error(exc, data)}") from None


def crossplay_error(exc: ValidationError, data: Mapping[str, object]) -> str:
    """The first error of a cross-play result as the gate says it: ``cell P vs S: 'n' is '8'; expected ...``."""
    err = exc.errors(include_url=False)[0]
    loc = tuple(err["loc"])
    items = data.get(str(loc[0])) if loc else None
    if len(loc) < 2 or loc[0] not in ("cells", "transfer") or not isinstance(items, list):
        return describe_error(exc, CrossplayResults, "results")
    item = items[int(loc[1])]
    if not isinstance(item, dict):
        return f"{loc[0]}[{loc[1]}] is {item!r}; expected an object"
    at = (
        f"cell {item.get('policy')} vs {item.get('simulator')}"
        if loc[0] == "cells"
        else f"transfer[{loc[1]}] ({item.get('policy')})"
    )
    return _entry_error(err, loc[2:], item, at)


def _entry_error(err: Any, loc: tuple[Any, ...], item: Mapping[str, object], at: str) -> str:
    """One error inside a cell or transfer entry (``loc`` relative to the entry), naming ``at`` and the field."""
    if not loc:  # a check across fields of the entry
        return f"{at}: {err['msg'].removeprefix('Value error, ')}"
    name = str(loc[0])
    if err["type"] == "missing":
        return f"{at}: {name!r} is missing"
    if name == "task_rewards" and len(loc) > 1:
        path = name + "".join(f"[{p!r}]" if isinstance(p, str) else f"[{p}]" for p in loc[1:])
        return f"{at}: {path} is {err['input']!r}; expected {expected(err)}"
    return f"{at}: {name!r} is {item.get(name)!r}; expected {expected(err)}"


def cell_problem(data: Any, at: str, bounds: tuple[float, float] | None = None) -> str | None:
    """The first value of one cell that cannot be read (NaN, None, a string, a mean without scored
    conversations, a reward outside ``bounds``), in one line starting with ``at``, or ``None``."""
    if not isinstance(data, dict):
        return f"{at} is {data!r}; expected an object"
    try:
        cell = Cell.parse(data)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        return _entry_error(err, tuple(err["loc"]), data, at)
    return reward_outside_range(cell, bounds, at)


def reward_outside_range(cell: Cell, bounds: tuple[float, float] | None, at: str | None = None) -> str | None:
    """The first per-task reward of a cell outside the run's declared reward range, in one line, or ``None``."""
    if bounds is None:
        return None
    at = at or f"cell {cell.policy} vs {cell.simulator}"
    for task, rewards in cell.task_rewards.items():
        for i, r in enumerate(rewards):
            if not bounds[0] <= r <= bounds[1]:
                return (
                    f"{at}: task_rewards[{task!r}][{i}] is {r!r}, outside the run's reward_range "
                    f"[{bounds[0]:g}, {bounds[1]:g}]"
                )
    return None
