"""Labelled material for meaning partitions in domains that have no labelled runs.

``collapse_probe/data/meaning/`` ships two files written for this project (see its ``README.md``):

- ``pairs.jsonl``: two customer replies at one point of a conversation that either differ in what the
  agent must act on (``contrast``) or say the same thing in other words (``paraphrase``);
- ``states.jsonl``: states in the format of the labelled τ2 states (several replies at one
  conversation prefix, ``labels`` their meaning classes numbered in order of first appearance), with
  a second, blind labelling in ``labels_second``.

Both are training and evaluation material for a meaning partitioner; the readers here turn every
line into a typed record and refuse a malformed line in one sentence that names the file, the line and
the field. :func:`read_labelled_states` reads any ``states.jsonl`` of that format (the τ2 sets too).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypedDict, cast

from collapse_probe.core._files import iter_json_lines
from collapse_probe.core._resources import dataset_path
from collapse_probe.errors import ConfigError

PairKind = Literal["contrast", "paraphrase"]
PAIR_KINDS: tuple[str, ...] = ("contrast", "paraphrase")
DIFFERS_IN: tuple[str, ...] = (
    "item", "option", "polarity", "identifier", "quantity", "date", "request", "condition", "person", "none",
)  # fmt: skip
"""What a contrast pair changes; ``none`` for a paraphrase (and only for one)."""
ROLES: tuple[str, ...] = ("system", "assistant", "user", "tool")
"""Roles a prefix turn may have (the shipped material uses ``assistant`` and ``user`` only)."""


@dataclass(frozen=True)
class Turn:
    """One message of the conversation before the reply."""

    role: Literal["system", "assistant", "user", "tool"]
    content: str


@dataclass(frozen=True)
class MeaningPair:
    """Two replies at one conversation prefix, labelled as differing in meaning or not."""

    id: str
    domain: str
    prefix: tuple[Turn, ...]
    a: str
    b: str
    kind: PairKind
    """``contrast``: the agent's correct next action differs; ``paraphrase``: it is the same."""
    differs_in: str
    """What the contrast changes (one of :data:`DIFFERS_IN`), ``none`` for a paraphrase."""
    note: str = ""
    kind_second: PairKind | None = None
    """The kind given by a second, blind pass (``None`` where there was none)."""

    @property
    def same(self) -> bool:
        """Whether ``a`` and ``b`` belong to one meaning class (the first pass's kind)."""
        return self.kind == "paraphrase"


@dataclass(frozen=True)
class MeaningState:
    """Replies of a user simulator at one conversation prefix and their meaning classes."""

    state_id: str
    source: str
    simulator: str
    domain: str
    task_id: str
    user_turn: int
    """Number of user turns in ``prefix``."""
    prefix: tuple[Turn, ...]
    replies: tuple[str, ...]
    labels: tuple[int, ...]
    """Meaning class of each reply, numbered 0, 1, 2, ... in order of first appearance."""
    labels_second: tuple[int, ...] | None = None
    """The classes given by a second, independent pass (``None`` where there was none)."""
    note: str = ""


@dataclass(frozen=True)
class MeaningMaterial:
    """The shipped pairs and states."""

    pairs: tuple[MeaningPair, ...]
    states: tuple[MeaningState, ...]

    def domains(self) -> list[str]:
        """The domains present, sorted."""
        return sorted({p.domain for p in self.pairs} | {s.domain for s in self.states})


def _field(
    rec: Mapping[str, object], name: str, where: str, kind: type, expected: str, *, required: bool = True
) -> Any:
    if name not in rec:
        if required:
            raise ConfigError(f"{where}: field {name!r} is missing; expected {expected}")
        return None
    value = rec[name]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ConfigError(f"{where}: field {name!r} is {_kind(value)}; expected {expected}")
    return value


def _kind(value: object) -> str:
    return "null" if value is None else type(value).__name__


def _text(rec: Mapping[str, object], name: str, where: str, *, required: bool = True, empty: bool = False) -> str:
    value = _field(rec, name, where, str, "a string" if empty else "a non-empty string", required=required)
    if value is None:
        return ""
    if not empty and not value.strip():
        raise ConfigError(f"{where}: field {name!r} is empty; expected a non-empty string")
    return cast(str, value)


def _prefix(rec: Mapping[str, object], where: str) -> tuple[Turn, ...]:
    turn = '{"role": "system" | "assistant" | "user" | "tool", "content": str}'
    turns = _field(rec, "prefix", where, list, f"a list of {turn}")
    out = []
    for i, t in enumerate(turns):
        if not isinstance(t, dict) or t.get("role") not in ROLES or not isinstance(t.get("content"), str):
            raise ConfigError(f"{where}: field 'prefix' item {i} is not {turn}")
        out.append(Turn(role=t["role"], content=t["content"]))
    return tuple(out)


def _labels(
    rec: Mapping[str, object], name: str, n: int, where: str, *, required: bool = True
) -> tuple[int, ...] | None:
    expected = f"a list of {n} class numbers (one per reply) numbered 0, 1, 2, ... in order of first appearance"
    labels = _field(rec, name, where, list, expected, required=required)
    if labels is None:
        return None
    if len(labels) != n or not all(isinstance(x, int) and not isinstance(x, bool) for x in labels):
        raise ConfigError(f"{where}: field {name!r} is {labels!r}; expected {expected}")
    first: dict[int, int] = {}
    if [first.setdefault(x, len(first)) for x in labels] != labels:
        raise ConfigError(f"{where}: field {name!r} is {labels!r}; expected {expected}")
    return tuple(labels)


def _pair_kind(rec: Mapping[str, object], name: str, where: str, *, required: bool = True) -> PairKind | None:
    expected = " or ".join(repr(k) for k in PAIR_KINDS)
    value = _field(rec, name, where, str, expected, required=required)
    if value is not None and value not in PAIR_KINDS:
        raise ConfigError(f"{where}: field {name!r} is {value!r}; expected {expected}")
    return cast("PairKind | None", value)


def _records(path: str | Path, expected: str) -> list[tuple[str, Mapping[str, object]]]:
    out: list[tuple[str, Mapping[str, object]]] = []
    for lineno, rec in iter_json_lines(path, expected=expected):
        where = f"{path}: line {lineno}"
        if not isinstance(rec, dict):
            raise ConfigError(f"{where}: is {_kind(rec)}; expected {expected}")
        out.append((where, rec))
    return out


def read_meaning_pairs(path: str | Path) -> list[MeaningPair]:
    """Read a ``pairs.jsonl`` (one pair per line; unknown keys are ignored).

    Raises:
        ConfigError: a line that is not a pair, naming the file, the line and the field.
    """
    pairs, seen = [], set()
    for where, rec in _records(path, "one JSON object per line: a reply pair"):
        pair_id = _text(rec, "id", where)
        if pair_id in seen:
            raise ConfigError(f"{where}: id {pair_id!r} appears twice; expected a unique id per pair")
        seen.add(pair_id)
        kind = cast(PairKind, _pair_kind(rec, "kind", where))
        differs_in = _text(rec, "differs_in", where)
        if differs_in not in DIFFERS_IN:
            raise ConfigError(f"{where}: field 'differs_in' is {differs_in!r}; expected one of {', '.join(DIFFERS_IN)}")
        if (differs_in == "none") != (kind == "paraphrase"):
            raise ConfigError(
                f"{where}: field 'differs_in' is {differs_in!r} for a {kind}; expected 'none' for a paraphrase "
                "and what changed for a contrast"
            )
        a, b = _text(rec, "a", where), _text(rec, "b", where)
        if a == b:
            raise ConfigError(f"{where}: fields 'a' and 'b' are the same text; expected two different replies")
        pairs.append(
            MeaningPair(
                id=pair_id,
                domain=_text(rec, "domain", where),
                prefix=_prefix(rec, where),
                a=a,
                b=b,
                kind=kind,
                differs_in=differs_in,
                note=_text(rec, "note", where, required=False, empty=True),
                kind_second=_pair_kind(rec, "kind_second", where, required=False),
            )  # fmt: skip
        )
    return pairs


def read_labelled_states(path: str | Path) -> list[MeaningState]:
    """Read a labelled ``states.jsonl`` (the shipped one or a τ2 set of the same format; unknown
    keys are ignored).

    Raises:
        ConfigError: a line that is not a labelled state, naming the file, the line and the field.
    """
    states, seen = [], set()
    for where, rec in _records(path, "one JSON object per line: a labelled state"):
        state_id = _text(rec, "state_id", where)
        if state_id in seen:
            raise ConfigError(f"{where}: state_id {state_id!r} appears twice; expected a unique id per state")
        seen.add(state_id)
        prefix = _prefix(rec, where)
        user_turn = _field(rec, "user_turn", where, int, "the number of user turns in 'prefix'")
        users = sum(t.role == "user" for t in prefix)
        if user_turn != users:
            raise ConfigError(
                f"{where}: field 'user_turn' is {user_turn}; expected {users}, the number of user turns in 'prefix'"
            )
        replies = _field(rec, "replies", where, list, "a non-empty list of reply strings")
        if not replies or not all(isinstance(r, str) for r in replies):
            raise ConfigError(f"{where}: field 'replies' is not a non-empty list of reply strings")
        labels = cast("tuple[int, ...]", _labels(rec, "labels", len(replies), where))
        states.append(
            MeaningState(
                state_id=state_id,
                source=_text(rec, "source", where),
                simulator=_text(rec, "simulator", where),
                domain=_text(rec, "domain", where),
                task_id=_text(rec, "task_id", where),
                user_turn=user_turn,
                prefix=prefix,
                replies=tuple(replies),
                labels=labels,
                labels_second=_labels(rec, "labels_second", len(replies), where, required=False),
                note=_text(rec, "note", where, required=False, empty=True),
            )  # fmt: skip
        )
    return states


def load_meaning_material(directory: str | Path | None = None) -> MeaningMaterial:
    """The shipped constructed pairs and states (``collapse_probe/data/meaning``), or those of another
    directory with the same two files.

    Raises:
        ConfigError: a missing file or a malformed line, in one sentence naming the file and line.
    """
    root = Path(directory) if directory is not None else dataset_path("meaning")
    return MeaningMaterial(
        pairs=tuple(read_meaning_pairs(root / "pairs.jsonl")),
        states=tuple(read_labelled_states(root / "states.jsonl")),
    )


class PrefixTurn(TypedDict):
    """One turn of a state record's ``prefix``."""

    role: str
    content: str


class StateRecord(TypedDict):
    """One line of a labelled ``states.jsonl`` as :func:`as_state_records` writes it."""

    state_id: str
    source: str
    simulator: str
    domain: str
    task_id: str
    user_turn: int
    """User turns in ``prefix``."""
    prefix: list[PrefixTurn]
    """The conversation up to the state."""
    replies: list[str]
    labels: list[int]
    """Each reply's class, numbered 0, 1, 2, ... in order of first appearance."""


def as_state_records(states: Sequence[MeaningState]) -> list[StateRecord]:
    """States as the ``states.jsonl``-shaped dicts that :func:`~collapse_probe.metrics._service.labelled_states`
    and the fitting scripts take."""
    return [
        {
            "state_id": s.state_id,
            "source": s.source,
            "simulator": s.simulator,
            "domain": s.domain,
            "task_id": s.task_id,
            "user_turn": s.user_turn,
            "prefix": [{"role": t.role, "content": t.content} for t in s.prefix],
            "replies": list(s.replies),
            "labels": list(s.labels),
        }  # fmt: skip
        for s in states
    ]
