"""The public API: ``collapse_probe.audit(...)``, ``.crossplay(...)``, ``.gate(...)``, ``.train(...)``,
``.lab(...)`` and their async forms give what the pipeline functions give, as typed results; the public
names are functions (the pipelines' modules are private); ``import collapse_probe`` loads nothing heavy."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

import collapse_probe
from collapse_probe.errors import ConfigError

REPO = Path(__file__).resolve().parents[1]
DONOR = REPO / "collapse_probe" / "data" / "scripted" / "p4g_donor_diverse.json"
SPEC = f"scripted:{DONOR}"


def _strip(results):
    """Results without what differs between two identical runs (wall-clock fields)."""
    if hasattr(results, "to_json"):  # the public API's typed results
        results = results.to_json()
    drop = {"seconds", "created", "usage"}
    if isinstance(results, dict):
        return {k: _strip(v) for k, v in results.items() if k not in drop}
    if isinstance(results, list):
        return [_strip(v) for v in results]
    return results


def test_import_collapse_probe_is_cheap():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    code = "import json, sys, collapse_probe; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=REPO, capture_output=True, text=True, check=True)
    loaded = json.loads(out.stdout)
    ours = [m for m in loaded if m.startswith("collapse_probe.")]
    assert sorted(ours) == ["collapse_probe._version", "collapse_probe.errors"], ours
    assert not {"torch", "numpy", "scipy", "transformers"} & set(loaded)


def test_the_public_names_are_functions_and_configs_beside_private_modules():
    from collapse_probe.pipelines.audit import AuditConfig, run_audit
    from collapse_probe.pipelines.crossplay import CrossplayConfig, run_crossplay
    from collapse_probe.pipelines.gate import evaluate_gate

    for name in ("audit", "crossplay", "gate"):
        fn = getattr(collapse_probe, name)
        assert callable(fn) and not isinstance(fn, ModuleType), name
        assert f"collapse_probe.{name}" not in sys.modules  # no module of that name shadows the function
    assert collapse_probe.AuditConfig is AuditConfig and collapse_probe.CrossplayConfig is CrossplayConfig
    assert callable(run_audit) and callable(run_crossplay) and callable(evaluate_gate)
    assert AuditConfig().sim and CrossplayConfig().policies
    for name in ("audit_async", "crossplay_async", "gate_async", "train", "train_async", "lab", "lab_async"):
        assert callable(getattr(collapse_probe, name))
        assert name in collapse_probe.__all__ and name in dir(collapse_probe)
    for name in collapse_probe.__all__:
        assert getattr(collapse_probe, name) is not None, name
    with pytest.raises(AttributeError, match="no attribute 'audits'"):
        collapse_probe.audits  # noqa: B018


def test_crossplay_and_gate_calls_equal_the_pipeline_functions(tmp_path):
    from collapse_probe.pipelines.crossplay import CrossplayConfig, run_crossplay
    from collapse_probe.pipelines.gate import evaluate_gate

    config = CrossplayConfig(policies=[SPEC], simulators=[SPEC], tasks=2, rollouts=1, max_turns=1)
    opts = {"progress": False, "report": False, "cache": False}
    base = run_crossplay(config, out=tmp_path / "base", **opts)
    by_config = collapse_probe.crossplay(config, out=tmp_path / "a", **opts)
    by_fields = collapse_probe.crossplay(out=tmp_path / "b", **dict(config), **opts)
    by_override = collapse_probe.crossplay(
        CrossplayConfig(policies=[SPEC], simulators=[SPEC], tasks=5), tasks=2, rollouts=1, max_turns=1, out=None, **opts
    )
    awaited = asyncio.run(collapse_probe.crossplay_async(config, out=tmp_path / "c", **opts))
    assert _strip(by_config) == _strip(by_fields) == _strip(by_override) == _strip(awaited) == _strip(base)
    assert (tmp_path / "a" / "results.json").exists()
    from collapse_probe.results import CrossplayResults

    assert isinstance(by_config, CrossplayResults) and isinstance(awaited, CrossplayResults)
    assert by_config.cells[0].mean_reward == base["cells"][0]["mean_reward"] == by_config["cells"][0].mean_reward

    from collapse_probe.results import GateResults

    verdict = collapse_probe.gate(base, SPEC, min_transfer=0.5)
    assert isinstance(verdict, GateResults)
    assert verdict.to_json() == evaluate_gate(base, SPEC, min_transfer=0.5).to_json()
    assert collapse_probe.gate(by_config, SPEC, min_transfer=0.5).to_json() == verdict.to_json()  # typed input
    from_dir = collapse_probe.gate(tmp_path / "a", SPEC, min_transfer=0.5)
    assert from_dir.exit_code == verdict.exit_code and from_dir.outcome == verdict.outcome
    assert asyncio.run(collapse_probe.gate_async(base, SPEC, min_transfer=0.5)).to_json() == verdict.to_json()
    missing = collapse_probe.gate(tmp_path / "nowhere", SPEC, min_transfer=0.5)
    assert missing.exit_code == 3 and missing.checks[0].name == "results"  # could not judge, not an exception


def test_audit_call_equals_run_audit(tmp_path):
    from collapse_probe.pipelines.audit import AuditConfig, run_audit

    config = AuditConfig(sim=SPEC, states=1, samples=8, partition="label", n_boot=100)
    base = run_audit(config, tmp_path / "base", progress=False)
    called = collapse_probe.audit(sim=SPEC, states=1, samples=8, partition="label", n_boot=100, out=tmp_path / "a",
                                  progress=False)  # fmt: skip
    awaited = asyncio.run(collapse_probe.audit_async(config, out=None, progress=False))
    assert _strip(called) == _strip(base) == _strip(awaited)
    assert (tmp_path / "a" / "report.html").exists()  # the run directory still gets its report
    from collapse_probe.results import AuditResults

    assert isinstance(called, AuditResults) and isinstance(awaited, AuditResults)
    assert called.summary.n_states == base["summary"]["n_states"] == called["summary"].n_states
    assert called.verdicts.reward.label == base["verdicts"]["reward"]["label"]


def test_the_calls_show_their_parameters():
    import inspect

    wanted = {"audit": "out", "crossplay": "out", "gate": "policy", "train": "out", "lab": "config"}
    for name, param in wanted.items():
        assert param in inspect.signature(getattr(collapse_probe, name)).parameters, name


def test_lab_call_equals_run_lab():
    from collapse_probe.results import LabRunResults
    from collapse_probe.trainers.lab import LabConfig, run_lab

    expected = run_lab(LabConfig(steps=3, seed=2)).to_json()
    called = collapse_probe.lab(steps=3, seed=2)
    assert isinstance(called, LabRunResults) and called.to_json() == expected
    assert called.summary == expected["summary"] and called.heldout_reward == expected["heldout_reward"]
    assert collapse_probe.lab({"steps": 3, "seed": 2}).to_json() == expected
    assert asyncio.run(collapse_probe.lab_async(LabConfig(steps=3), seed=2)).to_json() == expected


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: collapse_probe.audit(bogus=1), "unknown argument 'bogus'; expected a field of AuditConfig"),
        (lambda: collapse_probe.crossplay(vs_kk=3), "unknown argument 'vs_kk'"),
        (lambda: collapse_probe.lab(progress=False), "unknown argument 'progress'; expected a field of LabConfig"),
        (lambda: collapse_probe.lab({"stepz": 3}), "config has no field 'stepz'"),
        (lambda: collapse_probe.crossplay(42), "expected a CrossplayConfig"),
    ],
)
def test_bad_arguments_name_what_is_wrong(call, message):
    with pytest.raises(ConfigError, match=message):
        call()


def test_a_directory_named_like_an_optional_package_is_no_install_of_it(tmp_path, monkeypatch):
    """A bare directory on the path (the checkout's ``datasets/`` of dataset cards) imports as a namespace
    package; ``require`` names the missing extra instead of handing it back (it has none of the package's API)."""
    from collapse_probe.errors import MissingDependencyError, require

    (tmp_path / "cp_optional_pkg_x").mkdir()
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(MissingDependencyError, match=r'pip install "collapse-probe\[export\]"'):
        require("cp_optional_pkg_x", "export", "export --to hf")
    (tmp_path / "cp_optional_pkg_x" / "__init__.py").write_text("VALUE = 1\n")
    assert require("cp_optional_pkg_x", "export", "export --to hf").VALUE == 1
