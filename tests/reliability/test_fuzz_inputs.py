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
from hypothesis import HealthCheck, example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from collapse_probe.errors import ConfigError  # noqa: E402

pytestmark = pytest.mark.reliability

SETTINGS = settings(max_examples=60, deadline=None, database=None, suppress_health_check=list(HealthCheck))

surrogate_text = st.text(st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), min_size=1, max_size=3)
"""Lone surrogates: valid JSON escapes (``"\\ud800"``), not text a UTF-8 file can hold."""
huge_numbers = st.sampled_from([10**300, -(10**300), 2**64, float("inf"), float("-inf"), 1e308])
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20) | surrogate_text
    | huge_numbers,
    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=10), c, max_size=4),
    max_leaves=20,
)  # fmt: skip
HOSTILE = [
    b'{"responses": [{"text": "a", "p": 1' + b"0" * 5000 + b"}]}",  # an integer Python will not convert
    b'{"responses": [{"text": "\\ud800", "p": 1.0}]}',  # a lone surrogate
    b'{"responses": [{"text": "a", "p": 1e400}]}',
    b'{"responses": [{"text": "a", "p": NaN}]}',
    b"[" * 100_000 + b"]" * 100_000,  # past the parser's recursion limit
    b'{"persona_id": "\\udfff", "responses": []}',
    b"\xef\xbb\xbf{}",  # a byte-order mark
]
raw_bytes = st.binary(max_size=300) | st.sampled_from(HOSTILE)
BACKSTOP = "rerun with -v for the traceback"


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
    from collapse_probe.pipelines.gate import gate_run_dir
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
        assert verdict.exit_code in (0, 1, 2, 3)  # 3: could not judge (an unfinished or unreadable run)
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
    cwd = os.getcwd()
    try:
        (d / "pol.json").write_text(json.dumps({"responses": [{"text": "hi", "p": 1.0}]}))
        os.environ.update({f"COLLAPSE_PROBE_{k}": v for k, v in env.items()})
        os.environ.setdefault("COLLAPSE_PROBE_CACHE", str(d / "cache.sqlite"))
        out = os.environ.get("COLLAPSE_PROBE_OUT", "")
        if out.strip() in ("", ".") or ".." in out or os.path.isabs(out) or out.startswith("~"):
            os.environ["COLLAPSE_PROBE_OUT"] = str(d / "out")
        os.chdir(d)  # a relative COLLAPSE_PROBE_OUT makes its run inside ``d``, never in the checkout
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
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(old)
        shutil.rmtree(d, ignore_errors=True)


# ------------------------------------------------------------------------------------------------------------
# The reliability report's kinds of bad input, at the command line: each run must end in 0 (accepted), 1 (no
# result) or 2 with one error line, within 60 s, never through the internal-error backstop, never touching a
# file outside the run directory.

import contextlib  # noqa: E402
import io  # noqa: E402
import signal  # noqa: E402

POLICY = {"responses": [{"text": "Please donate.", "p": 1.0}]}
DONOR = {"responses": [{"text": "Sure [DONATE $1]", "p": 0.5}, {"text": "No [DONATE $0]", "p": 0.5}]}


def _cli(argv: list[str], timeout_s: int = 60) -> tuple[int, str]:
    """``main(argv)`` in this process: (exit status, stderr); a run past ``timeout_s`` is a hang."""
    from collapse_probe.cli import main

    def hang(signum, frame):  # noqa: ANN001
        raise TimeoutError(f"collapse-probe {' '.join(argv)} ran past {timeout_s} s")

    err = io.StringIO()
    old = signal.signal(signal.SIGALRM, hang)
    signal.alarm(timeout_s)
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            try:
                rc = main(argv)
            except SystemExit as exc:
                rc = int(exc.code or 0)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    return rc, err.getvalue()


def _assert_clean(rc: int, err: str, allowed: tuple[int, ...] = (0, 1, 2)) -> None:
    assert rc in allowed, err
    assert "Traceback" not in err and BACKSTOP not in err, err
    if rc == 2:
        assert len([line for line in err.splitlines() if "error:" in line]) == 1, err


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """Scripted models and one finished run of each kind that resumes from records (crossplay, play, audit)."""
    d = tmp_path_factory.mktemp("fuzz-world")
    (d / "pol.json").write_text(json.dumps(POLICY))
    (d / "donor.json").write_text(json.dumps(DONOR))
    old = os.getcwd()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("COLLAPSE_PROBE_CACHE", str(d / "cache.sqlite"))
        os.chdir(d)
        try:
            for argv in RUNS.values():
                rc, err = _cli([*argv, "--out", f"base-{argv[0]}"])
                assert rc == 0, err
        finally:
            os.chdir(old)
    return d


RUNS = {
    "crossplay": ["crossplay", "--policies", "scripted:pol.json", "--sims", "scripted:donor.json", "--tasks", "3",
                  "--rollouts", "1", "--max-turns", "1", "--no-progress"],
    "play": ["play", "--policy", "scripted:pol.json", "--sim", "scripted:donor.json", "--tasks", "3", "--rollouts",
             "1", "--max-turns", "1", "--no-progress", "--show", "0"],
    "audit": ["audit", "--sim", "scripted:donor.json", "--states", "2", "--samples", "4", "--partition", "exact",
              "--no-progress"],
}  # fmt: skip
RECORDS = {"crossplay": "conversations.jsonl", "play": "conversations.jsonl", "audit": "samples.jsonl"}
ENTRY_KINDS = ["directory", "fifo", "link inside", "link outside", "dangling link", "link to /dev/zero", "link loop",
               "regular file"]  # fmt: skip


def _in_world(world: Path, monkeypatch) -> Path:
    monkeypatch.chdir(world)
    monkeypatch.setenv("COLLAPSE_PROBE_CACHE", str(world / "cache.sqlite"))
    run = Path(tempfile.mkdtemp(prefix="run-", dir=world))
    return run


def _plant(run: Path, name: str, kind: str, outside: Path) -> None:
    p = run / name
    if p.is_dir() and not p.is_symlink():
        shutil.rmtree(p)
    elif p.exists() or p.is_symlink():
        p.unlink()
    if kind == "directory":
        p.mkdir()
    elif kind == "fifo":
        os.mkfifo(p)
    elif kind == "link inside":
        (run / "elsewhere.bin").write_text("{}\n")
        p.symlink_to(run / "elsewhere.bin")
    elif kind == "link outside":
        p.symlink_to(outside)
    elif kind == "dangling link":
        p.symlink_to(run / "no-such-file")
    elif kind == "link to /dev/zero":
        p.symlink_to("/dev/zero")
    elif kind == "link loop":
        p.symlink_to(p)
    else:
        p.write_bytes(b"\xff\xfe not what a run writes\n")


@settings(max_examples=50, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(command=st.sampled_from(sorted(RUNS)),
       name=st.sampled_from(["config.json", "results.json", "conversations.jsonl", "samples.jsonl", "usage.json",
                             "report.html", ".lock", ".previous", "batches.jsonl", "variance"]),
       kind=st.sampled_from(ENTRY_KINDS), fresh=st.booleans())  # fmt: skip
def test_run_directory_entries_of_every_type(world, monkeypatch, command, name, kind, fresh):
    run = _in_world(world, monkeypatch)
    shutil.copytree(world / f"base-{command}", run, dirs_exist_ok=True)
    outside = world / f"outside-{os.getpid()}.txt"
    outside.write_text("a file that is not the run's\n")
    try:
        _plant(run, name, kind, outside)
        before = sorted(os.listdir(run))
        rc, err = _cli([*RUNS[command], "--out", str(run), *(["--fresh"] if fresh else [])])
        _assert_clean(rc, err)
        assert outside.read_text() == "a file that is not the run's\n"  # never written through a link
        if rc == 2:
            assert sorted(os.listdir(run)) == before  # a refused run moves nothing
    finally:
        outside.unlink(missing_ok=True)
        shutil.rmtree(run, ignore_errors=True)


@settings(max_examples=60, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(command=st.sampled_from(sorted(RUNS)), value=json_values, seed=st.integers(0, 10**6),
       raw=st.none() | raw_bytes)  # fmt: skip
def test_malformed_records_of_every_kind_are_refused_or_rerun_never_dropped(world, monkeypatch, command, value, seed,
                                                                            raw):  # fmt: skip
    run = _in_world(world, monkeypatch)
    shutil.copytree(world / f"base-{command}", run, dirs_exist_ok=True)
    try:
        p = run / RECORDS[command]
        lines = p.read_text().splitlines()
        rng = random.Random(seed)
        i = rng.randrange(len(lines))
        lines[i] = raw.decode("utf-8", "replace").replace("\n", " ") if raw is not None else json.dumps(
            _mutate(json.loads(lines[i]), value, rng))  # fmt: skip
        p.write_text("\n".join(lines) + "\n")
        rc, err = _cli([*RUNS[command], "--out", str(run)])
        _assert_clean(rc, err)
        if rc == 0 and command != "audit":
            results = json.loads((run / "results.json").read_text())
            cells = results["cells"] if command == "crossplay" else [results["summary"]]
            # every conversation is counted: scored, an infrastructure failure (rerun next time) or unscored
            assert sum(c["n"] + c["infra_failures"] + c.get("unscored", 0) for c in cells) == 3, cells
        if rc == 0 and command == "audit":  # every state measured again or kept, none dropped
            want = json.loads((world / "base-audit" / "results.json").read_text())["summary"]["n_states"]
            assert json.loads((run / "results.json").read_text())["summary"]["n_states"] == want
    finally:
        shutil.rmtree(run, ignore_errors=True)


@settings(max_examples=40, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(value=json_values, seed=st.integers(0, 10**6), which=st.sampled_from(["metrics", "rollouts", "batches"]))
def test_training_and_batch_records(value, seed, which):
    from collapse_probe.models._batch import _Journal
    from collapse_probe.rollout import iter_jsonl
    from collapse_probe.trainers._train_results import step_problem

    d = _tmp()
    try:
        base = {"metrics": {"step": 1, "train_reward": 0.5}, "rollouts": {"step": 2, "reward": 1.0},
                "batches": {"event": "submitted", "spec": "openai/x", "batch_id": "b1", "calls": "k"}}[which]  # fmt: skip
        p = d / f"{which}.jsonl"
        p.write_text(json.dumps(base) + "\n" + json.dumps(_mutate(base, value, random.Random(seed))) + "\n")
        try:
            if which == "batches":
                journal = _Journal(p)
                journal.pending("openai/x", "k")
            else:
                recs = list(iter_jsonl(p, step_problem))
                sorted(recs, key=lambda r: r["step"])
        except ConfigError:
            pass
    finally:
        shutil.rmtree(d)


def _alias_bomb(depth: int, width: int) -> str:
    lines = [f"a0: &a0 [{', '.join(['x'] * width)}]"]
    for k in range(1, depth):
        lines.append(f"a{k}: &a{k} [{', '.join([f'*a{k - 1}'] * width)}]")
    lines.append(f"samples: [{', '.join([f'*a{depth - 1}'] * width)}]")
    return "\n".join(lines) + "\n"


yaml_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=10),
    lambda c: (
        st.lists(c, max_size=3) | st.dictionaries(st.sampled_from(["sim", "policy", "judge", "x"]), c, max_size=3)
    ),
    max_leaves=10,
)
CONFIG_KEYS = ["tasks", "rollouts", "max-turns", "max_turns", "samples", "states", "sim", "sims", "policies",
               "model-arg", "seed", "temperature", "out", "fresh", "n-boot", "unknown-key"]  # fmt: skip


@settings(max_examples=60, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(command=st.sampled_from(["play", "audit", "crossplay", "train", "lab", "gate"]),
       data=st.dictionaries(st.sampled_from(CONFIG_KEYS), yaml_values, max_size=5),
       bomb=st.none() | st.tuples(st.integers(2, 9), st.integers(2, 12)), raw=st.none() | st.binary(max_size=200),
       suffix=st.sampled_from([".yaml", ".toml"]))  # fmt: skip
@example(command="play", data={}, bomb=None, raw=b"\x00", suffix=".yaml")  # YAML's reader refuses it as it is built
@example(command="audit", data={}, bomb=None, raw=b"a: 1\x07\n", suffix=".yaml")
def test_config_files(command, data, bomb, raw, suffix):
    import yaml

    from collapse_probe.cli import build_parser
    from collapse_probe.cli._config import _subparsers, apply_config_file

    d = _tmp()
    try:
        p = d / f"run{suffix}"
        if bomb is not None:
            p = d / "run.yaml"
            p.write_text(_alias_bomb(*bomb))
        elif raw is not None:
            p.write_bytes(raw)
        elif suffix == ".yaml":
            p.write_text(yaml.safe_dump(data))
        else:
            p.write_text("".join(f"{k.replace('-', '_')} = {json.dumps(v)}\n" for k, v in data.items()
                                 if isinstance(v, str | int | bool)))  # fmt: skip
        sp = _subparsers(build_parser())[command]

        def hang(signum, frame):  # noqa: ANN001
            raise TimeoutError(f"loading {p} ran past 20 s")

        old = signal.signal(signal.SIGALRM, hang)
        signal.alarm(20)
        try:
            apply_config_file(sp, command, p)
        except ConfigError as exc:
            assert "\n" not in str(exc) and len(str(exc)) < 2000  # one line, not the expansion of an alias bomb
        finally:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, old)
    finally:
        shutil.rmtree(d)


DASHBOARD_FILES = ["config.json", "results.json", "samples.jsonl", "conversations.jsonl", "metrics.jsonl",
                   "usage.json", ".lock", "compare.json", "verdict.json"]  # fmt: skip


@settings(max_examples=40, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(entries=st.dictionaries(st.sampled_from(DASHBOARD_FILES), st.sampled_from(ENTRY_KINDS) | json_values,
                               min_size=1, max_size=4))  # fmt: skip
def test_dashboard_file_reads_of_every_type(entries):
    import threading

    from collapse_probe.report import runs as rd

    d = _tmp()
    outside = d / "outside.json"
    outside.write_text(json.dumps({"usage": {"leaked-model": {"requests": 1}}, "schema": "collapse-probe/audit/v1"}))
    try:
        run = d / "runs" / "r"
        run.mkdir(parents=True)
        for name, what in entries.items():
            if isinstance(what, str) and what in ENTRY_KINDS:
                _plant(run, name, what, outside)
            else:
                (run / name).write_bytes(_as_file(what))
        done: list[str] = []
        errors: list[BaseException] = []

        def read() -> None:
            try:
                for r in rd.discover_runs(d / "runs"):
                    _ = r.status, r.label, r.schema, r.problems
                    for name in ("samples.jsonl", "conversations.jsonl", "metrics.jsonl"):
                        rd.audit_records(r.jsonl(name).records)
                    rd.training_curves(r)
                    done.append(repr(rd.read_usage(r)) + repr(r.results))
            except BaseException as exc:  # an exception in the thread is a page that fails to draw
                errors.append(exc)

        t = threading.Thread(target=read, daemon=True)
        t.start()
        t.join(timeout=30)
        assert not t.is_alive(), "a dashboard read blocked or ran away"
        assert not errors, f"a dashboard read raised {errors[0]!r}"
        assert "leaked-model" not in "".join(done)  # nothing outside RUNS_DIR is read
    finally:
        shutil.rmtree(d, ignore_errors=True)
