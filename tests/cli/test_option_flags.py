"""Flags from a benchmark's ``Options`` of every field type: a list option is given as ``a,b`` or a
JSON array on the command line and in ``$COLLAPSE_PROBE_*``, as a list in a config file; a mapping as
JSON; a bad value is one line naming the flag."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from pydantic import Field

from collapse_probe.benchmarks import Benchmark, BenchmarkOptions
from collapse_probe.cli._config import _coerce
from collapse_probe.cli._env import apply_env
from collapse_probe.cli._flags import add_benchmark_flags


class Options(BenchmarkOptions):
    topics: list[str] = Field(default_factory=lambda: ["math"], description="topics asked")
    sizes: tuple[int, ...] | None = Field(None, description="sizes")
    weights: dict[str, float] | None = Field(None, description="weight per topic")
    limit: int | None = Field(None, ge=1)
    strict: bool = False


BENCH = Benchmark("typed-flags", Options, build=lambda options, context: None)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="collapse-probe play", exit_on_error=False)
    add_benchmark_flags(p, [BENCH])
    apply_env(p)  # what the CLI does for every subcommand's options
    return p


def _action(p: argparse.ArgumentParser, dest: str) -> argparse.Action:
    return next(a for a in p._actions if a.dest == dest)


def test_list_and_mapping_options_parse_from_the_command_line():
    args = _parser().parse_args(["--topics", "math, art,", "--sizes", "3,4", "--weights", '{"math": 0.5}'])
    assert args.topics == ["math", "art"] and args.sizes == [3, 4] and args.weights == {"math": 0.5}
    assert _parser().parse_args(["--topics", '["a,b", "c"]']).topics == ["a,b", "c"]
    options = BENCH.parse({k: v for k, v in vars(args).items() if v is not None})
    assert options.topics == ["math", "art"] and options.sizes == (3, 4) and options.weights == {"math": 0.5}


def test_list_options_from_the_environment(monkeypatch):
    monkeypatch.setenv("COLLAPSE_PROBE_TOPICS", "x,y")
    assert _parser().parse_args([]).topics == ["x", "y"]


def test_list_options_from_a_config_file():
    p = _parser()
    assert _coerce(Path("run.toml"), "topics", ["x", "y,z"], _action(p, "topics")) == ["x", "y,z"]
    assert _coerce(Path("run.toml"), "topics", "x,y", _action(p, "topics")) == ["x", "y"]
    assert _coerce(Path("run.toml"), "weights", {"a": 1}, _action(p, "weights")) == {"a": 1}


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--sizes", "3,four"], "argument --sizes: invalid list of int value: '3,four'"),
        (["--topics", "[1"], "argument --topics: expected JSON"),
        (["--weights", "{a: 1}"], "argument --weights: expected JSON"),
    ],
)
def test_a_bad_value_names_the_flag(argv, needle):
    with pytest.raises(argparse.ArgumentError) as err:
        _parser().parse_args(argv)
    assert needle in str(err.value) and "\n" not in str(err.value)
