"""What a benchmark registers: a typed ``Options`` model of its own fields, the data they name, and
``build(options, context) -> Arena``.

Every benchmark (shipped or from another installed package, see :mod:`collapse_probe.core._plugins`) is
one :class:`Benchmark`. Its ``options`` model is the single description of its fields: the CLI makes
one flag per field (``room_type`` -> ``--room-type``, with ``$COLLAPSE_PROBE_ROOM_TYPE`` and the
``--config`` key ``room-type``), its ``description`` is the flag's help, and its declarative
constraints (``Field(ge=1)``, ``Literal[...]``) give the one-line error naming the flag, what is
allowed and the value received. Fields listed in ``data`` name files or directories the arena reads:
``config.json`` records a content fingerprint of each, so a run resumed on changed data is refused.

Example (a complete plugin module)::

    from typing import Literal
    from pydantic import Field
    from collapse_probe.benchmarks import Benchmark, BenchmarkOptions

    class Options(BenchmarkOptions):
        room_type: Literal["single", "suite"] = Field("single", description="the guest's room")

    BENCHMARK = Benchmark("hotel-survey", Options, build=lambda o, ctx: HotelArena(o.room_type))
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.fields import FieldInfo

from collapse_probe.benchmarks._context import LOCAL_PREFIXES, BuildContext, is_local
from collapse_probe.core.limits import MAX_TOKENS, MAX_TURNS
from collapse_probe.errors import ConfigError

__all__ = ["LOCAL_PREFIXES", "Benchmark", "BenchmarkOptions", "BuildContext", "is_local"]

RESERVED = ("benchmark", "data_fingerprints", "custom", "options")
"""Keys of the arena record that are not options (an ``Options`` field may not use them)."""


class BenchmarkOptions(BaseModel):
    """Options every benchmark takes; a benchmark's own ``Options`` subclasses this and adds its fields."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_turns: int | None = Field(
        None, ge=1, le=MAX_TURNS, description="conversation rounds (default: the benchmark's own)"
    )
    max_tokens: int | None = Field(
        None, ge=1, le=MAX_TOKENS, description="token budget of every turn, both sides (default: the benchmark's own)"
    )


def _no_resolve(options: Any, context: BuildContext) -> Any:
    return options


@dataclass(frozen=True)
class Benchmark:
    """A benchmark as it registers itself.

    Args:
        name: what users give as ``--benchmark``.
        options: its ``Options`` model (a :class:`BenchmarkOptions` subclass).
        build: ``(options, context) -> Arena``.
        data: ``options`` fields naming data files or directories to fingerprint.
        resolve: ``(options, context) -> options`` with every participant-dependent choice made
            (idempotent; what ``config.json`` records); default: the options as given.
        description: one line for listings.
    """

    name: str
    options: type[BenchmarkOptions] = BenchmarkOptions
    build: Callable[[Any, BuildContext], Any] = field(default=lambda options, context: None)
    data: tuple[str, ...] = ()
    resolve: Callable[[Any, BuildContext], Any] = _no_resolve
    description: str = ""
    labeller: Callable[[str], str] | None = None
    """The benchmark's decision labeller ``reply -> class`` without an arena (``LabelPartitioner(name)``)."""
    factory: Callable[..., Any] | None = None
    """The arena factory taking raw keyword options, for :func:`~collapse_probe.benchmarks.make_arena`
    (default: ``build`` over the parsed options)."""

    def __post_init__(self) -> None:
        if not isinstance(self.options, type) or not issubclass(self.options, BaseModel):
            raise ConfigError(f"benchmark {self.name!r}: options must be a pydantic model class, got {self.options!r}")
        clash = sorted(set(self.options.model_fields) & set(RESERVED))
        if clash:
            raise ConfigError(f"benchmark {self.name!r}: option name(s) {clash} are reserved")
        missing = sorted(set(self.data) - set(self.options.model_fields))
        if missing:
            raise ConfigError(f"benchmark {self.name!r}: data fields {missing} are not options")

    def parse(self, values: Mapping[str, object]) -> BenchmarkOptions:
        """Validated options from ``values`` (field name -> value).

        Raises:
            ConfigError: one line naming the flag, what is allowed and the value received.
        """
        try:
            return self.options.model_validate(dict(values))
        except ValidationError as exc:
            raise options_error(self.name, exc) from None
        except ConfigError:
            raise
        except Exception as exc:  # a validator of the benchmark's own that raises TypeError, KeyError, ...
            text = str(exc).splitlines()[0][:300] if str(exc) else ""
            raise ConfigError(
                f"benchmark {self.name!r}: its options model {self.options.__name__} failed to check the options "
                f"({type(exc).__name__}{': ' + text if text else ''}); fix the benchmark's validators"
            ) from None


def flag_of(name: str) -> str:
    """``room_type`` -> ``--room-type``."""
    return "--" + name.replace("_", "-")


def options_error(benchmark: str, exc: ValidationError) -> ConfigError:
    """The first validation error of ``benchmark``'s options as one line naming the flag."""
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err.get("loc", ())) or "options"
    field_name = str(err.get("loc", ("",))[0])
    if err.get("type") == "extra_forbidden":
        return ConfigError(f"{flag_of(field_name)}: not an option of benchmark {benchmark!r}")
    got = err.get("input")
    return ConfigError(f"{flag_of(field_name)} ({benchmark} option {loc}): {err.get('msg')}, got {got!r}")


def option_fields(options: type[BaseModel]) -> dict[str, FieldInfo]:
    """Field name -> pydantic ``FieldInfo`` of an ``Options`` model, in declaration order."""
    return dict(options.model_fields)
