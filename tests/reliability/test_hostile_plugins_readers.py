"""Hostile plugins, readers and adapter settings, each run as its own process (60 s at most) and held to
:mod:`hostile_cases`' rule: exit 2 with one error line naming the plugin, file or setting at fault,
no traceback, no hang.

- plugins: benchmarks, model backends and partitioners whose import fails, whose factory, ``build``,
  ``resolve``, first ``generate`` or first ``partition`` never returns (awaiting, or blocking the event
  loop), that return the wrong thing, whose options clash with a command's flags, whose validators
  raise ``TypeError``, whose entry point names a string, a module or a number;
- readers: a JSONL line of 200 MB, tool-call arguments thousands of levels deep (as JSON text, flat
  or OpenAI-style, in a JSONL file or a τ-bench file);
- the verl adapter's settings and samples, the OpenRLHF session, ``restore_sampling_state``.

The plugins are one distribution built and installed with pip (offline) onto a directory only the
cases' processes see, as :func:`hostile_cases.install_hostile_plugins` does.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from hostile_cases import CACHE, REPO, Case, cli, py, run_case  # noqa: E402

pytestmark = pytest.mark.reliability

LIMIT_S = 60.0
"""Wall-clock seconds a case may run (the plugin limit is 3 s, so a guarded hang ends well inside it)."""
DIST = "cp-hostile-b2"

PLUGIN_CODE = textwrap.dedent("""
    import asyncio
    import time

    from pydantic import Field, field_validator

    from collapse_probe.benchmarks import Benchmark, BenchmarkOptions
    from collapse_probe.errors import ConfigError

    def _sleep(*args, **kwargs):
        time.sleep(3600)

    SLEEPY_BUILD = Benchmark("sleepy-build", BenchmarkOptions, build=_sleep)
    SLEEPY_RESOLVE = Benchmark("sleepy-resolve", BenchmarkOptions, build=_sleep, resolve=_sleep)
    NONE_ARENA = Benchmark("none-arena", BenchmarkOptions, build=lambda o, c: None)
    STR_ARENA = Benchmark("str-arena", BenchmarkOptions, build=lambda o, c: "an arena")

    def _own_error(options, context):
        raise ConfigError("the arena needs its data file")

    OWN_ERROR = Benchmark("own-error", BenchmarkOptions, build=_own_error)

    class TasksMissing:
        def load_tasks(self, n=None, split=None, seed=0):
            raise RuntimeError("tasks file missing")

        def new_episode(self, task, seed): ...
        def next_side(self, episode): ...
        def prompt_for(self, episode, side): ...
        def apply(self, episode, side, completion, text): ...
        async def score(self, episodes): ...

    class TasksHang(TasksMissing):
        def load_tasks(self, n=None, split=None, seed=0):
            time.sleep(3600)

    TASKS_MISSING = Benchmark("tasks-missing", BenchmarkOptions, build=lambda o, c: TasksMissing())
    TASKS_HANG = Benchmark("tasks-hang", BenchmarkOptions, build=lambda o, c: TasksHang())

    class SimsOptions(BenchmarkOptions):
        sims: str = Field("x", description="clashes with --sims")

    class NoExactOptions(BenchmarkOptions):
        no_exact: bool = Field(False, description="clashes with --no-exact")

    class SeedOptions(BenchmarkOptions):
        seed: int = Field(0, description="clashes with --seed")

    class HelpOptions(BenchmarkOptions):
        help: bool = Field(False, description="clashes with --help")

    CLASH_SIMS = Benchmark("clash-sims", SimsOptions, build=_sleep)
    CLASH_NO_EXACT = Benchmark("clash-no-exact", NoExactOptions, build=_sleep)
    CLASH_SEED = Benchmark("clash-seed", SeedOptions, build=_sleep)
    CLASH_HELP = Benchmark("clash-help", HelpOptions, build=_sleep)

    class TypeErrorOptions(BenchmarkOptions):
        level: int = Field(1, description="a level")

        @field_validator("level")
        @classmethod
        def _explode(cls, v):
            raise TypeError("validator exploded")

    class KeyErrorOptions(BenchmarkOptions):
        level: int = Field(1, description="a level")

        @field_validator("level")
        @classmethod
        def _explode(cls, v):
            return {}["missing"]

    TYPEERR = Benchmark("typeerr-bench", TypeErrorOptions, build=_sleep)
    KEYERR = Benchmark("keyerr-bench", KeyErrorOptions, build=_sleep)
    STRING_BENCH = "not a benchmark"
    INT_BENCH = 42

    def make_sleepy(spec, name, **options):
        time.sleep(3600)

    def make_int(spec, name, **options):
        return 5

    def make_none(spec, name, **options):
        return None

    class NoGenerate:
        spec = "nogen/m"

    def make_nogen(spec, name, **options):
        return NoGenerate()

    class AwaitsForEver:
        def __init__(self, spec):
            self.spec = spec

        async def generate(self, requests):
            await asyncio.sleep(3600)

    class BlocksTheLoop:
        def __init__(self, spec):
            self.spec = spec

        async def generate(self, requests):
            time.sleep(3600)

    def make_awaits(spec, name, **options):
        return AwaitsForEver(spec)

    def make_blocks(spec, name, **options):
        return BlocksTheLoop(spec)

    class SleepyPartition:
        name = "sleepy-part"

        def partition(self, texts):
            time.sleep(3600)

    class NonePartition:
        name = "none-part"

        def partition(self, texts):
            return None

    class ReturnsAnInt:
        def __init__(self, spec):
            self.spec = spec

        async def generate(self, requests):
            return 5

    def make_returns_int(spec, name, **options):
        return ReturnsAnInt(spec)

    class SleepyInit:
        name = "sleepy-init"

        def __init__(self, **kwargs):
            time.sleep(3600)

        def partition(self, texts):
            return [0] * len(texts)
""")

MODULES = {
    "cphb_plugins": PLUGIN_CODE,
    "cphb_broken": "raise RuntimeError('broken-bench exploded on import')\n",
    "cphb_syntax": "def broken(:\n",
}
ENTRY_POINTS = """
[project.entry-points."collapse_probe.benchmarks"]
broken-bench = "cphb_broken:BENCHMARK"
syntax-bench = "cphb_syntax:BENCHMARK"
sleepy-build = "cphb_plugins:SLEEPY_BUILD"
sleepy-resolve = "cphb_plugins:SLEEPY_RESOLVE"
none-arena = "cphb_plugins:NONE_ARENA"
str-arena = "cphb_plugins:STR_ARENA"
own-error = "cphb_plugins:OWN_ERROR"
tasks-missing = "cphb_plugins:TASKS_MISSING"
tasks-hang = "cphb_plugins:TASKS_HANG"
clash-sims = "cphb_plugins:CLASH_SIMS"
clash-no-exact = "cphb_plugins:CLASH_NO_EXACT"
clash-seed = "cphb_plugins:CLASH_SEED"
clash-help = "cphb_plugins:CLASH_HELP"
typeerr-bench = "cphb_plugins:TYPEERR"
keyerr-bench = "cphb_plugins:KEYERR"
string-bench = "cphb_plugins:STRING_BENCH"
int-bench = "cphb_plugins:INT_BENCH"
module-bench = "cphb_plugins"

[project.entry-points."collapse_probe.models"]
sleepy = "cphb_plugins:make_sleepy"
intmodel = "cphb_plugins:make_int"
nonemodel = "cphb_plugins:make_none"
nogen = "cphb_plugins:make_nogen"
awaits = "cphb_plugins:make_awaits"
blocks = "cphb_plugins:make_blocks"
intgen = "cphb_plugins:make_returns_int"

[project.entry-points."collapse_probe.partitioners"]
sleepy-part = "cphb_plugins:SleepyPartition"
sleepy-init = "cphb_plugins:SleepyInit"
none-part = "cphb_plugins:NonePartition"
"""
SITE = CACHE / "plugins-b2"


def _install(target: Path) -> None:
    src = Path(tempfile.mkdtemp(prefix="hostile-b2-dist-"))
    try:
        (src / "pyproject.toml").write_text(
            '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n\n'
            f'[project]\nname = "{DIST}"\nversion = "0.1"\n\n[tool.setuptools]\n'
            f"py-modules = {json.dumps(list(MODULES))}\n" + ENTRY_POINTS
        )
        for name, code in MODULES.items():
            (src / f"{name}.py").write_text(code)
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                        "--no-index", "--no-compile", "--target", str(target), str(src)], check=True,
                       capture_output=True, timeout=300)  # fmt: skip
    finally:
        shutil.rmtree(src, ignore_errors=True)


def _site() -> Path:
    marker = SITE / f"built-{hashlib.sha256((PLUGIN_CODE + ENTRY_POINTS).encode()).hexdigest()[:12]}"
    if not marker.exists():
        shutil.rmtree(SITE, ignore_errors=True)
        SITE.mkdir(parents=True)
        _install(SITE)
        marker.write_text("")
    return SITE


ENV = {"COLLAPSE_PROBE_PLUGIN_TIMEOUT": "3", "PYTHONPATH": os.pathsep.join([str(SITE), str(REPO)])}
DONOR = {"responses": [{"text": "Sure [DONATE $1]", "p": 0.5}, {"text": "No [DONATE $0]", "p": 0.5}]}


def plugin(*args: str) -> Callable[[Path], list[str]]:
    def build(d: Path) -> list[str]:
        _site()
        (d / "donor.json").write_text(json.dumps(DONOR))
        return cli(*args)

    return build


def audit(*extra: str) -> Callable[[Path], list[str]]:
    return plugin("audit", "--sim", "scripted:donor.json", "--states", "1", "--samples", "4", "--no-cache",
                  "--no-progress", "--out", "o", *extra)  # fmt: skip


def bench(name: str, command: str = "audit") -> Callable[[Path], list[str]]:
    if command == "crossplay":
        return plugin("crossplay", "--benchmark", name, "--policies", "scripted:donor.json", "--sims",
                      "scripted:donor.json", "--tasks", "1", "--rollouts", "1", "--no-progress", "--out", "o")  # fmt: skip
    return audit("--benchmark", name)


def _case(name: str, build: Callable[[Path], list[str]], *names: str) -> Case:
    return Case(name, "plugins-b2", build, names=names, timeout=LIMIT_S, env=ENV)


PLUGIN_CASES = [
    _case("benchmark raising on import", bench("broken-bench"), "broken-bench", DIST, "RuntimeError"),
    _case("benchmark raising on import: crossplay", bench("broken-bench", "crossplay"), "broken-bench", DIST),
    _case("benchmark with a syntax error", bench("syntax-bench"), "syntax-bench", DIST, "SyntaxError"),
    _case("benchmark build sleeping", bench("sleepy-build"), "sleepy-build", DIST, "did not finish"),
    _case("benchmark resolve sleeping", bench("sleepy-resolve"), "sleepy-resolve", DIST, "did not finish"),
    _case("benchmark build returning None", bench("none-arena"), "none-arena", DIST, "not an arena"),
    _case("benchmark build returning a string", bench("str-arena"), "str-arena", DIST, "not an arena"),
    _case("benchmark build raising its own ConfigError", bench("own-error"), "own-error", DIST, "data file"),
    _case("benchmark arena's load_tasks raising", bench("tasks-missing"), "tasks-missing", DIST, "load_tasks"),
    _case("benchmark arena's load_tasks sleeping", bench("tasks-hang"), "tasks-hang", DIST, "did not finish"),
    _case(
        "benchmark arena's load_tasks raising: play",
        plugin(
            "play",
            "--benchmark",
            "tasks-missing",
            "--policy",
            "scripted:donor.json",
            "--sim",
            "scripted:donor.json",
            "--tasks",
            "1",
            "--rollouts",
            "1",
            "--no-progress",
            "--out",
            "o",
        ),  # fmt: skip
        "tasks-missing",
        DIST,
    ),
    _case("benchmark option --sims (crossplay)", bench("clash-sims", "crossplay"), "clash-sims", DIST, "--sims"),
    _case("benchmark option --no-exact (audit)", bench("clash-no-exact"), "clash-no-exact", DIST, "--no-exact"),
    _case("benchmark option --seed (audit)", bench("clash-seed"), "clash-seed", DIST, "--seed"),
    _case("benchmark option --help (audit)", bench("clash-help"), "clash-help", DIST, "--help"),
    _case("benchmark validator raising TypeError", bench("typeerr-bench"), "typeerr-bench", "TypeError"),
    _case("benchmark validator raising KeyError", bench("keyerr-bench"), "keyerr-bench", "KeyError"),
    _case("benchmark entry point naming a string", bench("string-bench"), "string-bench", DIST, "str"),
    _case("benchmark entry point naming an int", bench("int-bench"), "int-bench", DIST, "int"),
    _case("benchmark entry point naming a module", bench("module-bench"), "module-bench", DIST, "module"),
    _case("model factory sleeping", audit("--sim", "sleepy/m"), "sleepy", DIST, "did not finish"),
    _case("model factory returning an int", audit("--sim", "intmodel/m"), "intmodel", DIST, "int"),
    _case("model factory returning None", audit("--sim", "nonemodel/m"), "nonemodel", DIST, "None"),
    _case("model without generate", audit("--sim", "nogen/m"), "nogen", DIST, "generate"),
    _case("model generate awaiting for ever", audit("--sim", "awaits/m"), "awaits", DIST, "generate"),
    _case("model generate blocking the loop", audit("--sim", "blocks/m"), "blocks", DIST, "generate"),
    _case(
        "model generate blocking the loop: play",
        plugin(
            "play",
            "--policy",
            "scripted:donor.json",
            "--sim",
            "blocks/m",
            "--tasks",
            "1",
            "--rollouts",
            "1",
            "--no-cache",
            "--no-progress",
            "--out",
            "o",
        ),  # fmt: skip
        "blocks",
        DIST,
    ),
    _case("model generate returning an int", audit("--sim", "intgen/m"), "intgen", DIST, "generate returned an int"),
    _case("partitioner partition returning None", audit("--partition", "none-part"), "none-part", DIST, "None"),
    _case("partitioner partition sleeping", audit("--partition", "sleepy-part"), "sleepy-part", DIST, "partition"),
    _case("partitioner __init__ sleeping", audit("--partition", "sleepy-init"), "sleepy-init", DIST, "did not finish"),
]

# ------------------------------------------------------------------------------------------- readers

OK_RECORD = {"task_id": "t", "messages": [{"role": "assistant", "content": "hi"}, {"role": "user", "content": "a"}]}


def _jsonl(second: dict) -> Callable[[Path], list[str]]:
    def build(d: Path) -> list[str]:
        with open(d / "c.jsonl", "w") as f:
            f.write(json.dumps(OK_RECORD) + "\n" + json.dumps(second) + "\n")
        return cli("audit", "--from", "c.jsonl", "--partition", "exact", "--no-progress", "--out", "o")

    return build


def _call(arguments: object, flat: bool = False) -> dict:
    call = {"name": "lookup", "arguments": arguments}
    return {
        "task_id": "t",
        "messages": [
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [call if flat else {"id": "c", "type": "function", "function": call}],
            },
            {"role": "user", "content": "a"},
        ],  # fmt: skip
    }


def _deep(n: int) -> str:
    return '{"q": ' + "[" * n + "]" * n + "}"


def _taubench(d: Path) -> list[str]:
    traj = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "", "tool_calls": [
        {"function": {"name": "f", "arguments": _deep(6000)}}]}]  # fmt: skip
    (d / "traj.json").write_text(json.dumps([{"task_id": 1, "reward": 1.0, "info": {}, "traj": traj, "trial": 0}]))
    return cli("audit", "--from", "traj.json", "--format", "taubench", "--partition", "exact", "--no-progress",
               "--out", "o")  # fmt: skip


def _reader(name: str, build: Callable[[Path], list[str]], *names: str) -> Case:
    return Case(name, "readers-b2", build, names=names, timeout=LIMIT_S)


READER_CASES = [
    _reader("JSONL one line of 200 MB", _jsonl({**OK_RECORD, "pad": "x" * (200 << 20)}), "c.jsonl", "line 2"),
    _reader("JSONL one line of 20 MB", _jsonl({**OK_RECORD, "pad": "y" * (20 << 20)}), "c.jsonl", "line 2"),
    _reader(
        "JSONL tool arguments: 6000-deep JSON text",
        _jsonl(_call(_deep(6000))),
        "c.jsonl",
        "line 2",
        "arguments",
        "nested",
    ),
    _reader("JSONL tool arguments: 150-deep JSON text", _jsonl(_call(_deep(150))), "c.jsonl", "line 2", "nested"),
    _reader("JSONL flat tool call: 6000-deep JSON text", _jsonl(_call(_deep(6000), flat=True)), "c.jsonl", "arguments"),
    _reader("τ-bench tool arguments: 6000-deep JSON text", _taubench, "traj.json", "arguments", "nested"),
]

# -------------------------------------------------------------------------------- adapter settings

API = """
import asyncio, json, sys
from collapse_probe.errors import ConfigError
try:
{body}
except ConfigError as exc:
    print("error: " + str(exc), file=sys.stderr)
    sys.exit(2)
"""


def api(body: str) -> Callable[[Path], list[str]]:
    def build(d: Path) -> list[str]:
        (d / "donor.json").write_text(json.dumps(DONOR))
        return py(API.format(body=textwrap.indent(textwrap.dedent(body), "    ")))

    return build


def verl(section: str) -> Callable[[Path], list[str]]:
    return api(f"""
        from collapse_probe.integrations.monitor.verl import settings_from
        settings_from({{"collapse_monitor": {section}}})
    """)


def verl_record(info: str) -> Callable[[Path], list[str]]:
    return api(f"""
        from collapse_probe.integrations.monitor.verl import RewardSession
        s = RewardSession({{"sim": "scripted:donor.json", "spool": "spool", "max_turns": 2,
                           "monitor": {{"shadow_samples": 2, "partition": "exact"}}}}, 2)
        asyncio.run(s.record({info}))
    """)


def _setting(name: str, build: Callable[[Path], list[str]], *names: str) -> Case:
    return Case(name, "settings-b2", build, names=names, timeout=LIMIT_S)


SIM = '"sim": "scripted:donor.json", "spool": "spool"'
SETTING_CASES = [
    _setting("verl section a list", verl("[1, 2]"), "collapse_monitor", "mapping"),
    _setting("verl section a string", verl('"sim=x"'), "collapse_monitor", "mapping"),
    _setting("verl seed: abc", verl(f'{{{SIM}, "seed": "abc"}}'), "collapse_monitor.seed"),
    _setting("verl temperature: hot", verl(f'{{{SIM}, "temperature": "hot"}}'), "collapse_monitor.temperature"),
    _setting("verl temperature: NaN", verl(f'{{{SIM}, "temperature": float("nan")}}'), "collapse_monitor.temperature"),
    _setting("verl rollouts_per_step 1e30", verl(f'{{{SIM}, "rollouts_per_step": 10**30}}'), "rollouts_per_step"),
    _setting("verl monitor a list", verl(f'{{{SIM}, "monitor": [1]}}'), "collapse_monitor.monitor"),
    _setting("verl cache: maybe", verl(f'{{{SIM}, "cache": "maybe"}}'), "collapse_monitor.cache"),
    _setting("verl max_turns: many", verl(f'{{{SIM}, "max_turns": "many"}}'), "collapse_monitor", "max-turns"),
    _setting("verl reward abc", verl_record('{"reward": "abc", "task_id": "t"}'), "collapse_probe.reward"),
    _setting("verl reward inf", verl_record('{"reward": float("inf"), "task_id": "t"}'), "collapse_probe.reward"),
    _setting("verl record info not a mapping", verl_record("5"), "collapse_probe field", "mapping"),
    _setting("verl record info a list", verl_record('["reward", 1.0]'), "collapse_probe field", "mapping"),
    _setting(
        "restore_sampling_state on junk",
        api("""
            from collapse_probe.integrations.monitor import CollapseMonitor
            CollapseMonitor(shadow_samples=2, partition="exact").restore_sampling_state("junk")
        """),
        "sampling state",
    ),
    _setting(
        "restore_sampling_state on None",
        api("""
            from collapse_probe.integrations.monitor import CollapseMonitor
            CollapseMonitor(shadow_samples=2, partition="exact").restore_sampling_state(None)
        """),
        "sampling state",
    ),
    _setting(
        "OpenRLHF seed: abc",
        api("""
            from collapse_probe.integrations.monitor.openrlhf import ArenaSession
            ArenaSession(sim="scripted:donor.json", rollouts_per_step=2, seed="abc")
        """),
        "openrlhf seed",
    ),
    _setting(
        "OpenRLHF feedback naming another field",
        api("""
            from collapse_probe.integrations.monitor.openrlhf import ArenaSession
            ArenaSession(sim="scripted:donor.json", rollouts_per_step=2, feedback="{policy}")
        """),
        "openrlhf feedback",
    ),
]

CASES = PLUGIN_CASES + READER_CASES + SETTING_CASES


@pytest.fixture(scope="module", autouse=True)
def _plugins_installed():
    try:
        _site()
    except subprocess.CalledProcessError as exc:
        pytest.skip(f"cannot build a local distribution here: {exc.stderr!r:.200}")


@pytest.mark.parametrize("case", CASES, ids=[f"{c.family}: {c.name}" for c in CASES])
def test_hostile_plugin_reader_or_setting_is_refused_in_one_line(case):
    outcome, detail = run_case(case, REPO)
    assert outcome == "clean", f"{outcome}: {detail}"
