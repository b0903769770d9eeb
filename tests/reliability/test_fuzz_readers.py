"""CLI-level fuzzing of the readers' families and of plugins: a published file with a hostile field
(``audit --from``: τ2 results, inspect logs), and an installed plugin distribution whose code fails
in a generated way (an exception type, ``sys.exit(code)``, a sleep; on import, in ``build`` or in
``partition``). Every run ends in 0, 1 or one error line, never the CLI's "rerun with -v" backstop."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "interop"))
from hostile_cases import _eval_log, install_hostile_plugins  # noqa: E402
from tau2_results import make_results  # noqa: E402
from test_fuzz_inputs import _assert_clean, _cli  # noqa: E402
from test_reader_limits_fuzz import _paths, _set, hostile  # noqa: E402

pytestmark = pytest.mark.reliability
SETTINGS = settings(max_examples=40, deadline=None, database=None, suppress_health_check=list(HealthCheck))


@SETTINGS
@given(value=hostile, seed=st.integers(0, 10**6))
def test_audit_from_a_tau2_file_with_a_hostile_field(tmp_path_factory, monkeypatch, value, seed):
    d = tmp_path_factory.mktemp("tau2")
    monkeypatch.chdir(d)
    data = make_results(d / "results.json", {"t1": [("a", 0.5), ("b", 0.5)], "t2": [("c", 1.0)]}, 3)
    path = random.Random(seed).choice([p for p in _paths(data) if p])
    _set(data, path, value)
    (d / "results.json").write_text(json.dumps(data, ensure_ascii=True))
    rc, err = _cli(["audit", "--from", str(d / "results.json"), "--partition", "exact", "--no-progress",
                    "--no-cache", "--out", str(d / "out")])  # fmt: skip
    _assert_clean(rc, err)


@pytest.fixture(scope="module")
def eval_log(tmp_path_factory) -> Path:
    pytest.importorskip("inspect_ai")
    return _eval_log(tmp_path_factory.mktemp("log"))


@SETTINGS
@given(value=hostile, seed=st.integers(0, 10**6), where=st.sampled_from(["metadata", "message", "any"]))
def test_audit_from_an_inspect_log_with_a_hostile_field(eval_log, tmp_path_factory, monkeypatch, value, seed, where):
    d = tmp_path_factory.mktemp("inspect")
    monkeypatch.chdir(d)
    rng = random.Random(seed)
    out = d / "log.eval"
    with zipfile.ZipFile(eval_log) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        done = False
        for info in src.infolist():
            raw = src.read(info)
            if info.filename.startswith("samples/") and not done:
                sample = json.loads(raw)
                if where == "metadata":
                    sample["metadata"][rng.choice(["task_id", "simulator", "policy", "simulator_errors", "step",
                                                   "x"])] = value  # fmt: skip
                elif where == "message":
                    sample["messages"][rng.randrange(len(sample["messages"]))]["content"] = value
                else:
                    _set(sample, rng.choice([p for p in _paths(sample) if p]), value)
                raw, done = json.dumps(sample, ensure_ascii=True).encode(), True
            dst.writestr(info.filename, raw)
    rc, err = _cli(["audit", "--from", str(out), "--format", "inspect", "--partition", "exact", "--no-progress",
                    "--no-cache", "--out", str(d / "out")])  # fmt: skip
    _assert_clean(rc, err)


@pytest.fixture(scope="module")
def plugin_site(tmp_path_factory) -> Path:
    target = tmp_path_factory.mktemp("site")
    try:
        install_hostile_plugins(target)
    except subprocess.CalledProcessError as exc:
        pytest.skip(f"cannot build a local distribution here: {exc.stderr!r:.200}")
    return target


FAILURES = {
    "raise": "raise {exc}('generated failure')",
    "exit": "import sys; sys.exit({code})",
    "sleep": "import time; time.sleep(30)",
    "recurse": "def _f(n): return _f(n + 1)\n{indent}_f(0)",
    "keyboard": "raise KeyboardInterrupt",
}
PLACES = ("import", "build", "partition")


@settings(max_examples=15, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(kind=st.sampled_from(sorted(FAILURES)), place=st.sampled_from(PLACES),
       exc=st.sampled_from(["RuntimeError", "ValueError", "TypeError", "ImportError", "MemoryError", "OSError",
                            "AttributeError", "Exception", "BaseException"]), code=st.sampled_from([0, 1, 7, "'x'", None]))  # fmt: skip
def test_an_installed_plugin_failing_anywhere_is_one_line(plugin_site, tmp_path_factory, kind, place, exc, code):
    if kind == "keyboard" and place == "import":
        kind = "raise"  # an interrupt is the user's: the CLI reports it as one, wherever it comes from
    d = tmp_path_factory.mktemp("plugin")
    site = d / "site"
    shutil.copytree(plugin_site, site)
    body = FAILURES[kind].format(exc=exc, code=code, indent="    " if place != "import" else "")
    module = textwrap.dedent("""
        from collapse_probe.benchmarks import Benchmark, BenchmarkOptions
        {at_import}

        def _build(options, context):
            {at_build}
            from collapse_probe.benchmarks import make_arena
            return make_arena("p4g")

        BENCHMARK = Benchmark("build-raises", BenchmarkOptions, build=_build)

        class RaisingPartitioner:
            name = "raising"

            def partition(self, texts):
                {at_partition}
                return [0] * len(texts)
    """).format(at_import=body if place == "import" else "", at_build=body if place == "build" else "pass",
                at_partition=body if place == "partition" else "pass")  # fmt: skip
    (site / "cp_hostile_build_raises.py").write_text(module)
    donor = d / "donor.json"
    donor.write_text(json.dumps({"responses": [{"text": "Sure [DONATE $1]", "p": 0.5}, {"text": "No", "p": 0.5}]}))
    env = {k: v for k, v in os.environ.items() if not k.startswith("COLLAPSE_PROBE_")}
    env.update(PYTHONPATH=os.pathsep.join([str(site), str(HERE.parents[1])]), COLLAPSE_PROBE_PLUGIN_TIMEOUT="2",
               COLLAPSE_PROBE_CACHE=str(d / "cache.sqlite"))  # fmt: skip
    args = ["--benchmark", "build-raises"] if place != "partition" else ["--partition", "raising"]
    proc = subprocess.run([sys.executable, "-m", "collapse_probe.cli", "audit", *args, "--sim", f"scripted:{donor}",
                           "--states", "1", "--samples", "4", "--no-progress", "--out", str(d / "out")],
                          capture_output=True, text=True, cwd=d, env=env, timeout=120)  # fmt: skip
    if kind == "keyboard":
        assert proc.returncode in (2, 130) and "Traceback" not in proc.stderr, proc.stderr
        return
    if kind == "sleep" and place != "import":
        return  # a plugin's build or partition may take its time: only its import is held to a limit
    _assert_clean(proc.returncode, proc.stderr, allowed=(2,))
    assert "cp-hostile-plugins" in proc.stderr, proc.stderr
