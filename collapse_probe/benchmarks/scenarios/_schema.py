"""The scenario file: one YAML, JSON or JSONL file of scenarios, validated by pydantic when read.

Every problem is one line naming the file, the scenario (its ``id``, else its position) and the
field, so nothing runs before the whole file validates.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from collapse_probe.errors import ConfigError

MAX_SCENARIO_BYTES = 16 << 20
"""A scenario file holds prose for a few hundred situations; past 16 MiB it is not one."""

MAX_ANSWERS = 1000
"""The most answers a reward pattern's group may match (each needs a value in ``values``)."""

MAX_CLOSING_ANSWERS = 12
"""The most whole answers a default closing question lists (a pattern matching more gets none)."""

SUFFIXES = (".yaml", ".yml", ".json", ".jsonl")
MAX_SCENARIO_NODES = 1_000_000
"""Values a YAML scenario file may hold, every alias written out (about a second of checking)."""
EXPECTED = "a scenario file (a list of scenarios with id, instructions and opening)"

NonBlank = Annotated[str, Field(min_length=1, pattern=r"\S")]


class _FieldProblem(ValueError):
    """A check across fields, naming the field it blames (pydantic keeps the model's location)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


class Turn(BaseModel):
    """One message of a scenario's ``prefix``: ``user`` is the simulated user, ``assistant`` the agent."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    role: Literal["user", "assistant"]
    content: NonBlank


class Reward(BaseModel):
    """How a conversation of a scenario is scored: a closed answer the user states, or a judge's question."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    pattern: str | None = None
    """A regular expression the user's replies are searched for; its first group (or the group named
    ``answer``) is the answer stated. The user's *last* stated answer counts."""
    values: dict[str, float] | None = None
    """The reward of each answer the group can match (every one of them must have a value)."""
    default: float = 0.0
    """The reward of a conversation in which the user states no answer."""
    judge: NonBlank | None = None
    """A yes/no question about the whole conversation a judge model answers (YES = 1, NO = 0)."""

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, v: str | None) -> str | None:
        if v is None:
            return v
        try:
            compiled = re.compile(v)
        except re.error as exc:
            raise ValueError(f"does not compile as a regular expression ({exc})") from None
        if compiled.groups < 1:
            raise ValueError("has no group: put the answer in parentheses, e.g. '\\[TRIAGE (URGENT|ROUTINE)\\]'")
        if _nested_repeat(_sre()[0].parse(v)):
            raise ValueError(
                "repeats a repetition (such as (a+)+): a long reply can make the search take exponential time; "
                "write each repetition once"
            )
        return v

    @field_validator("values", mode="before")
    @classmethod
    def _answer_keys(cls, v: Any) -> Any:
        # YAML reads an answer key 3 (of a pattern such as '([1-5])') as a number: its text is the answer
        if isinstance(v, dict):
            return {str(k) if isinstance(k, int) and not isinstance(k, bool) else k: x for k, x in v.items()}
        return v

    @field_validator("values", "default")
    @classmethod
    def _finite(cls, v: Any) -> Any:
        if v is None:  # `values: null`: the model's check names it as missing
            return v
        for key, x in v.items() if isinstance(v, dict) else [(None, v)]:
            if not math.isfinite(x):  # named by its answer: the file's other values may be fine
                where = "default" if key is None else f"values.{key}"
                raise _FieldProblem(where, f"a reward must be a finite number, got {x!r}")
        return v

    @model_validator(mode="after")
    def _one_kind(self) -> Reward:
        if self.pattern is not None and self.judge is not None:
            raise _FieldProblem("judge", "give either pattern and values or judge, not both")
        if self.pattern is None and self.judge is None:
            raise _FieldProblem("pattern", "missing: give pattern and values, or judge")
        if self.judge is not None:
            if self.values is not None:
                raise _FieldProblem("values", "belongs to a pattern; a judge's answer is YES = 1, NO = 0")
            return self
        if self.values is None:
            raise _FieldProblem("values", "missing: the reward of each answer the pattern's group can match")
        answers = pattern_answers(self.pattern or "")
        if answers is None:
            raise _FieldProblem(
                "pattern",
                "its answer group matches an open set of texts; write the answers out, e.g. (URGENT|ROUTINE), so "
                "each has a value",
            )
        if "" in answers:
            raise _FieldProblem(
                "pattern", "its answer group can match the empty text (as in (A|)): every answer must be written out"
            )
        fold = _ignores_case(self.pattern or "")
        key = (lambda s: s.casefold()) if fold else (lambda s: s)
        given = {key(k) for k in self.values}
        missing = [a for a in answers if key(a) not in given]
        if missing:
            raise _FieldProblem(
                "values",
                f"no value for the answer {missing[0]!r} the pattern can match (it matches {_listing(answers)})",
            )
        possible = {key(a) for a in answers}
        extra = [k for k in self.values if key(k) not in possible]
        if extra:
            raise _FieldProblem(
                "values", f"{extra[0]!r} is not an answer the pattern can match (it matches {_listing(answers)})"
            )
        return self

    def answer_texts(self) -> list[str] | None:
        """Every whole text the pattern can match (``[TRIAGE URGENT]``, ``[TRIAGE ROUTINE]``), or ``None``
        when there are more than :data:`MAX_CLOSING_ANSWERS` or the set is open (``\\s*``, ``.``)."""
        if self.pattern is None:
            return None
        parser, _ = _sre()
        found = _language(parser.parse(self.pattern))
        if found is None or not 0 < len(found) <= MAX_CLOSING_ANSWERS:
            return None
        return sorted(found)

    def bounds(self) -> tuple[float, float]:
        """The lowest and highest reward this scenario can pay."""
        if self.judge is not None:
            return 0.0, 1.0
        paid = [*(self.values or {}).values(), self.default]
        return min(paid), max(paid)


class Scenario(BaseModel):
    """One scenario: what the simulated user is told, and how the conversation starts and is scored."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    id: Annotated[str, Field(min_length=1, max_length=200, pattern=r"^[^\x00-\x1f\x7f\s]([^\x00-\x1f\x7f]*\S)?$")]
    """A name unique in the file: one line, no leading or trailing whitespace (the task id of its records)."""
    instructions: NonBlank
    """What the simulated user is told: persona, goal and the facts it knows."""
    opening: NonBlank
    """The agent's first message (every conversation of the scenario starts with it)."""
    prefix: list[Turn] = []
    """A fixed conversation after the opening, to probe a later state: user and assistant in turn,
    starting with the user and ending with the agent (so the simulated user speaks next)."""
    closing: NonBlank | None = None
    """The agent's closing question, asked when the rounds are over and no answer was stated (and a
    probe state of its own)."""
    agent_instructions: NonBlank | None = None
    """What the agent (the policy) is told; default: a generic agent instruction."""
    reward: Reward | None = None
    """How a conversation is scored (none: conversations are recorded but not scored)."""

    @field_validator("prefix")
    @classmethod
    def _alternates(cls, turns: list[Turn]) -> list[Turn]:
        for i, t in enumerate(turns):
            want = "user" if i % 2 == 0 else "assistant"
            if t.role != want:
                raise _FieldProblem(
                    f"prefix[{i}].role",
                    f"expected {want!r}, got {t.role!r} (after the agent's opening the prefix alternates user, "
                    "assistant, ...)",
                )
        if turns and turns[-1].role != "assistant":
            raise _FieldProblem(
                f"prefix[{len(turns) - 1}].role",
                "the prefix must end with an 'assistant' message, so that the simulated user speaks next",
            )
        return turns


def _listing(answers: Sequence[str]) -> str:
    shown = ", ".join(repr(a) for a in answers[:8])
    return shown + (f" and {len(answers) - 8} more" if len(answers) > 8 else "")


def _ignores_case(pattern: str) -> bool:
    return bool(re.compile(pattern).flags & re.IGNORECASE)


# ------------------------------------------------------------------------------------ the answers of a pattern


def pattern_answers(pattern: str) -> list[str] | None:
    """Every text the answer group of ``pattern`` can match (its group ``answer``, else group 1), in
    sorted order; ``None`` when that set is open (``\\w+``) or larger than :data:`MAX_ANSWERS`.

    Example:
        >>> pattern_answers(r"\\[TRIAGE (URGENT|ROUTINE)\\]")
        ['ROUTINE', 'URGENT']
        >>> pattern_answers(r"\\[SCORE (\\d)/5\\]")[:3], pattern_answers(r"\\[SCORE (\\d+)\\]")
        (['0', '1', '2'], None)
    """
    parser, _ = _sre()
    compiled = re.compile(pattern)
    target = compiled.groupindex.get("answer", 1)
    group = _find_group(parser.parse(pattern), target)
    if group is None:
        return None
    found = _language(group)
    return None if found is None else sorted(found)


def _sre() -> tuple[Any, Any]:
    """The standard library's regular-expression parser and its opcodes (``re._parser`` since 3.11)."""
    import sys

    if sys.version_info >= (3, 11):
        from re import _constants, _parser  # type: ignore[attr-defined]
    else:  # pragma: no cover - Python 3.10
        import sre_constants as _constants
        import sre_parse as _parser
    return _parser, _constants


def _nested_repeat(items: Any, inside: bool = False) -> bool:
    """Whether a parsed pattern repeats, without bound, something that itself repeats (``(a+)+``,
    ``(\\w*)*``): the shape whose backtracking takes exponential time on a reply that almost matches."""
    _, c = _sre()
    nothing = object()
    repeats = (c.MAX_REPEAT, c.MIN_REPEAT, getattr(c, "POSSESSIVE_REPEAT", nothing))
    for op, av in items:
        if op in repeats:
            lo, hi, sub = av
            unbounded = hi is c.MAXREPEAT or hi > 8
            if inside and unbounded:
                return True
            if _nested_repeat(sub, inside or unbounded):
                return True
        elif op is c.SUBPATTERN and _nested_repeat(av[-1], inside):
            return True
        elif op is c.BRANCH and any(_nested_repeat(sub, inside) for sub in av[1]):
            return True
        elif op is getattr(c, "ATOMIC_GROUP", nothing) and _nested_repeat(av, inside):
            return True
    return False


def _find_group(items: Any, target: int) -> Any:
    _, c = _sre()
    nothing = object()
    for op, av in items:
        if op is c.SUBPATTERN:
            if av[0] == target:
                return av[-1]
            inner = _find_group(av[-1], target)
        elif op is c.BRANCH:
            inner = next((g for sub in av[1] if (g := _find_group(sub, target)) is not None), None)
        elif op in (c.MAX_REPEAT, c.MIN_REPEAT, getattr(c, "POSSESSIVE_REPEAT", nothing)):
            inner = _find_group(av[-1], target)
        elif op is getattr(c, "ATOMIC_GROUP", nothing):
            inner = _find_group(av, target)
        else:
            continue
        if inner is not None:
            return inner
    return None


def _language(items: Any) -> set[str] | None:
    """The set of texts a parsed sequence matches, or ``None`` when open or past :data:`MAX_ANSWERS`."""
    _, c = _sre()
    nothing = object()
    out = {""}
    for op, av in items:
        part: set[str] | None
        if op is c.LITERAL:
            part = {chr(av)}
        elif op is c.IN:
            part = set()
            for mop, mav in av:
                if mop is c.LITERAL:
                    part.add(chr(mav))
                elif mop is c.RANGE and mav[1] - mav[0] < MAX_ANSWERS:
                    part.update(chr(x) for x in range(mav[0], mav[1] + 1))
                else:  # a negated set or a category (\w, \d): \d is ten digits, written here as a range
                    if mop is c.CATEGORY and mav is c.CATEGORY_DIGIT:
                        part.update("0123456789")
                        continue
                    return None
        elif op is c.BRANCH:
            part = set()
            for sub in av[1]:
                found = _language(sub)
                if found is None:
                    return None
                part |= found
        elif op is c.SUBPATTERN:
            part = _language(av[-1])
        elif op is getattr(c, "ATOMIC_GROUP", nothing):
            part = _language(av)
        elif op in (c.MAX_REPEAT, c.MIN_REPEAT, getattr(c, "POSSESSIVE_REPEAT", nothing)):
            lo, hi, sub = av
            body = _language(sub)
            if body is None or hi is c.MAXREPEAT or hi > 8:
                return None
            part = set()
            level = {""}
            for k in range(hi + 1):
                if k >= lo:
                    part |= level
                level = {a + b for a in level for b in body}
                if len(level) > MAX_ANSWERS:
                    return None
        elif op is c.AT:
            part = {""}
        else:  # any character, a back reference, a lookaround: not a closed answer
            return None
        if part is None:
            return None
        out = {a + b for a in out for b in part}
        if len(out) > MAX_ANSWERS:
            return None
    return out


# ------------------------------------------------------------------------------------------------ reading


def load_scenarios(path: str | Path) -> list[Scenario]:
    """The scenarios of a YAML (``.yaml``/``.yml``), JSON (``.json``) or JSONL (``.jsonl``) file.

    The file holds a list of scenarios (JSONL: one per line), or a mapping with the key ``scenarios``.

    Raises:
        ConfigError: one line naming the file, the scenario (its id, else its position) and the field:
            a missing or unreadable file, a syntax error, an empty file, an unknown field, a value of the
            wrong type, a pattern that does not compile, ``values`` that miss an answer, a prefix that
            does not alternate, a duplicate id.
    """
    from collapse_probe.core._files import FileProblem, MissingFile, read_bytes

    p = Path(path)
    try:
        raw = read_bytes(p, max_bytes=MAX_SCENARIO_BYTES, expected=EXPECTED)
    except MissingFile:
        raise ConfigError(f"--scenarios: file {str(p)!r} does not exist") from None
    except FileProblem as exc:
        raise ConfigError(f"--scenarios {exc}") from None
    raw = raw.removeprefix(b"\xef\xbb\xbf")  # a byte-order mark some editors write: not part of the text
    suffix = p.suffix.lower()
    if suffix not in SUFFIXES:
        raise ConfigError(f"--scenarios: {str(p)!r} must end in {', '.join(SUFFIXES)} (YAML, JSON or JSONL)")
    items: list[tuple[str, object]]
    if suffix == ".jsonl":
        items = _jsonl_items(raw, p)
    else:
        data = _yaml(raw, p) if suffix in (".yaml", ".yml") else _json(raw, p)
        if isinstance(data, dict) and set(data) == {"scenarios"}:
            data = data["scenarios"]
        if data is None or data == []:
            raise ConfigError(f"{p}: no scenarios in the file; expected {EXPECTED}")
        if not isinstance(data, list):
            what = "a mapping without the single key 'scenarios'" if isinstance(data, dict) else type(data).__name__
            raise ConfigError(f"{p}: expected a list of scenarios (or a mapping 'scenarios: [...]'), got {what}")
        items = [(f"item {i}", v) for i, v in enumerate(data, start=1)]
    if not items:
        raise ConfigError(f"{p}: no scenarios in the file; expected {EXPECTED}")
    scenarios: list[Scenario] = []
    seen: dict[str, str] = {}
    for where, value in items:
        scenario = _scenario(value, p, where)
        same = unicodedata.normalize("NFC", scenario.id)  # café twice, composed and decomposed, prints alike
        if same in seen:
            raise ConfigError(
                f"{p}: scenario {scenario.id!r} ({where}): field id: duplicate of the scenario at {seen[same]}"
            )
        seen[same] = where
        scenarios.append(scenario)
    return scenarios


def _scenario(value: Any, p: Path, where: str) -> Scenario:
    if not isinstance(value, dict):
        raise ConfigError(f"{p}: {where}: expected a scenario (a mapping with id, instructions, opening), got "
                          f"{type(value).__name__}")  # fmt: skip
    sid = value.get("id")
    if isinstance(sid, str) and sid:
        name = f"scenario {sid!r} ({where})"
    else:  # an id of another type (YAML reads `id: 5` as a number) is there, and named by its field's error
        name = f"scenario at {where}" + (" (no id)" if sid is None or sid == "" else "")
    from collapse_probe.core._config_files import check_no_nul

    # a NUL in a prompt is a damaged file, and a C tokenizer or a path cuts the text there
    check_no_nul(value, f"{p}: {name}", expected="text without NUL characters")
    try:
        return Scenario.model_validate(value)
    except ValidationError as exc:
        raise ConfigError(f"{p}: {name}: {_problem(exc)}") from None


def _problem(exc: ValidationError) -> str:
    """The first error of a scenario as ``field F: what is wrong``."""
    err = exc.errors()[0]
    loc = [str(x) for x in err.get("loc", ())]
    ctx_error = (err.get("ctx") or {}).get("error")
    if isinstance(ctx_error, _FieldProblem):
        base = loc[:-1] if loc and ctx_error.field.startswith(loc[-1]) else loc
        return f"field {_dotted([*base, ctx_error.field])}: {ctx_error}"
    field = _dotted(loc)
    kind = err.get("type", "")
    if kind == "extra_forbidden":
        model: type[BaseModel] = Scenario
        if len(loc) > 1 and loc[0] == "reward":
            model = Reward
        elif len(loc) > 2 and loc[0] == "prefix":
            model = Turn
        return f"field {field}: not a field of a {model.__name__.lower()} (known: {', '.join(model.model_fields)})"
    if kind == "missing":
        return f"field {field}: missing"
    msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
    if kind == "string_pattern_mismatch" and loc[-1:] != ["id"]:
        msg = "must not be blank"
    elif kind == "string_pattern_mismatch":
        msg = "must be one line without leading or trailing whitespace"
    elif kind == "string_type":  # pydantic's "Input should be a valid string"
        number = isinstance(err.get("input"), int | float) and not isinstance(err.get("input"), bool)
        msg = "expected a string (quote a number to make it one: '5')" if number else "expected a string"
    got = err.get("input")
    shown = repr(got) if not isinstance(got, (dict, list)) else type(got).__name__
    if len(shown) > 80:
        shown = shown[:77] + "..."
    return f"field {field}: {msg}, got {shown}"


def _dotted(loc: Sequence[str]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if part.isdigit() else (f".{part}" if out else part)
    return out or "(the scenario)"


def _text(raw: bytes, p: Path) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{p}: not UTF-8 text (byte {exc.start}); expected {EXPECTED}") from None


def _json(raw: bytes, p: Path) -> Any:
    from collapse_probe.core._files import parse_json

    if not raw.strip():  # an empty file says so, as an empty YAML or JSONL file does
        raise ConfigError(f"{p}: no scenarios in the file; expected {EXPECTED}")
    return parse_json(raw, p, expected=EXPECTED, nonfinite=True, unique_keys=True)


def _jsonl_items(raw: bytes, p: Path) -> list[tuple[str, object]]:
    from collapse_probe.core._files import parse_json

    items = []
    for i, line in enumerate(_text(raw, p).splitlines(), start=1):
        if line.strip():
            items.append((f"line {i}", parse_json(line, f"{p}: line {i}", expected="one scenario per line",
                                                   nonfinite=True, unique_keys=True)))  # fmt: skip
    return items


def _yaml(raw: bytes, p: Path) -> Any:
    """The YAML reader of config files (bounded nesting and size, no repeated keys, no NUL), with aliases
    counted as the values they stand for (a file repeats an agent's instructions with ``*agent``) and YAML
    1.2's booleans, so the answers ``YES``/``NO`` of a pattern's ``values`` keep their text."""
    from collapse_probe.core._config_files import load_yaml
    from collapse_probe.core._files import check_values

    data = load_yaml(
        _text(raw, p), str(p), expected=EXPECTED, core_booleans=True, aliases=True, max_nodes=MAX_SCENARIO_NODES
    )
    check_values(data, p, expected=EXPECTED, nonfinite=True)
    return data
