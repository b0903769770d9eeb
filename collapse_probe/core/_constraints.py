"""Declarative constraints on configuration fields, and the one validation that reads them.

Every pipeline config is a pydantic model (:class:`Config`) whose fields carry their constraints
where they are declared, as ``Annotated`` metadata, so a config is validated by one mechanism with
one wording: the message names the field's flag, the allowed values and the value received::

    class PlayConfig(Config):
        tasks: Annotated[int, Integer(1), AtMost(MAX_STATES, "tasks")] = 4
        max_turns: Annotated[int | None, Integer(1, optional=True)] = 3

        @rule
        def _conversations(self) -> None: ...

A config is checked when it is built (``PlayConfig(tasks=0)`` raises :class:`ConfigError`) and again
by :meth:`Config.validate` after its attributes were changed. Nothing is coerced: ``"3"`` is not 3 and
``True`` is not 1 (a bool is not a number here), and ``None`` passes only where the constraint
declares ``optional``. Cross-field rules are methods marked with :func:`rule`; they run, in the order
they are defined, after every field passed, so they may assume well-typed fields.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator
from typing_extensions import Self

from collapse_probe.errors import ConfigError

__all__ = [
    "AtMost",
    "Config",
    "Constraint",
    "Flag",
    "Integer",
    "Number",
    "OneOf",
    "Specs",
    "SubsetOf",
    "check_field",
    "check_value",
    "constraints_of",
    "flag_of",
    "config_error",
    "rule",
]

_RULE = "__collapse_probe_rule__"

F = TypeVar("F", bound=Callable[..., None])


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_numpy_number(value: Any) -> bool:
    """A Python or numpy real number (``numpy.int64``, ``numpy.float32``), not a bool (``numpy.bool_``
    is no ``numbers.Real``)."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


class Constraint:
    """What one field accepts. :meth:`check` raises :class:`ConfigError` naming ``flag``."""

    optional: bool = False
    numeric: bool = False
    """The constraint bounds a number (the completeness test looks for one on every numeric field)."""

    def check(self, value: Any, flag: str) -> None:  # pragma: no cover - every constraint overrides it
        raise NotImplementedError

    def normalize(self, value: Any) -> Any:
        """The checked value in the field's own type (a list of specs from any sequence); default: as is."""
        return value


@dataclass(frozen=True)
class Integer(Constraint):
    """An integer (not a bool) ``>= least`` (``None``: no lower bound) and ``<= most`` (``None``: no upper
    bound); ``optional`` also accepts ``None``.

    ``most`` bounds a count or size a mistyped value would make run for ever or exhaust memory
    (``--steps 10**30``): the maxima are in :mod:`collapse_probe.core.limits`. ``why`` is appended to the
    message in parentheses (why the bound is what it is). ``numpy`` also accepts numpy integers (an
    argument of a metrics function, often taken from an array)."""

    least: int | None = 1
    optional: bool = False
    why: str = ""
    numpy: bool = False
    most: int | None = None
    numeric = True

    @property
    def allowed(self) -> str:
        """The allowed values in words: ``an integer >= 1``, ``an integer in [1, 100,000]``."""
        if self.most is None:
            return "an integer" + (f" >= {self.least}" if self.least is not None else "")
        if self.least is None:
            return f"an integer <= {self.most:,}"
        return f"an integer in [{self.least:,}, {self.most:,}]"

    def check(self, value: Any, flag: str) -> None:
        if self.optional and value is None:
            return
        integer = isinstance(value, numbers.Integral if self.numpy else int) and not isinstance(value, bool)
        low = integer and self.least is not None and value < self.least
        high = integer and self.most is not None and value > self.most
        if not integer or low or high:
            why = f" ({self.why})" if self.why and not high else ""
            # a huge integer is not echoed digit by digit (nor converted: past 4,300 digits that fails)
            digits = int(int(value).bit_length() * math.log10(2)) + 1 if integer else 0
            shown = f"an integer of about {digits:,} digits" if digits > 40 else repr(value)
            raise ConfigError(f"{flag} must be {self.allowed}{why}, got {shown}")


@dataclass(frozen=True)
class AtMost(Constraint):
    """At most ``limit`` ``what`` per run (a bound on memory, see :mod:`collapse_probe.core.limits`); a
    value that is not an integer is left to the field's :class:`Integer`."""

    limit: int
    what: str
    numeric = True

    def check(self, value: Any, flag: str) -> None:
        if _is_integer(value) and value > self.limit:
            raise ConfigError(
                f"{flag} {value}: at most {self.limit:,} {self.what} per run; split the work into several runs"
            )


@dataclass(frozen=True)
class Number(Constraint):
    """A finite number (an int or a float, not a bool) within the given bounds (``ge``/``gt`` below,
    ``le``/``lt`` above; ``None``: unbounded); ``optional`` also accepts ``None``.

    ``inf`` also accepts ``+inf`` (a limit: the Hill number of order infinity); ``numpy`` also accepts
    numpy numbers (an argument of a metrics function, often taken from an array)."""

    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    lt: float | None = None
    optional: bool = False
    why: str = ""
    inf: bool = False
    numpy: bool = False
    numeric = True

    @property
    def allowed(self) -> str:
        """The allowed values in words: ``a finite number``, ``a finite number > 0``, ``a number in (0, 1]``."""
        low = ("(", self.gt) if self.gt is not None else ("[", self.ge) if self.ge is not None else None
        high = (")", self.lt) if self.lt is not None else ("]", self.le) if self.le is not None else None
        number, inf = ("a number", " or inf") if self.inf else ("a finite number", "")
        if low is not None and high is not None:
            return f"a number in {low[0]}{low[1]:g}, {high[1]:g}{high[0]}{inf}"
        if low is not None:
            return f"{number} {'>' if low[0] == '(' else '>='} {low[1]:g}{inf}"
        if high is not None:
            return f"{number} {'<' if high[0] == ')' else '<='} {high[1]:g}{inf}"
        return f"{number}{inf}"

    def accepts(self, value: Any) -> bool:
        if not (_is_number(value) or (self.numpy and _is_numpy_number(value))):
            return False
        if self.inf and value == math.inf:
            return True
        if not math.isfinite(value):
            return False
        return (
            (self.ge is None or value >= self.ge)
            and (self.gt is None or value > self.gt)
            and (self.le is None or value <= self.le)
            and (self.lt is None or value < self.lt)
        )

    def check(self, value: Any, flag: str) -> None:
        if self.optional and value is None:
            return
        if not self.accepts(value):
            why = f" ({self.why})" if self.why else ""  # None (the flag not given) is not a value one can type
            raise ConfigError(f"{flag} must be {self.allowed}{why}, got {value!r}")


@dataclass(frozen=True)
class OneOf(Constraint):
    """One of ``choices`` (compared with ``==``); ``optional`` also accepts ``None``."""

    choices: tuple[Any, ...]
    optional: bool = False

    def check(self, value: Any, flag: str) -> None:
        if self.optional and value is None:
            return
        hashable = isinstance(value, (str, int, float, type(None)))
        if not hashable or value not in self.choices:
            names = ", ".join(str(c) for c in self.choices)
            raise ConfigError(f"{flag} must be one of {names}, got {value!r}")


@dataclass(frozen=True)
class Specs(Constraint):
    """A list of non-empty strings (model specs); ``least`` of them at least, ``distinct`` if asked.

    ``name`` (the field, e.g. ``simulators``) is shown beside a flag named otherwise (``--sims``)."""

    least: int = 0
    distinct: bool = False
    name: str = ""

    def check(self, value: Any, flag: str) -> None:
        where = f"{flag} ({self.name})" if self.name and flag.lstrip("-") != self.name else flag
        if isinstance(value, str) or not isinstance(value, Sequence):
            raise ConfigError(f"{where}: expected a list of model specs, got {value!r}")
        if len(value) < self.least:
            least = "one model spec" if self.least == 1 else f"{self.least} model specs"
            got = "an empty list" if not value else f"{len(value)}"
            raise ConfigError(f"{where}: expected at least {least} (comma-separated), got {got}")
        for s in value:
            if not isinstance(s, str) or not s.strip():
                raise ConfigError(f"{where}: every spec must be a non-empty string, got {s!r}")
        dup = sorted({s for s in value if list(value).count(s) > 1})
        if self.distinct and dup:
            raise ConfigError(f"{where}: duplicate specs {dup}; each row/column must be distinct")

    def normalize(self, value: Any) -> Any:
        return list(value)


@dataclass(frozen=True)
class SubsetOf(Constraint):
    """A list (or tuple) whose every item is one of ``choices``; held as a tuple."""

    choices: tuple[str, ...]

    def check(self, value: Any, flag: str) -> None:
        items = [value] if isinstance(value, str) or not isinstance(value, Sequence) else list(value)
        bad = [v for v in items if not isinstance(v, str) or v not in self.choices]
        if bad or isinstance(value, str) or not isinstance(value, Sequence):
            raise ConfigError(f"{flag} must be among {', '.join(self.choices)}; got {bad or value!r}")

    def normalize(self, value: Any) -> Any:
        return tuple(value)


class Flag:
    """``Annotated`` metadata: how the user names a field when it is not ``--field-name``
    (``Annotated[list[str], Flag("--sims")]``), any other spellings its flag accepts, and the name its
    value has in ``--help`` (``metavar``; default: the flag's name in capitals)."""

    def __init__(self, flag: str, *aliases: str, metavar: str | None = None) -> None:
        self.flag = flag
        self.aliases = aliases
        self.metavar = metavar

    def __repr__(self) -> str:
        extra = (f"metavar={self.metavar!r}",) if self.metavar else ()
        return f"Flag({', '.join([*map(repr, (self.flag, *self.aliases)), *extra])})"


def rule(method: F) -> F:
    """Mark a method of a config as a cross-field rule that :meth:`Config.validate` runs (after the fields)."""
    setattr(method, _RULE, True)
    return method


def _metadata(cls: type, name: str) -> list[Any]:
    info = cls.model_fields.get(name) if issubclass(cls, BaseModel) else None
    return list(info.metadata) if info is not None else []


def constraints_of(cls: type, name: str) -> tuple[Constraint, ...]:
    """The constraints declared on field ``name`` of config class ``cls`` (empty: none)."""
    return tuple(m for m in _metadata(cls, name) if isinstance(m, Constraint))


def flag_of(config: Any, name: str) -> str:
    """How the user names field ``name`` of ``config`` (a class or an instance): its declared
    :class:`Flag`, else the class's ``FLAG_FORMAT`` (default ``--{dashed}``) filled with ``name`` and
    ``dashed``."""
    cls = config if isinstance(config, type) else type(config)
    for m in _metadata(cls, name):
        if isinstance(m, Flag):
            return m.flag
    fmt = getattr(cls, "FLAG_FORMAT", "--{dashed}")
    return str(fmt.format(name=name, dashed=name.replace("_", "-")))


def check_value(value: Any, flag: str, constraints: Iterable[Constraint]) -> None:
    """Check one value against ``constraints`` (in order), naming ``flag``."""
    for c in constraints:
        c.check(value, flag)


def check_field(config: Any, name: str, value: Any, flag: str | None = None) -> None:
    """Check ``value`` against the constraints declared on field ``name`` of ``config`` (a class or
    an instance), naming ``flag`` (default: the field's own); for a value given before the config is
    built, e.g. each value of a sweep."""
    cls: type[BaseModel] = config if isinstance(config, type) else type(config)
    if name not in cls.model_fields:
        raise KeyError(f"{cls.__name__} has no field {name!r}")
    check_value(value, flag or flag_of(cls, name), constraints_of(cls, name))


def _rules(cls: type) -> list[Callable[[Any], None]]:
    seen: dict[str, Callable[[Any], None]] = {}
    for klass in reversed(cls.__mro__):
        for name, member in vars(klass).items():
            if getattr(member, _RULE, False):
                seen[name] = member
    return list(seen.values())


_EXPECTED = {
    "string_type": "a string",
    "bool_type": "true or false",
    "int_type": "an integer",
    "float_type": "a number",
    "list_type": "a list",
    "dict_type": "a mapping",
    "tuple_type": "a list",
}


def config_error(cls: type, exc: ValidationError) -> ConfigError:
    """The first problem pydantic found in config ``cls``, as the one line the constraints write: the
    flag, what was expected, the value received (an unknown field: the closest known ones)."""
    import difflib
    import reprlib

    error = exc.errors(include_url=False)[0]
    raised = (error.get("ctx") or {}).get("error")
    if isinstance(raised, ConfigError):  # a constraint or a rule: already the one line
        return raised
    loc = error.get("loc") or ()
    name = str(loc[0]) if loc else ""
    fields = sorted(cls.model_fields) if issubclass(cls, BaseModel) else []
    if error["type"] == "extra_forbidden":
        close = difflib.get_close_matches(name, fields, n=2, cutoff=0.6)
        hint = f" (did you mean {' or '.join(close)}?)" if close else f"; its fields are {', '.join(fields)}"
        return ConfigError(f"{cls.__name__}: unknown field {name!r}{hint}")
    flag = flag_of(cls, name) if name in fields else name or cls.__name__
    if error["type"] == "missing":
        return ConfigError(f"{flag}: required")
    if error["type"] == "literal_error":
        expected = "one of " + str((error.get("ctx") or {}).get("expected", "")).replace("'", "")
    else:
        expected = _EXPECTED.get(error["type"]) or error["msg"][0].lower() + error["msg"][1:]
        if len(loc) > 1:
            expected += f" at {'.'.join(map(str, loc[1:]))}"
    return ConfigError(f"{flag} must be {expected}, got {reprlib.repr(error.get('input'))}")


class Config(BaseModel):
    """A pipeline's configuration: a pydantic model whose fields declare their constraints
    (``Annotated`` metadata: :class:`Integer`, :class:`Number`, :class:`AtMost`, :class:`OneOf`,
    :class:`Specs`, :class:`Flag`) and whose :func:`rule` methods check what spans fields.

    Built from keywords (``AuditConfig(samples=8)``) or a mapping (:meth:`from_dict`, what
    ``config.json`` records): either way every field and rule is checked, and a problem is one
    :class:`ConfigError` line naming the flag, the allowed values and the value received. Attributes
    may be set afterwards; :meth:`validate` checks the whole config again.
    """

    model_config = ConfigDict(extra="forbid", strict=True, arbitrary_types_allowed=True, use_attribute_docstrings=True)

    FLAG_FORMAT: ClassVar[str] = "--{dashed}"
    """How a field is named in messages (``{name}``: the field, ``{dashed}``: with dashes)."""

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise config_error(type(self), exc) from None

    @model_validator(mode="before")
    @classmethod
    def _declared_constraints(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for name in cls.model_fields:
                if name in data:
                    value = data[name]
                    for c in constraints_of(cls, name):
                        c.check(value, flag_of(cls, name))
                        value = c.normalize(value)
                    if value is not data[name]:
                        data = {**data, name: value}
        return data

    @model_validator(mode="after")
    def _declared_rules(self) -> Self:
        for method in _rules(type(self)):
            method(self)
        return self

    @classmethod
    def from_dict(cls, values: Mapping[str, object]) -> Self:
        """The config ``values`` describe (its fields by name), checked as the constructor checks."""
        return cls(**dict(values))

    def validate(self) -> Self:  # type: ignore[override]  # pydantic's deprecated classmethod of that name
        """Check every field and rule again (after attributes were set); return the config.

        Raises:
            ConfigError: the first violation, one line naming the flag, the allowed values and the value.
        """
        type(self)(**dict(self))
        return self

    def replace(self, **changes: Any) -> Self:
        """A checked copy with ``changes`` (field name -> value) put in."""
        return type(self)(**{**dict(self), **changes})

    def to_dict(self) -> Mapping[str, object]:
        """JSON-ready copy (what ``config.json`` and ``results.json`` record)."""
        return self.model_dump(mode="json")
