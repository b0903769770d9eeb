"""Hostile inputs to the readers of users' files, the plugin loader, the monitor's API and the CLI's
``--from`` options, each run as its own process and classified.

Every case is a command (the CLI, or a short Python program against the public API) on files built
for it, with what must happen: ``refuse`` (exit 2 with one error line that names ``names``) or
``accept`` (exit 0 or 1, no error). The outcome is one of

- ``clean``: what must happen happened;
- ``traceback``: a Python traceback, or the CLI's internal-error backstop ("rerun with -v");
- ``hang``: still running after the case's time limit;
- ``silent-wrong``: accepted where it must be refused, or refused without naming what is wrong.

Run ``python tests/reliability/hostile_cases.py [--tree DIR]`` to print the table (``DIR`` is the
checkout whose code runs, default this one); ``tests/reliability/test_hostile_cases.py`` asserts that
every case is clean.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import textwrap
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
BACKSTOP = "rerun with -v for the traceback"
CACHE = Path(tempfile.gettempdir()) / f"collapse-probe-hostile-{os.getuid()}"
"""Inputs that take a while to build (an eval log, a 3 GiB zip member, an installed plugin), built once."""
MEMORY_LIMIT = 3 << 30
"""Address space of one case's process: a reader that loads what it should refuse fails here, not the machine."""


@dataclass
class Case:
    name: str
    family: str
    build: Callable[[Path], list[str]]
    """Writes the case's files into the directory and returns the command (argv after ``python``)."""
    expect: str = "refuse"
    names: tuple[str, ...] = ()
    """Strings the one error line must contain (the file, field or flag at fault)."""
    timeout: float = 30.0
    env: dict[str, str] | None = None
    pending: str | None = None
    """Why the case is not clean yet (the reader it needs is elsewhere): reported, expected to fail."""
    report: str = "stderr"
    """Where the refusal is: ``stderr`` (one ``error:`` line), or ``stdout`` for ``gate``, whose
    verdict table names the error in an ``error`` row (exit 3: could not judge)."""


def cli(*args: str) -> list[str]:
    return ["-m", "collapse_probe.cli", *args]


def py(code: str) -> list[str]:
    return ["-c", textwrap.dedent(code)]


# ---------------------------------------------------------------------------------------------- τ2 files


def _tau2(d: Path, *, dir_format: bool = False, edit: Callable[[dict], None] | None = None) -> Path:
    sys.path.insert(0, str(REPO / "tests" / "interop"))
    from tau2_results import make_results

    out = d / "tau2" / "results.json"
    data = make_results(out, {"t1": [("a", 0.5), ("b", 0.5)], "t2": [("c", 1.0)]}, 3, dir_format=dir_format)
    if edit is not None:
        if dir_format:
            edit(data)
            meta = {k: v for k, v in data.items() if k != "simulations"}
            out.write_text(json.dumps(meta))
            for s in data["simulations"]:
                (out.parent / "simulations" / f"{s['id']}.json").write_text(json.dumps(s))
        else:
            edit(data)
            out.write_text(json.dumps(data))
    return out


def _audit_from(path: Path, *extra: str) -> list[str]:
    return cli("audit", "--from", str(path), "--partition", "exact", "--no-progress", "--out", "out", *extra)


def _raw_edit(out: Path, old: str, new: str) -> None:
    text = out.read_text()
    assert old in text, old
    out.write_text(text.replace(old, new, 1))


def tau2_fifo(d: Path) -> list[str]:
    out = _tau2(d, dir_format=True)
    os.mkfifo(out.parent / "simulations" / "zz-fifo.json")
    return _audit_from(out.parent)


def tau2_devzero(d: Path) -> list[str]:
    out = _tau2(d, dir_format=True)
    (out.parent / "simulations" / "x.json").symlink_to("/dev/zero")
    return _audit_from(out.parent)


def tau2_link_loop(d: Path) -> list[str]:
    out = _tau2(d, dir_format=True)
    loop = out.parent / "simulations" / "loop.json"
    loop.symlink_to(loop)
    return _audit_from(out.parent)


def tau2_meta_fifo(d: Path) -> list[str]:
    (d / "tau2").mkdir()
    os.mkfifo(d / "tau2" / "results.json")
    (d / "tau2" / "simulations").mkdir()
    return _audit_from(d / "tau2")


def tau2_huge(d: Path) -> list[str]:
    out = _tau2(d)
    with open(out, "r+b") as f:  # sparse: the file claims 2.5 GiB without taking the disk
        f.truncate(5 << 29)
    return _audit_from(out)


def _edit_sim(i: int, fn: Callable[[dict], None]) -> Callable[[dict], None]:
    def edit(data: dict) -> None:
        fn(data["simulations"][i])

    return edit


def tau2_bigint_reward(d: Path) -> list[str]:
    out = _tau2(d)
    text = out.read_text()
    i = text.index('"reward": ')
    j = text.index(",", i)
    out.write_text(text[:i] + '"reward": 1' + "0" * 5000 + text[j:])
    return _audit_from(out)


def tau2_bigint_4000(d: Path) -> list[str]:
    out = _tau2(d)
    text = out.read_text()
    i = text.index('"trial": ')
    j = text.index(",", i)
    out.write_text(text[:i] + '"trial": 9' + "9" * 3999 + text[j:])
    return _audit_from(out)


def tau2_bigint_dir(d: Path) -> list[str]:
    out = _tau2(d, dir_format=True)
    f = sorted((out.parent / "simulations").glob("*.json"))[0]
    f.write_text(re.sub(r'"trial": \d+', '"trial": 1' + "0" * 5000, f.read_text(), count=1))
    return _audit_from(out.parent)


def tau2_surrogate_user_info(d: Path) -> list[str]:
    out = _tau2(d)
    _raw_edit(out, '"llm": "gpt-4.1-2025-04-14"', '"llm": "gpt\\ud800"')
    return _audit_from(out)


def tau2_surrogate_reply(d: Path) -> list[str]:
    out = _tau2(d)
    _raw_edit(out, '"content": "c"', '"content": "c\\udc00"')
    return _audit_from(out)


def tau2_surrogate_id(d: Path) -> list[str]:
    out = _tau2(d)
    _raw_edit(out, '"task_id": "t1"', '"task_id": "t\\ud83d"')
    return _audit_from(out)


def tau2_surrogate_key(d: Path) -> list[str]:
    out = _tau2(d)
    _raw_edit(out, '"info": {', '"info": {"\\udfff": 1, ')
    return _audit_from(out)


def tau2_temperature_hot(d: Path) -> list[str]:
    out = _tau2(d, edit=lambda r: r["info"]["agent_info"]["llm_args"].update(temperature="hot"))
    return _audit_from(out)


def tau2_temperature_list(d: Path) -> list[str]:
    out = _tau2(d, edit=lambda r: r["info"]["agent_info"]["llm_args"].update(temperature=[0]))
    return _audit_from(out)


def tau2_temperature_bool(d: Path) -> list[str]:
    out = _tau2(d, edit=lambda r: r["info"]["agent_info"]["llm_args"].update(temperature=True))
    return _audit_from(out)


def tau2_user_info_string(d: Path) -> list[str]:
    out = _tau2(d, edit=lambda r: r["info"].update(user_info="gpt-4"))
    return _audit_from(out)


def tau2_user_info_llm_dict(d: Path) -> list[str]:
    out = _tau2(d, edit=lambda r: r["info"]["user_info"].update(llm={"name": "gpt"}))
    return _audit_from(out)


def tau2_llm_args_list(d: Path) -> list[str]:
    out = _tau2(d, edit=lambda r: r["info"]["agent_info"].update(llm_args=[1, 2]))
    return _audit_from(out)


def tau2_nan_reward(d: Path) -> list[str]:
    out = _tau2(d)
    text = out.read_text()
    i = text.index('"reward": ')
    j = text.index(",", i)
    out.write_text(text[:i] + '"reward": NaN' + text[j:])
    return _audit_from(out)


def tau2_deep_arguments(d: Path) -> list[str]:
    out = _tau2(d)
    _raw_edit(out, '"arguments": {', '"arguments": {"deep": ' + "[" * 900 + "]" * 900 + ", ")
    return _audit_from(out)


def tau2_deep_arguments_string(d: Path) -> list[str]:
    out = _tau2(d)
    deep = json.dumps("[" * 50_000 + "]" * 50_000)
    text = out.read_text()
    i = text.index('"arguments": {')
    j = text.index("}", i)
    out.write_text(text[:i] + '"arguments": ' + deep + text[j + 1 :])
    return _audit_from(out)


def tau2_deep_json(d: Path) -> list[str]:
    (d / "results.json").write_text('{"simulations": ' + "[" * 100_000 + "]" * 100_000 + "}")
    return _audit_from(d / "results.json")


def tau2_tool_calls_int(d: Path) -> list[str]:
    out = _tau2(d, edit=_edit_sim(0, lambda s: s["messages"][2].update(tool_calls=5)))
    return _audit_from(out)


# ------------------------------------------------------------------------------------------- inspect logs


def _zstd() -> None:
    """Let ``zipfile`` read the zstd members inspect writes (inspect's own patch, before Python 3.14)."""
    try:
        import zipfile_zstd  # noqa: F401
    except ImportError:
        pass


def _eval_log(d: Path, edit: Callable[[dict], None] | None = None, name: str = "log.eval") -> Path:
    """An inspect .eval log from a small scripted play run, its samples' JSON edited by ``edit``."""
    _zstd()
    run = CACHE / "inspect-base.eval"
    if not run.exists():
        run.parent.mkdir(exist_ok=True)
        work = Path(tempfile.mkdtemp())
        try:
            donor = work / "donor.json"
            donor.write_text(json.dumps({"responses": [{"text": "Sure [DONATE $1]", "p": 0.5},
                                                       {"text": "No [DONATE $0]", "p": 0.5}]}))  # fmt: skip
            pol = work / "pol.json"
            pol.write_text(json.dumps({"responses": [{"text": "Please donate.", "p": 1.0}]}))
            env = {**os.environ, "PYTHONPATH": str(REPO), "COLLAPSE_PROBE_CACHE": str(work / "c.sqlite")}
            subprocess.run([sys.executable, "-m", "collapse_probe.cli", "play", "--policy", f"scripted:{pol}", "--sim",
                            f"scripted:{donor}", "--tasks", "2", "--rollouts", "3", "--max-turns", "2",
                            "--no-progress", "--show", "0", "--out", str(work / "run")], check=True, cwd=work,
                           env=env, capture_output=True)  # fmt: skip
            subprocess.run([sys.executable, "-m", "collapse_probe.cli", "export", str(work / "run"), "--to", "inspect",
                            "--out", str(run)], check=True, cwd=work, env=env, capture_output=True)  # fmt: skip
        finally:
            shutil.rmtree(work, ignore_errors=True)
    out = d / name
    if edit is None:
        shutil.copy(run, out)
        return out
    with zipfile.ZipFile(run) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename.startswith("samples/"):
                sample = json.loads(data)
                edit(sample)
                data = json.dumps(sample).encode()
            dst.writestr(info.filename, data)
    return out


def _inspect_from(path: Path) -> list[str]:
    return _audit_from(path, "--format", "inspect")


def inspect_bomb(d: Path) -> list[str]:
    bomb = CACHE / "bomb.eval"
    if not bomb.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        tmp = bomb.with_suffix(".tmp")
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
            with z.open("header.json", "w", force_zip64=True) as f:
                block = b" " * (1 << 22)
                for _ in range(768):  # 3 GiB of spaces: about 3 MB on disk
                    f.write(block)
        tmp.replace(bomb)
    shutil.copy(bomb, d / "bomb.eval")
    return _inspect_from(d / "bomb.eval")


def inspect_ratio(d: Path) -> list[str]:
    ratio = CACHE / "ratio.eval"
    if not ratio.exists():
        base = _eval_log(d)
        tmp = ratio.with_suffix(".tmp")
        with zipfile.ZipFile(base) as src, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as dst:
            padded = False
            for info in src.infolist():
                data = src.read(info)
                if info.filename.startswith("samples/") and not padded:
                    sample = json.loads(data)
                    sample["metadata"]["pad"] = " " * (200 << 20)  # 200 MiB that deflate to 200 KB
                    data, padded = json.dumps(sample).encode(), True
                dst.writestr(info.filename, data)
        tmp.replace(ratio)
    shutil.copy(ratio, d / "ratio.eval")
    return _inspect_from(d / "ratio.eval")


def inspect_huge_json(d: Path) -> list[str]:
    out = d / "log.json"
    out.write_text("{}")
    with open(out, "r+b") as f:
        f.truncate(5 << 29)
    return _inspect_from(out)


def inspect_fifo(d: Path) -> list[str]:
    os.mkfifo(d / "log.eval")
    return _inspect_from(d / "log.eval")


def inspect_devzero(d: Path) -> list[str]:
    (d / "log.eval").symlink_to("/dev/zero")
    return _inspect_from(d / "log.eval")


def inspect_meta_errors_int(d: Path) -> list[str]:
    return _inspect_from(_eval_log(d, lambda s: s["metadata"].update(simulator_errors=5)))


def inspect_meta_errors_items(d: Path) -> list[str]:
    return _inspect_from(_eval_log(d, lambda s: s["metadata"].update(simulator_errors=[1, [2]])))


def inspect_meta_task_dict(d: Path) -> list[str]:
    return _inspect_from(_eval_log(d, lambda s: s["metadata"].update(task_id={"a": 1})))


def inspect_meta_simulator_list(d: Path) -> list[str]:
    return _inspect_from(_eval_log(d, lambda s: s["metadata"].update(simulator=["a", "b"])))


def inspect_surrogate_reply(d: Path) -> list[str]:
    def edit(s: dict) -> None:
        for m in s["messages"]:
            if m["role"] == "user":
                m["content"] = "hi \ud800"
                break

    return _inspect_from(_eval_log(d, edit))


def inspect_bigint_meta(d: Path) -> list[str]:
    return _inspect_from(_eval_log(d, lambda s: s["metadata"].update(step=10**4000)))


def inspect_deep_meta(d: Path) -> list[str]:
    deep: object = []
    for _ in range(900):
        deep = [deep]
    return _inspect_from(_eval_log(d, lambda s: s["metadata"].update(deep=deep)))


# -------------------------------------------------------------------------------------------- JSONL files


def _jsonl_ok() -> str:
    return json.dumps({"task_id": "t", "messages": [{"role": "assistant", "content": "hi"},
                                                    {"role": "user", "content": "a"}]})  # fmt: skip


def jsonl_long_line(d: Path) -> list[str]:
    out = d / "c.jsonl"
    out.write_text(_jsonl_ok() + "\n")
    with open(out, "r+b") as f:  # one line of 2.5 GiB of NUL bytes
        f.truncate(5 << 29)
    return _audit_from(out)


def jsonl_bigint(d: Path) -> list[str]:
    out = d / "c.jsonl"
    out.write_text(_jsonl_ok() + "\n" + _jsonl_ok().replace('"task_id": "t"', '"task_id": 1' + "0" * 5000) + "\n")
    return _audit_from(out)


def jsonl_fifo(d: Path) -> list[str]:
    os.mkfifo(d / "c.jsonl")
    return _audit_from(d / "c.jsonl")


def jsonl_devzero(d: Path) -> list[str]:
    (d / "c.jsonl").symlink_to("/dev/zero")
    return _audit_from(d / "c.jsonl")


def jsonl_deep(d: Path) -> list[str]:
    out = d / "c.jsonl"
    out.write_text(_jsonl_ok() + "\n" + "[" * 100_000 + "]" * 100_000 + "\n")
    return _audit_from(out)


# ------------------------------------------------------------------------------------------ --config files


def _config(d: Path, name: str, text: str) -> list[str]:
    (d / name).write_text(text)
    return cli("audit", "--config", name, "--help")


def config_yaml_bigint(d: Path) -> list[str]:
    return _config(d, "c.yaml", "states: 1" + "0" * 5000 + "\n")


def config_toml_bigint(d: Path) -> list[str]:
    return _config(d, "c.toml", "states = 1" + "0" * 5000 + "\n")


def config_yaml_bigint_4000(d: Path) -> list[str]:
    return _config(d, "c.yaml", "temperature: 9" + "9" * 3999 + "\n")


def config_yaml_float_overflow(d: Path) -> list[str]:
    return _config(d, "c.yaml", "states: 1e999\n")


def config_yaml_surrogate(d: Path) -> list[str]:
    return _config(d, "c.yaml", 'sim: "scripted:\\ud800"\n')


def config_toml_surrogate(d: Path) -> list[str]:
    return _config(d, "c.toml", 'sim = "scripted:\\ud800"\n')


def config_json_bigint(d: Path) -> list[str]:
    return _config(d, "c.yaml", '{"states": 1' + "0" * 5000 + "}")


def config_fifo(d: Path) -> list[str]:
    os.mkfifo(d / "c.yaml")
    return cli("audit", "--config", "c.yaml", "--help")


def config_devzero(d: Path) -> list[str]:
    (d / "c.yaml").symlink_to("/dev/zero")
    return cli("audit", "--config", "c.yaml", "--help")


def config_deep(d: Path) -> list[str]:
    return _config(d, "c.yaml", "states: " + "[" * 50_000 + "]" * 50_000 + "\n")


# --------------------------------------------------------------------------------------- results readers


def gate_bigint(d: Path) -> list[str]:
    (d / "results.json").write_text('{"schema": "collapse-probe/crossplay/v1", "n": 1' + "0" * 5000 + "}")
    return cli("gate", str(d / "results.json"), "--policy", "p", "--min-transfer", "0.5")


def gate_surrogate(d: Path) -> list[str]:
    (d / "results.json").write_text('{"schema": "collapse-probe/crossplay/v1", "x": "\\ud800"}')
    return cli("gate", str(d / "results.json"), "--policy", "p", "--min-transfer", "0.5")


def gate_devzero(d: Path) -> list[str]:
    (d / "results.json").symlink_to("/dev/zero")
    return cli("gate", str(d / "results.json"), "--policy", "p", "--min-transfer", "0.5")


def gate_deep(d: Path) -> list[str]:
    (d / "results.json").write_text('{"schema": "collapse-probe/crossplay/v1", "x": ' + "[" * 900 + "]" * 900 + "}")
    return cli("gate", str(d / "results.json"), "--policy", "p", "--min-transfer", "0.5")


def results_api_bigint(d: Path) -> list[str]:
    (d / "results.json").write_text('{"schema": "collapse-probe/audit/v1", "n": 1' + "0" * 5000 + "}")
    return py(f"""
        import sys
        from collapse_probe.errors import ConfigError
        from collapse_probe.results import load
        try:
            load({str(d / "results.json")!r})
        except ConfigError as exc:
            print("error: " + str(exc), file=sys.stderr)
            sys.exit(2)
    """)


# ------------------------------------------------------------------------------------------------ plugins

PLUGINS = {
    "raises_import": "raise RuntimeError('plugin exploded on import')\n",
    "syntax_error": "def broken(:\n",
    "recursion": "def f(n):\n    return f(n + 1)\nf(0)\n",
    "exits": "import sys\nsys.exit(7)\n",
    "sleeps": "import time\ntime.sleep(600)\n",
    "build_raises": textwrap.dedent("""
        from collapse_probe.benchmarks import Benchmark, BenchmarkOptions

        def _build(options, context):
            raise RuntimeError("cannot build the arena")

        BENCHMARK = Benchmark("build-raises", BenchmarkOptions, build=_build)

        class RaisingPartitioner:
            name = "raising"

            def partition(self, texts):
                raise RuntimeError("partition exploded")
    """),
}
PLUGIN_ENTRY_POINTS = """
[project.entry-points."collapse_probe.benchmarks"]
raises-import = "cp_hostile_raises_import:BENCHMARK"
syntax-error = "cp_hostile_syntax_error:BENCHMARK"
recursion = "cp_hostile_recursion:BENCHMARK"
exits = "cp_hostile_exits:BENCHMARK"
sleeps = "cp_hostile_sleeps:BENCHMARK"
build-raises = "cp_hostile_build_raises:BENCHMARK"

[project.entry-points."collapse_probe.partitioners"]
raising = "cp_hostile_build_raises:RaisingPartitioner"
exits = "cp_hostile_exits:Partitioner"

[project.entry-points."collapse_probe.models"]
exits = "cp_hostile_exits:make"
"""


def install_hostile_plugins(target: Path) -> None:
    """Build and install (pip, offline, onto ``target``) a distribution whose entry points are broken
    in every way the loader must survive."""
    src = Path(tempfile.mkdtemp(prefix="hostile-dist-"))
    try:
        (src / "pyproject.toml").write_text(
            '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n\n'
            '[project]\nname = "cp-hostile-plugins"\nversion = "0.1"\n\n[tool.setuptools]\n'
            f"py-modules = {json.dumps(['cp_hostile_' + k for k in PLUGINS])}\n" + PLUGIN_ENTRY_POINTS
        )
        for name, code in PLUGINS.items():
            (src / f"cp_hostile_{name}.py").write_text(code)
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                        "--no-index", "--no-compile", "--target", str(target), str(src)], check=True,
                       capture_output=True, timeout=300)  # fmt: skip
    finally:
        shutil.rmtree(src, ignore_errors=True)


def _plugin_site() -> Path:
    site = CACHE / "plugins"
    if not list(site.glob("cp_hostile_plugins-*.dist-info")):
        shutil.rmtree(site, ignore_errors=True)
        site.mkdir(parents=True)
        install_hostile_plugins(site)
    return site


def _with_plugins(*args: str) -> Callable[[Path], list[str]]:
    def build(d: Path) -> list[str]:
        _plugin_site()
        _donor(d)
        return cli(*args)

    return build


def _donor(d: Path) -> None:
    (d / "donor.json").write_text(json.dumps({"responses": [{"text": "Sure [DONATE $1]", "p": 0.5},
                                                            {"text": "No [DONATE $0]", "p": 0.5}]}))  # fmt: skip


PLUGIN_ENV = {"COLLAPSE_PROBE_PLUGIN_TIMEOUT": "3"}

# ------------------------------------------------------------------------------------------- monitor API

MONITOR = """
import sys
from collapse_probe.errors import ConfigError
from collapse_probe.integrations.monitor import CollapseMonitor
try:
    m = CollapseMonitor(shadow_samples=2, partition="exact")
{body}
except ConfigError as exc:
    print("error: " + str(exc), file=sys.stderr)
    sys.exit(2)
"""


def monitor(body: str) -> Callable[[Path], list[str]]:
    def build(d: Path) -> list[str]:
        (d / "spool-file").write_text("not a directory\n")
        return ["-c", MONITOR.format(body=textwrap.indent(textwrap.dedent(body), "    "))]

    return build


def monitor_on_alarm(d: Path) -> list[str]:
    code = """
        import io, logging
        from collapse_probe.integrations.monitor import CollapseMonitor
        log = io.StringIO()
        logging.basicConfig(stream=log, level=logging.WARNING)
        def boom(alarm, monitor):
            raise RuntimeError("callback exploded")
        m = CollapseMonitor(shadow_samples=4, partition="exact", on_alarm=boom)
        for step in range(3):
            for r in range(6):
                m.record_turn(f"r{r}", "same", ["same", "same", "same"])
            m.end_step(step, rewards=[1.0] * 6)
        assert m.alarms_, "the collapsed simulator raised no alarm"
        reported = log.getvalue().count("callback exploded")
        assert reported == 1, log.getvalue()
        assert m.alarm_callback_errors_, "the failure is not recorded"
        print("ok")
    """
    return py(code)


# -------------------------------------------------------------------------------------------------- CLI


def cli_from_empty(d: Path) -> list[str]:
    return cli("audit", "--from", "", "--no-progress", "--out", "out")


def cli_from_env_empty(d: Path) -> list[str]:
    return cli("audit", "--no-progress", "--out", "out")


def cli_format_without_from(d: Path) -> list[str]:
    return cli("audit", "--format", "jsonl", "--no-progress", "--out", "out")


def cli_sim_role_without_from(d: Path) -> list[str]:
    return cli("audit", "--sim-role", "assistant", "--no-progress", "--out", "out")


def cli_format_env_without_from(d: Path) -> list[str]:
    return cli("audit", "--no-progress", "--out", "out")


def example_args(*args: str) -> Callable[[Path], list[str]]:
    def build(d: Path) -> list[str]:
        return [str(REPO / "examples" / "trl_grpo_monitor.py"), *args, "--out", str(d / "out")]

    return build


# ------------------------------------------------------------------------------------------------ the cases

JSONL_READER = (
    "the JSONL conversation reader checks is_file() first and says 'no such file' for a FIFO or a device; "
    "collapse_probe.core._files.iter_json_lines names them"
)

CASES: list[Case] = [
    Case("τ2 FIFO in simulations/", "tau2", tau2_fifo, names=("zz-fifo.json", "FIFO")),
    Case("τ2 simulations/x.json -> /dev/zero", "tau2", tau2_devzero, names=("x.json", "device")),
    Case("τ2 link loop in simulations/", "tau2", tau2_link_loop, names=("loop.json",)),
    Case("τ2 results.json a FIFO", "tau2", tau2_meta_fifo, names=("results.json", "FIFO")),
    Case("τ2 results.json of 2.5 GiB", "tau2", tau2_huge, names=("results.json", "GiB")),
    Case("τ2 5000-digit reward", "tau2", tau2_bigint_reward, names=("reward", "digits")),
    Case("τ2 4000-digit trial", "tau2", tau2_bigint_4000, names=("trial", "digits")),
    Case("τ2 5000-digit trial (directory format)", "tau2", tau2_bigint_dir, names=("trial", ".json")),
    Case("τ2 surrogate in user_info.llm", "tau2", tau2_surrogate_user_info, names=("user_info.llm", "surrogate")),
    Case("τ2 surrogate in a reply", "tau2", tau2_surrogate_reply, names=("content", "surrogate")),
    Case("τ2 surrogate in task_id", "tau2", tau2_surrogate_id, names=("task_id", "surrogate")),
    Case("τ2 surrogate in a key", "tau2", tau2_surrogate_key, names=("info", "surrogate")),
    Case("τ2 agent temperature 'hot'", "tau2", tau2_temperature_hot, names=("temperature", "results.json")),
    Case("τ2 agent temperature [0]", "tau2", tau2_temperature_list, names=("temperature",)),
    Case("τ2 agent temperature true", "tau2", tau2_temperature_bool, names=("temperature",)),
    Case("τ2 user_info a string", "tau2", tau2_user_info_string, names=("user_info",)),
    Case("τ2 user_info.llm an object", "tau2", tau2_user_info_llm_dict, names=("user_info.llm",)),
    Case("τ2 llm_args a list", "tau2", tau2_llm_args_list, names=("llm_args",)),
    Case("τ2 NaN reward", "tau2", tau2_nan_reward, names=("reward", "NaN")),
    Case("τ2 tool arguments 900 deep", "tau2", tau2_deep_arguments, names=("nested", "arguments")),
    Case(
        "τ2 tool arguments a 50000-deep JSON string",
        "tau2",
        tau2_deep_arguments_string,
        names=("results.json", "arguments", "nested"),
    ),
    Case("τ2 100000-deep JSON", "tau2", tau2_deep_json, names=("results.json", "nested")),
    Case("τ2 tool_calls: 5", "tau2", tau2_tool_calls_int, names=("tool_calls",)),
    Case(
        "inspect .eval member inflating to 3 GiB",
        "inspect",
        inspect_bomb,
        names=("bomb.eval", "header.json"),
        timeout=30,
    ),  # fmt: skip
    Case("inspect .eval member of ratio 1000", "inspect", inspect_ratio, names=("ratio.eval", "compress")),
    Case("inspect .json of 2.5 GiB", "inspect", inspect_huge_json, names=("log.json", "GiB")),
    Case("inspect log a FIFO", "inspect", inspect_fifo, names=("log.eval", "FIFO")),
    Case("inspect log -> /dev/zero", "inspect", inspect_devzero, names=("log.eval", "device")),
    Case("inspect metadata simulator_errors: 5", "inspect", inspect_meta_errors_int, names=("simulator_errors",)),
    Case(
        "inspect metadata simulator_errors: [1, [2]]", "inspect", inspect_meta_errors_items, names=("simulator_errors",)
    ),  # fmt: skip
    Case("inspect metadata task_id an object", "inspect", inspect_meta_task_dict, names=("task_id",)),
    Case("inspect metadata simulator a list", "inspect", inspect_meta_simulator_list, names=("simulator",)),
    Case("inspect surrogate in a reply", "inspect", inspect_surrogate_reply, names=("surrogate",)),
    Case("inspect 4000-digit metadata", "inspect", inspect_bigint_meta, names=("step", "digits")),
    Case("inspect metadata 900 deep", "inspect", inspect_deep_meta, names=("nested",)),
    Case("JSONL one line of 2.5 GiB", "jsonl", jsonl_long_line, names=("c.jsonl", "line")),
    Case("JSONL 5000-digit task_id", "jsonl", jsonl_bigint, names=("c.jsonl", "task_id", "digits")),
    Case("JSONL a FIFO", "jsonl", jsonl_fifo, names=("c.jsonl", "FIFO"), pending=JSONL_READER),
    Case("JSONL -> /dev/zero", "jsonl", jsonl_devzero, names=("c.jsonl", "device"), pending=JSONL_READER),
    Case("JSONL a 100000-deep line", "jsonl", jsonl_deep, names=("c.jsonl", "nested")),
    Case("--config YAML 5000-digit int", "config", config_yaml_bigint, names=("c.yaml", "states", "digits")),
    Case("--config TOML 5000-digit int", "config", config_toml_bigint, names=("c.toml", "digits")),
    Case("--config YAML 4000-digit int", "config", config_yaml_bigint_4000, names=("temperature", "digits")),
    Case("--config YAML 1e999", "config", config_yaml_float_overflow, names=("states",)),
    Case("--config YAML surrogate", "config", config_yaml_surrogate, names=("sim", "surrogate")),
    Case("--config TOML surrogate", "config", config_toml_surrogate, names=("c.toml", "line 1")),
    Case("--config YAML in JSON syntax, 5000-digit int", "config", config_json_bigint, names=("states", "digits")),
    Case("--config a FIFO", "config", config_fifo, names=("c.yaml", "FIFO")),
    Case("--config -> /dev/zero", "config", config_devzero, names=("c.yaml", "device")),
    Case("--config YAML 50000 deep", "config", config_deep, names=("c.yaml", "nested")),
    Case("gate results.json 5000-digit int", "results", gate_bigint, names=("results.json", "digits"), report="stdout"),
    Case(
        "gate results.json surrogate", "results", gate_surrogate, names=("results.json", "surrogate"), report="stdout"
    ),
    Case("gate results.json -> /dev/zero", "results", gate_devzero, names=("results.json", "device"), report="stdout"),
    Case("gate results.json 900 deep", "results", gate_deep, names=("results.json", "nested"), report="stdout"),
    Case("results.load 5000-digit int", "results", results_api_bigint, names=("results.json", "n", "digits")),
    Case("plugin raising on import: --help", "plugins", _with_plugins("--help"), expect="accept", env=PLUGIN_ENV),
    Case(
        "plugin raising on import: audit --help",
        "plugins",
        _with_plugins("audit", "--help"),
        expect="accept",
        env=PLUGIN_ENV,
    ),  # fmt: skip
    Case(
        "plugin raising on import: chosen with --help",
        "plugins",
        _with_plugins("audit", "--benchmark", "raises-import", "--help"),
        expect="accept",
        env=PLUGIN_ENV,
    ),
    Case(
        "plugin raising on import",
        "plugins",
        _with_plugins("audit", "--benchmark", "raises-import", "--sim", "scripted:donor.json", "--out", "o"),
        names=("raises-import", "cp-hostile-plugins", "collapse_probe.benchmarks", "RuntimeError"),
        env=PLUGIN_ENV,
    ),
    Case(
        "plugin with a syntax error",
        "plugins",
        _with_plugins("audit", "--benchmark", "syntax-error", "--sim", "scripted:donor.json", "--out", "o"),
        names=("syntax-error", "cp-hostile-plugins", "collapse_probe.benchmarks", "SyntaxError"),
        env=PLUGIN_ENV,
    ),
    Case(
        "plugin recursing on import",
        "plugins",
        _with_plugins("audit", "--benchmark", "recursion", "--sim", "scripted:donor.json", "--out", "o"),
        names=("recursion", "cp-hostile-plugins", "RecursionError"),
        env=PLUGIN_ENV,
    ),
    Case(
        "plugin calling sys.exit(7) on import",
        "plugins",
        _with_plugins("audit", "--benchmark", "exits", "--sim", "scripted:donor.json", "--out", "o"),
        names=("exits", "cp-hostile-plugins", "exit"),
        env=PLUGIN_ENV,
    ),
    Case(
        "plugin calling sys.exit(7): --help",
        "plugins",
        _with_plugins("audit", "--benchmark", "exits", "--help"),
        expect="accept",
        env=PLUGIN_ENV,
    ),  # fmt: skip
    Case(
        "plugin sleeping on import",
        "plugins",
        _with_plugins("audit", "--benchmark", "sleeps", "--sim", "scripted:donor.json", "--out", "o"),
        names=("sleeps", "cp-hostile-plugins", "s"),
        env=PLUGIN_ENV,
        timeout=30,
    ),
    Case(
        "plugin sleeping on import: --help",
        "plugins",
        _with_plugins("audit", "--benchmark", "sleeps", "--help"),
        expect="accept",
        env=PLUGIN_ENV,
        timeout=30,
    ),  # fmt: skip
    Case(
        "plugin raising in build",
        "plugins",
        _with_plugins("audit", "--benchmark", "build-raises", "--sim", "scripted:donor.json", "--out", "o"),
        names=("build-raises", "RuntimeError"),
        env=PLUGIN_ENV,
    ),
    Case(
        "plugin partitioner raising",
        "plugins",
        _with_plugins(
            "audit",
            "--sim",
            "scripted:donor.json",
            "--partition",
            "raising",
            "--states",
            "1",
            "--samples",
            "4",
            "--no-cache",
            "--no-progress",
            "--out",
            "o",
        ),
        names=("raising", "RuntimeError"),
        env=PLUGIN_ENV,
    ),
    Case(
        "plugin partitioner exiting",
        "plugins",
        _with_plugins(
            "audit",
            "--sim",
            "scripted:donor.json",
            "--partition",
            "exits",
            "--states",
            "1",
            "--samples",
            "4",
            "--no-cache",
            "--no-progress",
            "--out",
            "o",
        ),
        names=("exits", "cp-hostile-plugins", "collapse_probe.partitioners"),
        env=PLUGIN_ENV,
    ),
    Case(
        "plugin model backend exiting",
        "plugins",
        _with_plugins("audit", "--sim", "exits/m", "--states", "1", "--samples", "4", "--no-cache", "--out", "o"),
        names=("exits", "cp-hostile-plugins", "collapse_probe.models"),
        env=PLUGIN_ENV,
    ),
    Case("monitor NaN reward", "monitor", monitor("m.end_step(0, rewards=[1.0, float('nan')])"), names=("rewards",)),
    Case("monitor inf reward", "monitor", monitor("m.record_results([float('inf')])"), names=("rewards",)),
    Case("monitor string reward", "monitor", monitor("m.end_step(0, rewards=['0.5'])"), names=("rewards",)),
    Case("monitor dict reward", "monitor", monitor("m.record_results([{}])"), names=("rewards",)),
    Case("monitor rewards a string", "monitor", monitor("m.end_step(0, rewards='10')"), names=("rewards",)),
    Case(
        "monitor policy_texts='abc'", "monitor", monitor("m.end_step(0, policy_texts='abc')"), names=("policy_texts",)
    ),  # fmt: skip
    Case(
        "monitor record_results policy_texts='abc'",
        "monitor",
        monitor("m.record_results([1.0], policy_texts='abc')"),
        names=("policy_texts",),
    ),  # fmt: skip
    Case(
        "monitor record_turn shadows='abc'",
        "monitor",
        monitor("m.record_turn('r', 'x', shadows='abc')"),
        names=("shadows",),
    ),  # fmt: skip
    Case("monitor record_turn reply=5", "monitor", monitor("m.record_turn('r', 5, shadows=['a'])"), names=("reply",)),
    Case("monitor record_turn turn=-1", "monitor", monitor("m.record_turn('r', 'x', turn=-1)"), names=("turn",)),
    Case("monitor out=''", "monitor", monitor("CollapseMonitor(out='')"), names=("out",)),
    Case(
        "monitor spool= a file",
        "monitor",
        monitor("CollapseMonitor(spool='spool-file', worker=True)"),
        names=("spool", "spool-file"),
    ),  # fmt: skip
    Case(
        "monitor unhashable groups",
        "monitor",
        monitor("m.end_step(0, rewards=[1.0, 0.0], groups=[[1], [2]])"),
        names=("groups",),
    ),  # fmt: skip
    Case(
        "monitor groups a string", "monitor", monitor("m.record_results([1.0, 0.0], groups='ab')"), names=("groups",)
    ),  # fmt: skip
    Case(
        "monitor extra={'step': ...}", "monitor", monitor("m.end_step(0, extra={'step': 9})"), names=("extra", "step")
    ),
    Case("monitor extra a list", "monitor", monitor("m.end_step(0, extra=[1])"), names=("extra",)),
    Case("monitor on_alarm not callable", "monitor", monitor("CollapseMonitor(on_alarm='x')"), names=("on_alarm",)),
    Case("monitor on_alarm raising", "monitor", monitor_on_alarm, expect="accept"),
    Case("audit --from ''", "cli", cli_from_empty, names=("--from",)),
    Case(
        "COLLAPSE_PROBE_FROM=''",
        "cli",
        cli_from_env_empty,
        names=("COLLAPSE_PROBE_FROM",),
        env={"COLLAPSE_PROBE_FROM": ""},
    ),  # fmt: skip
    Case("audit --format without --from", "cli", cli_format_without_from, names=("--format", "--from")),
    Case("audit --sim-role without --from", "cli", cli_sim_role_without_from, names=("--sim-role", "--from")),
    Case(
        "COLLAPSE_PROBE_FORMAT without --from",
        "cli",
        cli_format_env_without_from,
        names=("COLLAPSE_PROBE_FORMAT", "--from"),
        env={"COLLAPSE_PROBE_FORMAT": "jsonl"},
    ),
    Case("example --lora-r -1", "example", example_args("--lora-r", "-1"), names=("--lora-r",)),
    Case(
        "example --max-completion-length 0",
        "example",
        example_args("--max-completion-length", "0"),
        names=("--max-completion-length",),
    ),  # fmt: skip
    Case("example --shadow-samples 1", "example", example_args("--shadow-samples", "1"), names=("--shadow-samples",)),
    Case("example --sim-max-tokens -5", "example", example_args("--sim-max-tokens", "-5"), names=("--sim-max-tokens",)),
    Case("example --lr -1", "example", example_args("--lr", "-1"), names=("--lr",)),
]


# ------------------------------------------------------------------------------------------------ running


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def run_case(case: Case, tree: Path) -> tuple[str, str]:
    """Run one case with the code of ``tree``: (outcome, what it printed on stderr, shortened)."""
    d = Path(tempfile.mkdtemp(prefix="hostile-"))
    try:
        try:
            built = case.build(d)
        except Exception as exc:  # noqa: BLE001 - a case that cannot be built here is reported, not run
            return "harness-error", f"{type(exc).__name__}: {exc}"[:300]
        argv = [a.replace(str(REPO), str(tree), 1) if a.startswith(str(REPO / "examples")) else a for a in built]
        paths = [str(tree)]
        if case.family == "plugins":
            paths.insert(0, str(_plugin_site()))
        env = {k: v for k, v in os.environ.items() if not k.startswith("COLLAPSE_PROBE_")}
        env.update(PYTHONPATH=os.pathsep.join(paths), COLLAPSE_PROBE_CACHE=str(d / "cache.sqlite"),
                   HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")  # fmt: skip
        env.update(case.env or {})  # a case's own PYTHONPATH (another plugin distribution) included
        try:
            proc = subprocess.run([sys.executable, *argv], cwd=d, env=env, capture_output=True, text=True,
                                  timeout=case.timeout, preexec_fn=_limit_memory)  # fmt: skip
        except subprocess.TimeoutExpired:
            return "hang", f"still running after {case.timeout:g} s"
        return classify(case, proc.returncode, proc.stderr, proc.stdout)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def classify(case: Case, rc: int, err: str, out: str = "") -> tuple[str, str]:
    lines = [line for line in err.splitlines() if line.strip()]
    short = " | ".join(lines[-3:])[:400]
    refused = 3 if case.report == "stdout" else 2  # the gate's verdict "could not judge", else a usage error
    documented = (0, 1, 2, refused)
    if any(BACKSTOP in t or "Traceback (most recent call last)" in t for t in (err, out)) or rc not in documented:
        return "traceback", f"exit {rc}: {short}"
    errors = [line for line in lines if "error:" in line or line.startswith("error")]
    if case.report == "stdout" and not errors:
        errors = [line for line in out.splitlines() if "error" in line]
    if case.expect == "accept":
        return ("clean", short) if rc in (0, 1) and not errors else ("silent-wrong", f"refused: {short}")
    if rc != refused or len(errors) != 1:
        return "silent-wrong", f"exit {rc} (expected one refusal): {short}"
    missing = [n for n in case.names if n not in errors[0]]
    if missing:
        return "silent-wrong", f"refused without naming {missing}: {errors[0][:300]}"
    return "clean", errors[0][:300]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tree", default=str(REPO), help="checkout whose code runs (default: this one)")
    ap.add_argument("-k", default="", help="only cases whose name or family contains this")
    ap.add_argument("-v", action="store_true", help="print every case's outcome")
    a = ap.parse_args()
    counts: dict[str, int] = {}
    for case in CASES:
        if a.k and a.k not in case.name and a.k != case.family:
            continue
        outcome, detail = run_case(case, Path(a.tree))
        counts[outcome] = counts.get(outcome, 0) + 1
        if a.v or outcome != "clean":
            print(f"{outcome:13} {case.family:8} {case.name}: {detail}", flush=True)
    total = sum(counts.values())
    print(f"{total} cases: " + ", ".join(f"{counts.get(k, 0)} {k}" for k in ("clean", "traceback", "hang",
                                                                                 "silent-wrong")))  # fmt: skip
    return 0 if counts.get("clean", 0) == total else 1


if __name__ == "__main__":
    sys.exit(main())
