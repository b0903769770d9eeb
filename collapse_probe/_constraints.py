"""Declarative constraints on configuration fields, and the one :func:`validate` that reads them.

Every pipeline config is a dataclass whose fields carry their constraints where they are declared
(:func:`param`), so a config is validated by one mechanism with one wording: the message names the
field's flag, the allowed values and the value received (scikit-learn's ``validate_params``)::

    @dataclass
    class Config:
        tasks: int = param(4, Integer(1), AtMost(MAX_STATES, "tasks"))
        max_turns: int | None = param(3, Integer(1, optional=True))

        @rule
        def _conversations(self) -> None: ...

Nothing is coerced: ``"3"`` is not 3 and ``True`` is not 1 (a bool is not a number here), and
``None`` passes only where the constraint declares ``optional``. Cross-field rules are methods marked
with :func:`rule`; they run, in the order they are defined, after every field passed, so they may
assume well-typed fields.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from collapse_probe.errors import ConfigError

__all__ = [
    "AtMost",
    "Constraint",
    "Integer",
    "Number",
    "OneOf",
    "Specs",
    "check_field",
    "check_value",
    "constraints_of",
    "flag_of",
    "param",
    "rule",
    "validate",
]

CONSTRAINTS = "collapse_probe.constraints"
"""Key of a field's constraints in its dataclass ``metadata``."""
FLAG = "collapse_probe.flag"
"""Key of a field's flag (how the user names it) in its dataclass ``metadata``."""
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


@dataclass(frozen=True)
class Integer(Constraint):
    """An integer (not a bool) ``>= least`` (``None``: any integer); ``optional`` also accepts ``None``.

    ``why`` is appended to the message in parentheses (why the bound is what it is). ``numpy`` also
    accepts numpy integers (an argument of a metrics function, often taken from an array)."""

    least: int | None = 1
    optional: bool = False
    why: str = ""
    numpy: bool = False
    numeric = True

    def check(self, value: Any, flag: str) -> None:
        if self.optional and value is None:
            return
        integer = isinstance(value, numbers.Integral if self.numpy else int) and not isinstance(value, bool)
        if not integer or (self.least is not None and value < self.least):
            bound = f" >= {self.least}" if self.least is not None else ""
            why = f" ({self.why})" if self.why else ""
            raise ConfigError(f"{flag} must be an integer{bound}{why}, got {value!r}")


@dataclass(frozen=True)
class AtMost(Constraint):
    """At most ``limit`` ``what`` per run (a bound on memory, see :mod:`collapse_probe.limits`); a
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
            why = f" ({self.why})" if self.why else ""
            none = " (or none)" if self.optional else ""
            raise ConfigError(f"{flag} must be {self.allowed}{none}{why}, got {value!r}")


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
            raise ConfigError(f"{flag} must be one of {names}{' or None' if self.optional else ''}, got {value!r}")


@dataclass(frozen=True)
class Specs(Constraint):
    """A list of non-empty strings (model specs); ``least`` of them at least, ``distinct`` if asked.

    ``name`` (e.g. ``policies``) is shown beside the flag in parentheses."""

    least: int = 0
    distinct: bool = False
    name: str = ""

    def check(self, value: Any, flag: str) -> None:
        where = f"{flag} ({self.name})" if self.name else flag
        if isinstance(value, str) or not isinstance(value, Sequence):
            raise ConfigError(f"{where}: expected a list of specs, got {value!r}")
        if len(value) < self.least:
            raise ConfigError(f"{where}: expected at least {self.least} spec(s), got an empty list")
        for s in value:
            if not isinstance(s, str) or not s.strip():
                raise ConfigError(f"{where}: every spec must be a non-empty string, got {s!r}")
        dup = sorted({s for s in value if list(value).count(s) > 1})
        if self.distinct and dup:
            raise ConfigError(f"{where}: duplicate specs {dup}; each row/column must be distinct")


def param(
    default: Any = dataclasses.MISSING, *constraints: Constraint, flag: str | None = None, factory: Any = None
) -> Any:
    """A dataclass field with ``constraints`` (and the ``flag`` that names it, when it is not
    ``--field-name``); ``factory`` builds a mutable default."""
    metadata = {CONSTRAINTS: tuple(constraints), FLAG: flag}
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def rule(method: F) -> F:
    """Mark a method of a config as a cross-field rule that :func:`validate` runs (after the fields)."""
    setattr(method, _RULE, True)
    return method


def constraints_of(field: dataclasses.Field[Any]) -> tuple[Constraint, ...]:
    """The constraints declared on ``field`` (empty: none)."""
    return tuple(field.metadata.get(CONSTRAINTS, ()))


def flag_of(config: Any, name: str) -> str:
    """How the user names field ``name`` of ``config`` (a class or an instance): its declared flag,
    else the class's ``FLAG_FORMAT`` (default ``--{dashed}``) filled with ``name`` and ``dashed``."""
    cls = config if isinstance(config, type) else type(config)
    for f in dataclasses.fields(cls):
        if f.name == name and f.metadata.get(FLAG):
            return str(f.metadata[FLAG])
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
    cls = config if isinstance(config, type) else type(config)
    (f,) = [f for f in dataclasses.fields(cls) if f.name == name]
    check_value(value, flag or flag_of(cls, name), constraints_of(f))


def _rules(cls: type) -> list[Callable[[Any], None]]:
    seen: dict[str, Callable[[Any], None]] = {}
    for klass in reversed(cls.__mro__):
        for name, member in vars(klass).items():
            if getattr(member, _RULE, False):
                seen[name] = member
    return list(seen.values())


def validate(config: Any, flags: Mapping[str, str] | None = None) -> None:
    """Check every declared constraint of the dataclass ``config``, then its :func:`rule` methods.

    A field whose value is itself a config with declared constraints is validated too, its fields
    named as the outer config's ``NESTED_FLAGS[field]`` maps them (the audit's ``rollout.tasks`` is
    its ``--states``); ``flags`` is that mapping for ``config``'s own fields.

    Raises:
        ConfigError: the first violation, one line naming the flag, the allowed values and the value.
    """
    nested = getattr(config, "NESTED_FLAGS", {})
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        check_value(value, (flags or {}).get(f.name) or flag_of(config, f.name), constraints_of(f))
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            validate(value, nested.get(f.name))
    for method in _rules(type(config)):
        method(config)
