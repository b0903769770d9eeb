"""The one validation mechanism of every pipeline config (``collapse_probe.core._constraints``).

Two promises are checked over every config at once, so a new field cannot slip past them: every
numeric field declares a constraint, and any bad value of such a field is refused with one line that
names its flag and the value received.
"""

from __future__ import annotations

import math
from typing import Annotated, Any

import pytest

from collapse_probe.core._constraints import (
    AtMost,
    Config,
    Constraint,
    Flag,
    Integer,
    Number,
    OneOf,
    Specs,
    check_field,
    constraints_of,
    flag_of,
    rule,
)
from collapse_probe.core.limits import check_at_most, check_finite, check_int
from collapse_probe.errors import ConfigError
from collapse_probe.integrations.monitor import MonitorConfig
from collapse_probe.pipelines.audit import AuditConfig
from collapse_probe.pipelines.crossplay import CrossplayConfig
from collapse_probe.pipelines.play import PlayConfig
from collapse_probe.rollout import EngineConfig
from collapse_probe.rollout.runspec import RolloutConfig
from collapse_probe.trainers.config import TrainConfig
from collapse_probe.trainers.lab import LabConfig

CONFIGS = [RolloutConfig, PlayConfig, CrossplayConfig, AuditConfig, TrainConfig, LabConfig, MonitorConfig, EngineConfig]
"""Every pipeline config: a new one belongs here."""


def _type(cls: type, name: str) -> str:
    return str(cls.model_fields[name].annotation)


def _numeric(cls: type, name: str) -> bool:
    words = _type(cls, name).replace("|", " ").replace("[", " ").replace("]", " ").replace(",", " ").split()
    return any(w in ("int", "float", "<class 'int'>", "<class 'float'>") for w in words) or _type(cls, name) in (
        "<class 'int'>",
        "<class 'float'>",
    )


def _check(cls: type, **values: Any) -> None:
    """Build ``cls`` from ``values`` (every config is checked when built) and validate it again the way
    its pipeline does."""
    cls(**values).validate()


NUMERIC_FIELDS = [(cls, name) for cls in CONFIGS for name in cls.model_fields if _numeric(cls, name)]


def test_every_config_is_a_pydantic_config():
    assert all(issubclass(cls, Config) for cls in CONFIGS)
    assert len(NUMERIC_FIELDS) > 60  # the introspection sees the fields


@pytest.mark.parametrize(("cls", "name"), NUMERIC_FIELDS, ids=[f"{c.__name__}.{n}" for c, n in NUMERIC_FIELDS])
def test_every_numeric_field_declares_its_constraint(cls, name):
    numeric = [c for c in constraints_of(cls, name) if c.numeric]
    assert numeric, (
        f"{cls.__name__}.{name} ({_type(cls, name)}) declares no constraint: annotate it with Integer/Number"
    )
    # None passes exactly where the type says it may
    optional = "None" in _type(cls, name)
    bounds = [c for c in numeric if isinstance(c, (Integer, Number))]
    assert bounds and all(c.optional == optional for c in bounds), (cls.__name__, name, _type(cls, name), bounds)


def test_defaults_are_valid():
    for cls in CONFIGS:
        _check(cls)


def _bad_values(constraints: tuple[Constraint, ...]) -> Any:
    """Values every one of which some constraint in ``constraints`` must refuse (a hypothesis strategy)."""
    from hypothesis import strategies as st

    bad: list[st.SearchStrategy[Any]] = [
        st.booleans(),  # a bool is not a number here
        st.text(max_size=5),
        st.integers(0, 99).map(str),  # "3" is not 3: nothing is coerced
        st.lists(st.integers(), max_size=2),
    ]
    for c in constraints:
        if isinstance(c, Integer):
            bad.append(st.floats(allow_nan=True, allow_infinity=True).filter(lambda v: not float(v).is_integer()))
            if c.least is not None:
                bad.append(st.integers(max_value=c.least - 1))
            if not c.optional:
                bad.append(st.none())
        elif isinstance(c, Number):
            bad.append(st.sampled_from([math.nan, math.inf, -math.inf]))
            for lo, closed in ((c.ge, True), (c.gt, False)):
                if lo is not None:
                    bad.append(st.floats(max_value=lo, exclude_max=closed, allow_nan=False, allow_infinity=False))
            for hi, closed in ((c.le, True), (c.lt, False)):
                if hi is not None:
                    bad.append(st.floats(min_value=hi, exclude_min=closed, allow_nan=False, allow_infinity=False))
            if not c.optional:
                bad.append(st.none())
        elif isinstance(c, AtMost):
            bad.append(st.integers(min_value=c.limit + 1, max_value=c.limit * 10))
    return st.one_of(bad)


@pytest.mark.parametrize(("cls", "name"), NUMERIC_FIELDS, ids=[f"{c.__name__}.{n}" for c, n in NUMERIC_FIELDS])
def test_a_bad_value_is_one_line_naming_the_flag_and_the_value(cls, name):
    # imported here, not with the module: the framework tier's environment (scripts/framework_env.sh)
    # has no hypothesis, and every test module must collect there
    pytest.importorskip("hypothesis")
    from hypothesis import HealthCheck, given, settings

    flag = flag_of(cls, name)

    @settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
    @given(_bad_values(constraints_of(cls, name)))
    def bad(value: Any) -> None:
        with pytest.raises(ConfigError) as err:
            _check(cls, **{name: value})
        message = str(err.value)
        assert "\n" not in message and flag in message, message
        assert repr(value) in message or str(value) in message, message

    bad()


def test_nothing_is_coerced_and_none_only_where_declared():
    with pytest.raises(ConfigError, match=r"--tasks must be an integer >= 1, got '3'"):
        _check(PlayConfig, tasks="3")
    with pytest.raises(ConfigError, match=r"--rollouts must be an integer in \[1, 10,000\], got True"):
        _check(CrossplayConfig, rollouts=True)
    with pytest.raises(ConfigError, match=r"--temperature must be a finite number >= 0, got None"):
        _check(AuditConfig, temperature=None)
    _check(AuditConfig, max_turns=None, batch_states=None)  # declared optional
    with pytest.raises(ConfigError, match=r"monitor level must be a number in \(0, 1\), got 1"):
        _check(MonitorConfig, level=1)


def test_messages_name_flag_allowed_values_and_value():
    assert Number(gt=0).allowed == "a finite number > 0"
    assert Number(ge=0, lt=1).allowed == "a number in [0, 1)"
    assert Number(le=2).allowed == "a finite number <= 2"
    assert Number().allowed == "a finite number"
    with pytest.raises(ConfigError, match=r"^--samples must be an integer >= 2 \(a collapse error needs"):
        _check(AuditConfig, samples=1)
    with pytest.raises(ConfigError, match=r"^--tasks 100001: at most 100,000 tasks per run"):
        _check(CrossplayConfig, tasks=100_001)
    with pytest.raises(ConfigError, match=r"^--tis-cap must be a finite number > 0, got 0"):
        _check(TrainConfig, tis_cap=0)
    with pytest.raises(ConfigError, match=r"^--entropy-turns must be one of first, all, got 'some'"):
        _check(CrossplayConfig, entropy_turns="some")
    with pytest.raises(ConfigError, match=r"^--sims \(simulators\): duplicate specs \['x'\]"):
        _check(CrossplayConfig, simulators=["x", "x"])


def test_cross_field_rules_run_after_the_fields():
    with pytest.raises(ConfigError, match="--train-sim 'y' is not among --sims"):
        _check(CrossplayConfig, simulators=["x"], train_simulator="y")
    with pytest.raises(ConfigError, match=r"--tasks x --rollouts x cells = 1020000: at most 1,000,000"):
        _check(CrossplayConfig, policies=["a"], simulators=["x", "y"], tasks=51, rollouts=10_000)
    # a field's own range is checked before the rules: one line naming the flag and the range
    with pytest.raises(ConfigError, match=r"^--n-boot must be an integer in \[100, 100,000\], got 100000000$"):
        _check(AuditConfig, n_boot=100_000_000)
    with pytest.raises(ConfigError, match="ensemble_size must be < n_families"):
        _check(LabConfig, ensemble_size=6)
    with pytest.raises(ConfigError, match=r"--states x --rollouts = 100002"):
        _check(AuditConfig, states=50_001, rollouts=2)


def test_the_mechanism_on_a_config_of_its_own():
    calls: list[str] = []

    class Own(Config):
        FLAG_FORMAT = "option {name}"
        count: Annotated[int, Integer(0), AtMost(10, "things")] = 1
        share: Annotated[float | None, Number(gt=0, le=1, optional=True), Flag("--share")] = None
        mode: Annotated[str, OneOf(("a", "b"))] = "a"
        names: Annotated[list[str], Specs(1)] = ["x"]

        @rule
        def _first(self) -> None:
            calls.append("first")
            if self.count > 5 and self.mode == "a":
                raise ConfigError("option count above 5 needs mode b")

        @rule
        def _second(self) -> None:
            calls.append("second")

    Own()
    assert calls == ["first", "second"]
    assert flag_of(Own, "count") == "option count" and flag_of(Own, "share") == "--share"
    for values, message in (
        ({"count": 11}, "option count 11: at most 10 things per run"),
        ({"count": -1}, "option count must be an integer >= 0, got -1"),
        ({"share": 0.0}, r"--share must be a number in \(0, 1\], got 0.0"),
        ({"mode": "c"}, "option mode must be one of a, b, got 'c'"),
        ({"names": []}, "option names: expected at least one model spec"),
        ({"count": 6}, "needs mode b"),
    ):
        with pytest.raises(ConfigError, match=message):
            Own(**values)
    own = Own()
    own.count = 11  # attributes may be set; validate() checks the whole config again
    with pytest.raises(ConfigError, match="option count 11: at most 10 things per run"):
        own.validate()
    assert Own(names=("a", "b")).names == ["a", "b"]  # a sequence of specs is held as a list
    with pytest.raises(ConfigError, match=r"^Own: unknown field 'cout' \(did you mean count\?\)$"):
        Own(cout=3)
    with pytest.raises(ConfigError, match=r"^option mode must be one of a, b, got 3$"):
        Own(mode=3)
    check_field(Own, "count", 3)
    with pytest.raises(ConfigError, match="--count must be an integer >= 0"):
        check_field(Own, "count", -3, "--count")


def test_limits_helpers_go_through_the_mechanism():
    check_int(None, "--x", optional=True)
    with pytest.raises(ConfigError, match=r"^--x must be an integer >= 1, got None$"):
        check_int(None, "--x")
    with pytest.raises(ConfigError, match=r"^--x must be an integer, got 1.5$"):
        check_int(1.5, "--x", None)
    with pytest.raises(ConfigError, match=r"^--t must be a finite number >= 0, got nan$"):
        check_finite(math.nan, "--t")
    check_at_most("not a number", 3, "--n", "things")  # left to the integer check
    with pytest.raises(ConfigError, match=r"^--n 4: at most 3 things per run"):
        check_at_most(4, 3, "--n", "things")


def test_numpy_numbers_and_inf_only_where_declared():
    import numpy as np

    from collapse_probe.core._constraints import check_value

    check_value(np.int64(12), "n_boot", [Integer(10, numpy=True)])
    check_value(np.float32(0.5), "x", [Number(ge=0, numpy=True)])
    check_value(math.inf, "q", [Number(ge=0, inf=True)])
    for value, constraint, message in (
        (np.int64(12), Integer(10), r"^n must be an integer >= 10, got np.int64\(12\)$"),
        (np.float64(2.0), Integer(1, numpy=True), r"^n must be an integer >= 1, got np.float64\(2.0\)$"),
        (np.bool_(True), Integer(0, numpy=True), r"^n must be an integer >= 0, got np.True_$"),
        (np.int64(3), Integer(10, numpy=True), r"^n must be an integer >= 10, got np.int64\(3\)$"),
        (np.float32(0.5), Number(ge=0), r"^n must be a finite number >= 0, got np.float32\(0.5\)$"),
        (math.inf, Number(ge=0), r"^n must be a finite number >= 0, got inf$"),
        (-math.inf, Number(ge=0, inf=True), r"^n must be a number >= 0 or inf, got -inf$"),
        (math.nan, Number(ge=0, inf=True, numpy=True), r"^n must be a number >= 0 or inf, got nan$"),
        (-1, Number(ge=0, inf=True), r"^n must be a number >= 0 or inf, got -1$"),
    ):
        with pytest.raises(ConfigError, match=message):
            check_value(value, "n", [constraint])
    assert Number(inf=True).allowed == "a number or inf"
