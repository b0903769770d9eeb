"""Property-based fuzzing of every input format: bad content is a ConfigError (one clear line at the
CLI) or tolerated, never another exception (a traceback)."""

from __future__ import annotations

import json
import os
import random
import shutil
import tempfile
from pathlib import Path

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from collapse_probe.errors import ConfigError  # noqa: E402

pytestmark = pytest.mark.reliability

SETTINGS = settings(max_examples=60, deadline=None, database=None, suppress_health_check=list(HealthCheck))

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=10), c, max_size=4),
    max_leaves=20,
)
raw_bytes = st.binary(max_size=300)


def _tmp() -> Path:
    return Path(tempfile.mkdtemp(prefix="fuzz-"))


def _as_file(content: object) -> bytes:
    if isinstance(content, bytes):
        return content
    return json.dumps(content).encode()


def _mutate(base: object, value: object, rng: random.Random) -> object:
    """``base`` with one randomly chosen nested field replaced by ``value``."""
    if isinstance(base, dict) and base:
        k = rng.choice(sorted(base))
        return {**base, k: value if rng.random() < 0.5 else _mutate(base[k], value, rng)}
    if isinstance(base, list) and base:
        i = rng.randrange(len(base))
        return [*base[:i], value if rng.random() < 0.5 else _mutate(base[i], value, rng), *base[i + 1 :]]
    return value


SCRIPTED = {"responses": [{"text": "a", "p": 0.5}, {"text": "b", "p": 0.5}], "turns": [[{"text": "x", "p": 1.0}]],
            "rules": [{"if_contains": ["kids"], "responses": [{"text": "y", "p": 1.0}]}], "delay_s": 0}  # fmt: skip


@SETTINGS
@given(content=json_values | raw_bytes, value=json_values, seed=st.integers(0, 10**6))
def test_scripted_files(content, value, seed):
    from collapse_probe.models.scripted import load_scripted

    d = _tmp()
    try:
        for data in (_as_file(content), json.dumps(_mutate(SCRIPTED, value, random.Random(seed))).encode()):
            (d / "m.json").write_bytes(data)
            try:
                load_scripted(d / "m.json")
            except ConfigError:
                pass
    finally:
        shutil.rmtree(d)


@SETTINGS
@given(lines=st.lists(json_values | raw_bytes, max_size=4), value=json_values, seed=st.integers(0, 10**6))
def test_persona_files(lines, value, seed):
    from collapse_probe.benchmarks.p4g import load_personas
    from collapse_probe.benchmarks.p4g import load_personas as shipped

    base = shipped()[0]
    d = _tmp()
    try:
        mutated = json.dumps(_mutate(base, value, random.Random(seed))).encode()
        for data in (b"\n".join(_as_file(x) for x in lines), mutated):
            (d / "p.jsonl").write_bytes(data)
            from collapse_probe.benchmarks import make_arena

            try:
                personas = load_personas(d / "p.jsonl")
                arena = make_arena("p4g", personas=personas, max_turns=1)
                for task in arena.load_tasks(1, seed=0):
                    ep = arena.new_episode(task, 0)
                    arena.prompt_for(ep, "policy")
                    arena.prompt_for(ep, "simulator")
            except ConfigError:
                continue
    finally:
        shutil.rmtree(d)


@SETTINGS
@given(which=st.sampled_from(["tasks.json", "db.json", "split_tasks.json", "policy.md"]), content=json_values | raw_bytes,
       value=json_values, seed=st.integers(0, 10**6))  # fmt: skip
def test_tau2_data(which, content, value, seed):
    from collapse_probe.benchmarks import make_arena
    from collapse_probe.benchmarks.tau2._data import demo_dir

    d = _tmp()
    try:
        shutil.copytree(demo_dir(), d / "demo")
        base = json.loads((d / "demo" / which).read_text()) if which.endswith(".json") else ""
        for data in (_as_file(content), json.dumps(_mutate(base, value, random.Random(seed))).encode()):
            (d / "demo" / which).write_bytes(data)
            try:
                arena = make_arena("tau2-demo", data_dir=str(d))
                for task in arena.load_tasks(2, seed=0):
                    ep = arena.new_episode(task, 0)
                    arena.prompt_for(ep, "simulator")
            except ConfigError:
                pass
    finally:
        shutil.rmtree(d)


@SETTINGS
@given(text=st.text(max_size=400) | st.lists(json_values, max_size=6).map(json.dumps), k=st.integers(2, 8),
       seed=st.integers(0, 10**6))  # fmt: skip
def test_verbalized_sampling_outputs(text, k, seed):
    from collapse_probe.simulators.verbalized import choose_verbalized

    choice = choose_verbalized(text, k=k, rng=random.Random(seed))
    assert isinstance(choice.text, str)
    json.dumps(choice.to_record())


RUN_FILES = ["config.json", "results.json", "conversations.jsonl", "samples.jsonl", "metrics.jsonl", "verdict.json",
             "compare.json"]  # fmt: skip


@SETTINGS
@given(files=st.dictionaries(st.sampled_from(RUN_FILES), json_values | raw_bytes, min_size=1, max_size=4))
def test_run_dirs_the_dashboard_reads(files):
    from collapse_probe.report import runs as rd

    d = _tmp()
    try:
        run = d / "run"
        run.mkdir()
        for name, content in files.items():
            data = _as_file(content)
            if name.endswith(".jsonl") and not isinstance(content, bytes):
                data = b"\n".join(json.dumps(x).encode() for x in (content if isinstance(content, list) else [content]))
            (run / name).write_bytes(data)
        for r in rd.discover_runs(d):
            _ = r.status, r.label, r.schema
            for name in ("samples.jsonl", "conversations.jsonl", "metrics.jsonl"):
                rd.audit_records(r.jsonl(name).records)
            rd.training_curves(r)
    finally:
        shutil.rmtree(d)


@SETTINGS
@given(files=st.dictionaries(st.sampled_from(["config.json", "conversations.jsonl", "results.json"]),
                             json_values | raw_bytes, min_size=1, max_size=3))  # fmt: skip
def test_run_dirs_the_pipelines_resume_and_the_gate_reads(files):
    from collapse_probe.cli.gate import run as gate_run  # noqa: F401 - imported as the CLI does
    from collapse_probe.gate import gate_run_dir
    from collapse_probe.rollout import RunDir

    d = _tmp()
    try:
        for name, content in files.items():
            (d / name).write_bytes(_as_file(content))
        try:
            rd = RunDir(d)
            rd.create({"a": 1}, kind="crossplay", fingerprints={"p": "sha256:1"})
            rd.read_jsonl("conversations.jsonl")
            rd.release()
        except ConfigError:
            pass
        verdict = gate_run_dir(d, "p")
        assert verdict.exit_code in (0, 1, 2)
    finally:
        shutil.rmtree(d)


ENV_NAMES = ["SEED", "TASKS", "ROLLOUTS", "TEMPERATURE", "NO_CACHE", "MAX_LIVE", "N_BOOT", "MAX_INFRA_RATE", "STRICT",
             "MAX_TURNS", "SAMPLES", "VS_K", "CACHE", "OUT", "BENCHMARK", "PARTITION", "ENTROPY_TURNS"]  # fmt: skip


@settings(max_examples=40, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(env=st.dictionaries(st.sampled_from(ENV_NAMES), st.text(max_size=12).filter(lambda s: "\x00" not in s),
                           min_size=1, max_size=4))  # fmt: skip
def test_env_values(env):
    import contextlib
    import io

    from collapse_probe.cli import main

    d = _tmp()
    old = dict(os.environ)
    try:
        (d / "pol.json").write_text(json.dumps({"responses": [{"text": "hi", "p": 1.0}]}))
        os.environ.update({f"COLLAPSE_PROBE_{k}": v for k, v in env.items()})
        os.environ.setdefault("COLLAPSE_PROBE_CACHE", str(d / "cache.sqlite"))
        if os.environ.get("COLLAPSE_PROBE_OUT", "").strip() in ("", ".", ".."):
            os.environ["COLLAPSE_PROBE_OUT"] = str(d / "out")
        err = io.StringIO()
        argv = ["play", "--policy", f"scripted:{d / 'pol.json'}", "--sim", f"scripted:{d / 'pol.json'}",
                "--no-progress", "--show", "0"]  # fmt: skip
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            try:
                rc = main(argv)
            except SystemExit as exc:  # argparse rejected a value (a choices option): exit 2, one line
                rc = exc.code
        assert rc in (0, 1, 2), err.getvalue()
        assert "Traceback" not in err.getvalue() and "rerun with -v for the traceback" not in err.getvalue(), (
            err.getvalue()
        )
    finally:
        os.environ.clear()
        os.environ.update(old)
        shutil.rmtree(d, ignore_errors=True)
