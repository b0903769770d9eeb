"""The plugin guard's time limit (construction and first use, sync and async, a coroutine that blocks
the event loop), what a plugin must return, plugin options clashing with built-in flags, and the
checks of the readers and adapter settings a plugin or a user's file feeds: each ends in one
:class:`ConfigError` naming the plugin, file or setting, never a hang or another exception."""

from __future__ import annotations

import argparse
import asyncio
import time
from importlib.metadata import EntryPoint

import pytest
from pydantic import Field, field_validator

from collapse_probe.core._plugins import (
    BENCHMARKS_GROUP,
    MODELS_GROUP,
    PluginTimeout,
    guard_plugin_call,
    refuse_clashing_options,
)
from collapse_probe.errors import ConfigError, InfraError, RunAbortedError

EP = EntryPoint("slow-plugin", "slow_mod:thing", MODELS_GROUP)


@pytest.fixture(autouse=True)
def _short_limit(monkeypatch):
    monkeypatch.setenv("COLLAPSE_PROBE_PLUGIN_TIMEOUT", "0.5")


def test_a_sync_call_that_never_returns_is_one_line_naming_the_plugin():
    guarded = guard_plugin_call(lambda: time.sleep(30), EP, "model backend 'slow-plugin'", "building it")
    start = time.monotonic()
    with pytest.raises(PluginTimeout, match=r"model backend 'slow-plugin' \(plugin 'slow_mod:thing'.*did not finish"):
        guarded()
    assert time.monotonic() - start < 5


def test_a_coroutine_that_awaits_for_ever_is_stopped():
    async def generate(requests):
        await asyncio.sleep(30)

    guarded = guard_plugin_call(generate, EP, "model backend 'slow-plugin'", "generate", limit="first", errors=False)
    with pytest.raises(PluginTimeout, match="generate did not finish within 0.5 s"):
        asyncio.run(guarded([]))


def test_a_coroutine_that_blocks_the_event_loop_is_stopped():
    async def generate(requests):
        time.sleep(30)  # no await: asyncio.wait_for alone would wait the 30 s

    guarded = guard_plugin_call(generate, EP, "model backend 'slow-plugin'", "generate", limit="first", errors=False)
    start = time.monotonic()
    with pytest.raises(PluginTimeout, match="slow-plugin"):
        asyncio.run(guarded([]))
    assert time.monotonic() - start < 5


def test_a_timeout_stops_the_run_rather_than_failing_requests():
    # pipelines let ConfigError and RunAbortedError through where they record other failures per request
    assert issubclass(PluginTimeout, ConfigError) and issubclass(PluginTimeout, RunAbortedError)


def test_only_the_first_use_is_timed_and_a_backend_error_is_a_named_failed_request():
    calls = []

    async def generate(requests):
        calls.append(1)
        if len(calls) == 2:
            await asyncio.sleep(0.8)  # longer than the limit: not the first use any more
        if len(calls) == 3:
            raise RuntimeError("provider down")
        return ["ok"]

    guarded = guard_plugin_call(generate, EP, "model backend 'slow-plugin'", "generate", limit="first", errors=False)
    assert asyncio.run(guarded([])) == ["ok"]
    assert asyncio.run(guarded([])) == ["ok"]
    with pytest.raises(InfraError, match=r"slow-plugin.*generate failed: RuntimeError: provider down"):
        asyncio.run(guarded([]))  # a failed request (named), not a broken plugin: the run goes on


def test_an_error_the_plugin_raises_for_the_user_gets_the_plugins_name():
    def build(options, context):
        raise ConfigError("the arena needs a data file")

    guarded = guard_plugin_call(build, EP, "benchmark 'slow-plugin'", "build")
    with pytest.raises(ConfigError, match=r"benchmark 'slow-plugin' \(plugin 'slow_mod:thing'.*the arena needs"):
        guarded(None, None)


def test_a_factory_that_returns_no_model_and_a_build_that_returns_no_arena_are_named():
    from collapse_probe.core._plugins import _guarded

    factory = _guarded(lambda spec, name, **kw: 5, EP, "model backend 'slow-plugin'")
    with pytest.raises(ConfigError, match="slow-plugin.*its factory returned an int, not a model backend"):
        factory("slow-plugin/m", "m")

    class Model:
        spec = "slow-plugin/m"

        async def generate(self, requests):
            await asyncio.sleep(30)

    model = _guarded(lambda spec, name, **kw: Model(), EP, "model backend 'slow-plugin'")("slow-plugin/m", "m")
    with pytest.raises(PluginTimeout, match="generate did not finish"):  # its first generate is timed
        asyncio.run(model.generate([]))

    from collapse_probe.benchmarks import Benchmark

    bench_ep = EntryPoint("no-arena", "mod:BENCH", BENCHMARKS_GROUP)
    bench = _guarded(Benchmark("no-arena", build=lambda o, c: None), bench_ep, "benchmark 'no-arena'")
    with pytest.raises(ConfigError, match="build returned None, not an arena"):
        bench.build(None, None)

    class Arena:
        def load_tasks(self, n=None, split=None, seed=0):
            raise RuntimeError("tasks file missing")

        def next_side(self, episode):
            return None

        new_episode = prompt_for = apply = next_side

        async def score(self, episodes):
            return []

    arena = _guarded(Benchmark("bad-arena", build=lambda o, c: Arena()), bench_ep, "benchmark 'no-arena'").build(1, 2)
    with pytest.raises(
        ConfigError, match=r"benchmark 'no-arena' \(plugin 'mod:BENCH'.*load_tasks failed: RuntimeError"
    ):
        arena.load_tasks()
    assert arena.next_side(None) is None


def _bench(**fields):
    from collapse_probe.benchmarks import Benchmark, BenchmarkOptions

    options = type("Options", (BenchmarkOptions,), {"__annotations__": dict.fromkeys(fields, bool), **fields})
    return Benchmark("clashing", options, build=lambda o, c: None)


@pytest.mark.parametrize(
    ("field", "flag"),
    [("sims", "--sims"), ("no_exact", "--no-exact"), ("exact", "--no-exact"), ("seed", "--seed"), ("help", "--help")],
)
def test_a_plugin_option_named_like_a_flag_of_the_command_is_refused(field, flag):
    p = argparse.ArgumentParser(prog="collapse-probe crossplay")
    p.add_argument("--sims", dest="sims")
    p.add_argument("--no-exact", dest="exact", action="store_false")
    p.add_argument("--seed", "--random-seed", dest="seed")
    with pytest.raises(ConfigError, match=f"benchmark 'clashing'.*its option '{field}'.*{flag}"):
        refuse_clashing_options(p, _bench(**{field: Field(False)}))


def test_a_plugin_option_shared_with_the_built_in_benchmarks_is_no_clash():
    p = argparse.ArgumentParser()
    p.add_argument("--max-turns", dest="max_turns")
    p.add_argument("--personas", dest="personas")
    shared = {"max_turns", "max_tokens", "personas"}
    refuse_clashing_options(p, _bench(personas=Field(False)), shared=shared)
    refuse_clashing_options(p, _bench(room_type=Field(False)), shared=shared)
    with pytest.raises(ConfigError, match="its option 'personas'"):
        refuse_clashing_options(p, _bench(personas=Field(False)), shared={"max_turns", "max_tokens"})


def test_a_validator_raising_type_error_is_one_line_naming_the_benchmark():
    from collapse_probe.benchmarks import Benchmark, BenchmarkOptions

    class Options(BenchmarkOptions):
        level: int = 1

        @field_validator("level")
        @classmethod
        def _explode(cls, v):
            raise TypeError("validator exploded")

    with pytest.raises(ConfigError, match="benchmark 'typeerr'.*TypeError: validator exploded"):
        Benchmark("typeerr", Options, build=lambda o, c: None).parse({"level": 2})


# ----------------------------------------------------------------------------------------- readers


def test_tool_call_arguments_nested_past_the_limit_are_refused_naming_where():
    from collapse_probe.integrations.interop._published import canonical_arguments

    where = "c.jsonl: line 2: messages[0]: tool_calls[0]"
    for deep in ("[" * 6000 + "]" * 6000, '{"x": ' + "[" * 150 + "]" * 150 + "}"):
        with pytest.raises(ConfigError, match=r"c\.jsonl: line 2: .*arguments.*nested deeper than 100"):
            canonical_arguments(deep, where)
    nested: object = []
    for _ in range(150):
        nested = [nested]
    with pytest.raises(ConfigError, match="nested deeper"):
        canonical_arguments({"x": nested}, where)
    assert canonical_arguments('{"b": 1, "a": [[1]]}', where) == '{"a": [[1]], "b": 1}'
    assert canonical_arguments("not json {", where) == "not json {"


def test_a_jsonl_line_past_the_limit_or_too_large_for_memory_names_file_and_line(tmp_path, monkeypatch):
    import collapse_probe.core._files as files
    from collapse_probe.core._files import MAX_LINE_BYTES, iter_json_lines

    assert MAX_LINE_BYTES <= 32 << 20  # a 200 MB line is refused before it is parsed
    f = tmp_path / "c.jsonl"
    f.write_text('{"a": 1}\n{"b": "' + "x" * 5000 + '"}\n')
    with pytest.raises(ConfigError, match=r"c\.jsonl: line 2 is longer than the"):
        list(iter_json_lines(f, expected="conversations", max_line_bytes=1000))

    def no_memory(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(files.json, "loads", no_memory)
    with pytest.raises(ConfigError, match=r"c\.jsonl: line 1: too large to parse in the memory available"):
        list(iter_json_lines(f, expected="conversations"))


# ------------------------------------------------------------------------------ adapter settings


@pytest.mark.parametrize(
    ("section", "needle"),
    [
        ([1, 2], "collapse_monitor: expected a mapping of settings"),
        ("sim=x", "collapse_monitor: expected a mapping of settings (key: value), got str"),
        ({"seed": "abc"}, "collapse_monitor.seed must be an integer"),
        ({"seed": -1}, "collapse_monitor.seed must be an integer"),
        ({"temperature": "hot"}, "collapse_monitor.temperature must be a finite number >= 0, got 'hot'"),
        ({"temperature": float("nan")}, "collapse_monitor.temperature must be a finite number"),
        ({"rollouts_per_step": 10**30}, "collapse_monitor.rollouts_per_step must be an integer in"),
        ({"monitor": [1]}, "collapse_monitor.monitor must be a mapping"),
        ({"monitor": {"shadow_fraction": "x"}}, "collapse_monitor: monitor shadow_fraction"),
        ({"cache": "maybe"}, "collapse_monitor.cache must be true or false"),
        ({"benchmark": ["p4g"]}, "collapse_monitor.benchmark must be a string"),
        ({"max_turns": "many"}, "collapse_monitor: --max-turns"),
        ({"sim": 5}, "collapse_monitor.sim must be a string"),
    ],
)
def test_verl_settings_are_checked_naming_the_setting(section, needle):
    from collapse_probe.integrations.monitor.verl import settings_from

    if isinstance(section, dict):
        section = {"sim": "scripted:d.json", "spool": "s", **section}
    with pytest.raises(ConfigError) as err:
        settings_from({"collapse_monitor": section})
    assert needle in str(err.value) and "\n" not in str(err.value)


def test_verl_overrides_that_are_no_mapping_are_refused():
    from collapse_probe.integrations.monitor.verl import settings_from

    with pytest.raises(ConfigError, match="agent loop's collapse_monitor entry: expected a mapping"):
        settings_from({"collapse_monitor": {"sim": "x", "spool": "s"}}, ["seed"])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("info", "needle"),
    [
        (5, "collapse_probe field: expected a mapping"),
        (["reward"], "collapse_probe field: expected a mapping"),
        ({"reward": "abc"}, "collapse_probe.reward"),
        ({"reward": float("inf")}, "collapse_probe.reward"),
        ({"validate": "yes"}, "collapse_probe.validate"),
        ({"opening": 3}, "collapse_probe.opening"),
        ({"task_id": [1]}, "collapse_probe.task_id"),
    ],
)
def test_a_verl_samples_collapse_probe_field_is_checked(info, needle):
    from collapse_probe.integrations.monitor.verl import _sample_info

    with pytest.raises(ConfigError, match=needle.replace(".", r"\.")):
        _sample_info(info)


@pytest.mark.parametrize(
    ("state", "needle"),
    [
        (None, "expected the mapping sampling_state() returned"),
        ("abc", "expected the mapping sampling_state() returned"),
        ([0.5, 3], "expected the mapping sampling_state() returned"),
        ({"phase": "x", "shadow_counter": 1}, "phase must be a number in [0, 1)"),
        ({"phase": 0.5, "shadow_counter": 2**70}, "shadow_counter must be an integer in"),
    ],
)
def test_restore_sampling_state_refuses_junk(state, needle):
    from collapse_probe.integrations.monitor import CollapseMonitor

    m = CollapseMonitor(shadow_samples=2, partition="exact")
    with pytest.raises(ConfigError) as err:
        m.restore_sampling_state(state)
    assert needle in str(err.value)
    m.restore_sampling_state(m.sampling_state())


@pytest.mark.parametrize(
    ("kw", "needle"),
    [
        ({"seed": "abc"}, "openrlhf seed must be an integer"),
        ({"monitor": [1]}, "openrlhf monitor must be a mapping"),
        ({"feedback": "{x}"}, "openrlhf feedback: expected text with {reply}"),
        ({"max_turns": 10**9}, "openrlhf max_turns must be an integer in"),
        ({"rollouts_per_step": 0}, "openrlhf rollouts_per_step must be an integer in"),
    ],
)
def test_openrlhf_session_settings_are_checked(kw, needle):
    from collapse_probe.integrations.monitor.openrlhf import ArenaSession

    with pytest.raises(ConfigError) as err:
        ArenaSession(**{"sim": "scripted:d.json", "rollouts_per_step": 2, **kw})
    assert needle in str(err.value)


def test_a_cancelled_first_generate_stays_a_cancellation():
    async def generate(requests):
        await asyncio.sleep(0.3)

    guarded = guard_plugin_call(generate, EP, "model backend 'slow-plugin'", "generate", limit="first", errors=False)

    async def main():
        task = asyncio.ensure_future(guarded([]))
        await asyncio.sleep(0.05)
        task.cancel()
        await task

    with pytest.raises(asyncio.CancelledError):
        asyncio.run(main())


def test_a_generate_or_partition_returning_no_list_stops_the_run_naming_the_plugin():
    from collapse_probe.core._plugins import PARTITIONERS_GROUP, BrokenPlugin, _guarded

    class Model:
        spec = "slow-plugin/m"

        async def generate(self, requests):
            return 5

    model = _guarded(lambda spec, name, **kw: Model(), EP, "model backend 'slow-plugin'")("slow-plugin/m", "m")
    with pytest.raises(BrokenPlugin, match="slow-plugin.*generate returned an int, not a list of results"):
        asyncio.run(model.generate([]))
    assert issubclass(BrokenPlugin, RunAbortedError)  # not recorded as failed requests

    class Partitioner:
        name = "none-part"

        def partition(self, texts):
            return None

    ep = EntryPoint("none-part", "mod:P", PARTITIONERS_GROUP)
    cls = _guarded(Partitioner, ep, "partitioner 'none-part'")
    with pytest.raises(ConfigError, match="none-part.*partition returned None, not a list of class labels"):
        cls().partition(["a", "b"])
