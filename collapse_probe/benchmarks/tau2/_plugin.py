"""The τ2 benchmarks as the registry finds them: ``tau2-retail``, ``tau2-airline``, ``tau2-demo``."""

from __future__ import annotations

from functools import partial
from typing import TypedDict

from pydantic import Field

from collapse_probe.benchmarks._plugin import Benchmark, BenchmarkOptions, BuildContext
from collapse_probe.benchmarks.tau2._arena import Tau2Arena, make_arena
from collapse_probe.core.limits import MAX_TURNS
from collapse_probe.models import ChatModel


class Tau2Options(BenchmarkOptions):
    """The options of the τ2 benchmarks."""

    max_turns: int | None = Field(
        None, ge=1, le=MAX_TURNS, description="optional cap on user turns, reaching it scores 0 (default none)"
    )
    tau2_data: str | None = Field(
        None, description="directory with the official tau2 data (or $COLLAPSE_PROBE_TAU2_DATA)"
    )
    judge: str | None = Field(
        None, description="judge model spec of the natural-language assertions (without one the reward is DB-only)"
    )
    compact: bool | None = Field(
        None,
        description="small-context prompts and the text tool protocol (default: when a participant is a small "
        "local model)",
    )


def _resolve(options: Tau2Options, context: BuildContext) -> Tau2Options:
    if options.compact is not None:
        return options
    return options.model_copy(update={"compact": context.any_local()})


class _ArenaArguments(TypedDict, total=False):
    """The :func:`~collapse_probe.benchmarks.tau2.make_arena` arguments the options set."""

    data_dir: str | None
    max_turns: int | None
    compact: bool
    tool_protocol: str
    policy_max_tokens: int
    simulator_max_tokens: int
    judge: ChatModel


def _build(domain: str, options: Tau2Options, context: BuildContext) -> Tau2Arena:
    kwargs: _ArenaArguments = {"data_dir": options.tau2_data, "max_turns": options.max_turns}
    if options.compact:
        kwargs["compact"] = True
        kwargs["tool_protocol"] = "text"
    if options.max_tokens is not None:
        kwargs["policy_max_tokens"] = options.max_tokens
        kwargs["simulator_max_tokens"] = options.max_tokens
    judge = context.judge(options.judge)
    if judge is not None:
        kwargs["judge"] = judge
    return make_arena(domain, **kwargs)


def _benchmark(name: str, description: str) -> Benchmark:
    return Benchmark(
        name,
        Tau2Options,
        build=partial(_build, name),
        data=("tau2_data",),
        resolve=_resolve,
        description=description,
        factory=partial(make_arena, name),
    )


RETAIL = _benchmark("tau2-retail", "τ2-bench retail customer service (official data)")
AIRLINE = _benchmark("tau2-airline", "τ2-bench airline customer service (official data)")
DEMO = _benchmark("tau2-demo", "a small retail-like τ2 domain that ships here")
