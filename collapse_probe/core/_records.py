"""Conversation records as the engine writes them (one JSON object per line of ``conversations.jsonl``):
the typed record (:class:`ConversationRecord`, its :class:`Message` and :class:`ToolCall`), the status
values and what can be read off a set of records without statistics (at the bottom of the package:
model backends, metrics and pipelines read records without importing the engine).

A record is validated where it is read back (:meth:`ConversationRecord.parse`, strict: ``"0.5"`` is not
a reward) and written exactly as the engine always wrote it: its fields in the engine's order, a
message's keys in the order the arena gave them, fields it does not know kept (``extra="allow"``).
The JSON Schema ships as ``collapse_probe/schemas/conversation.json``.
"""

from __future__ import annotations

import reprlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Annotated, Any, Self

from pydantic import (
    AllowInfNan,
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    ValidationError,
    ValidatorFunctionWrapHandler,
    model_serializer,
    model_validator,
)
from pydantic_core import PydanticCustomError

INFRA_ERROR = "infra_error"
"""``status`` of a conversation that ended in an infrastructure failure (never scored, retried on resume)."""


class _InOrder(BaseModel):
    """A JSON object written back with its keys in the order it was given (a model would write its
    declared fields first): a record read and written again is the same line."""

    model_config = ConfigDict(extra="allow", use_attribute_docstrings=True)
    _order: tuple[str, ...] = PrivateAttr(default=())

    @model_validator(mode="wrap")
    @classmethod
    def _keep_order(cls, data: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        obj = handler(data)
        if isinstance(data, dict) and isinstance(obj, _InOrder):
            obj._order = tuple(data)
        return obj

    @model_serializer(mode="wrap")
    def _in_order(self, handler: SerializerFunctionWrapHandler) -> dict[str, JsonValue]:
        out: dict[str, JsonValue] = handler(self)
        return {**{k: out[k] for k in self._order if k in out}, **out}


class ToolCall(_InOrder):
    """A native tool call of a message: ``{"id", "name", "arguments"}`` as a backend returns it (the
    OpenAI wire form ``{"id", "type", "function": {...}}`` is kept as it was written)."""

    id: str | None = None
    """The call's id (a tool message answers it by ``tool_call_id``)."""
    name: str | None = None
    """The tool called."""
    arguments: JsonValue = None
    """The arguments: a JSON object, or the text the model wrote when it was not one."""


class Message(_InOrder):
    """One turn of a recorded conversation: ``{"role": "policy"|"simulator"|"tool"|..., "content": str}``;
    an arena may add its own keys (a tool message's ``tool_call_id``), kept in their place."""

    role: str
    """Who spoke: ``policy``, ``simulator``, ``tool`` or an arena's own role."""
    content: str | None = None
    """What was said (``null``: a message that only calls tools)."""
    tool_calls: list[ToolCall] | None = None
    """The tools this message called."""
    meta: dict[str, JsonValue] | None = None
    """What the arena notes of the message (``elicitation``, ``given``: a message the arena put in the
    policy's mouth, not the policy's own move)."""

    def as_dict(self) -> dict[str, JsonValue]:
        """The message as the arena gave it (an episode is rebuilt from these)."""
        return self.model_dump(exclude_unset=True)


class RecordFingerprints(BaseModel):
    """The content fingerprints of the two models a conversation was run with."""

    model_config = ConfigDict(extra="allow", use_attribute_docstrings=True)
    policy: str = ""
    """The policy model's fingerprint."""
    simulator: str = ""
    """The simulator model's fingerprint."""


Reward = Annotated[float, AllowInfNan(False)]
"""A finite number."""


class ConversationRecord(BaseModel):
    """One finished conversation: one line of ``conversations.jsonl``.

    Fields are declared in the order the engine writes them; :meth:`to_line_dict` gives the object
    written (fields never set stay absent).
    """

    model_config = ConfigDict(extra="allow", use_attribute_docstrings=True, frozen=True)

    key: str
    """``policy|simulator|task_id|rollout``: the conversation's identity (resume matches on it)."""
    task_id: str
    """The benchmark task."""
    rollout: Annotated[int, Field(ge=0)]
    """The rollout index of this task in its cell (0-based)."""
    policy: str
    """The policy's participant label."""
    simulator: str
    """The simulator's participant label."""
    seed: int
    """The conversation's seed (turn ``t`` samples with ``derive_seed(seed, t)``)."""
    messages: list[Message]
    """The conversation, in order."""
    reward: Reward | None = None
    """The arena's score (``null``: not scored, e.g. an infrastructure failure)."""
    success: bool | None = None
    """Whether the arena counts the task as solved (``null``: it does not say)."""
    status: str
    """How the conversation ended (``done``, ``max_turns``, :data:`INFRA_ERROR`, or an arena's own)."""
    infra_error: str | None = None
    """The infrastructure failure's message when ``status`` is :data:`INFRA_ERROR`, else ``null``."""
    fingerprints: RecordFingerprints | None = None
    """The fingerprints of the models that ran it (resume refuses a changed model)."""
    info: dict[str, Any] | None = None
    """The arena's own details of the score (its shape belongs to the benchmark)."""
    seconds: float | None = None
    """Wall time from the first turn to the score."""

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        key = f"{self.policy}|{self.simulator}|{self.task_id}|{self.rollout}"
        if self.key != key:
            raise _inconsistent(
                f"its key {reprlib.repr(self.key)} does not match its fields policy|simulator|task_id|rollout "
                f"{reprlib.repr(key)}"
            )
        if self.status == INFRA_ERROR and self.infra_error is None:
            raise _inconsistent(field_problem("infra_error", "the failure's message", None))
        if self.status != INFRA_ERROR and self.infra_error is not None:
            raise _inconsistent(field_problem("infra_error", f"null (status is {self.status!r})", self.infra_error))
        return self

    @property
    def scored(self) -> bool:
        """Whether the conversation has a score (not an infrastructure failure, a reward recorded)."""
        return self.status != INFRA_ERROR and self.reward is not None

    def texts_of(self, role: str) -> list[str | None]:
        """What ``role`` said, turn by turn."""
        return [m.content for m in self.messages if m.role == role]

    @classmethod
    def make(
        cls,
        *,
        policy: str,
        simulator: str,
        task_id: str,
        rollout: int = 0,
        seed: int = 0,
        status: str = "done",
        messages: Sequence[Mapping[str, object]] = (),
        **fields: Any,
    ) -> ConversationRecord:
        """A record built from its fields (its key derived from them); numpy numbers are accepted.

        Raises:
            pydantic.ValidationError: a field of the wrong type.
        """
        key = f"{policy}|{simulator}|{task_id}|{rollout}"
        return cls.model_validate({"key": key, "task_id": task_id, "rollout": rollout, "policy": policy,
                                   "simulator": simulator, "seed": seed, "messages": list(messages), "status": status,
                                   **fields})  # fmt: skip

    @classmethod
    def parse(cls, data: Any) -> ConversationRecord:
        """A record read back from JSON, validated strictly.

        Raises:
            pydantic.ValidationError: a field of the wrong type; :func:`conversation_problem` words it.
        """
        return cls.model_validate(data, strict=True)

    def to_line_dict(self) -> dict[str, object]:
        """The JSON object of this record's line (as the engine wrote it before records were typed; ``info``
        holds what the arena gave, written as JSON)."""
        return self.model_dump(exclude_unset=True)


def _inconsistent(problem: str) -> PydanticCustomError:
    """A record whose fields are each well typed but disagree (the key, the failure and the status)."""
    return PydanticCustomError("record_inconsistent", "{problem}", {"problem": problem})


def field_problem(field: str, expected: str, value: Any) -> str:
    """How a record check names a bad field: ``field 'reward': expected ..., got 'zzz'``."""
    return f"field {field!r}: expected {expected}, got {reprlib.repr(value)}"


_EXPECTED = {
    "key": "a string", "task_id": "a string", "policy": "a string", "simulator": "a string", "status": "a string",
    "rollout": "a whole number >= 0", "seed": "an integer", "messages": "a list of {role, content} messages",
    "fingerprints": "{policy: fingerprint, simulator: fingerprint}", "infra_error": "",
    "reward": "a finite number or null", "success": "true, false or null", "info": "an object",
    "seconds": "a number or null",
}  # fmt: skip
"""Field -> what a record's field must hold, in the order a record's fields are checked (the first
bad one is named)."""


def conversation_problem(rec: Mapping[str, object]) -> str | None:
    """What is wrong with one ``conversations.jsonl`` record, or ``None`` when it is well formed.

    A resumed run trusts what it reads back: a record with ``"reward": "zzz"`` would fail the
    summary, one with another ``policy`` would silently fall out of its matrix cell. The key must
    also be the one its fields make (``policy|simulator|task_id|rollout``), so a record is counted
    in exactly the cell and task it was run for.
    """
    try:
        ConversationRecord.parse(rec)
    except ValidationError as exc:
        return record_problem(exc, rec)
    return None


def record_problem(exc: ValidationError, rec: Any) -> str:
    """The one line naming the first bad field of a record :meth:`ConversationRecord.parse` refused."""
    errors = exc.errors(include_url=False)
    fields = [e for e in errors if e["loc"] and e["loc"][0] in _EXPECTED]
    if not fields or not isinstance(rec, dict):
        return errors[0]["msg"]  # not an object, or the record's own consistency (key, infra_error)
    field = min((str(e["loc"][0]) for e in fields), key=list(_EXPECTED).index)
    expected = _EXPECTED[field]
    if field == "infra_error":
        failed = rec.get("status") == INFRA_ERROR
        expected = "the failure's message" if failed else f"null (status is {rec.get('status')!r})"
    return field_problem(field, expected, rec.get(field))


def parse_records(data: Iterable[Mapping[str, object]]) -> list[ConversationRecord]:
    """Typed records of JSON objects already checked by :func:`conversation_problem` (or written by
    the engine)."""
    return [ConversationRecord.parse(d) for d in data]


def record_fingerprints(records: Sequence[ConversationRecord]) -> dict[str, str | list[str]]:
    """Spec -> the model fingerprint its conversations were run with (a sorted list when they differ,
    which the gate refuses to judge: one spec answered by two models)."""
    seen: dict[str, set[str]] = {}
    for r in records:
        if r.fingerprints is None:
            continue
        for label, fp in ((r.policy, r.fingerprints.policy), (r.simulator, r.fingerprints.simulator)):
            if fp:
                seen.setdefault(label, set()).add(fp)
    return {k: (next(iter(v)) if len(v) == 1 else sorted(v)) for k, v in seen.items()}
