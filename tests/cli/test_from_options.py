"""``audit --from`` and its options: an empty ``--from`` (flag or ``$COLLAPSE_PROBE_FROM``) and
``--format``/``--sim-role`` without ``--from`` are refused in one line, never read as a live audit of
the default simulator; the TRL example refuses non-positive sizes before loading anything."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from collapse_probe.cli import main

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("argv", "env", "says"),
    [
        (["--from", ""], {}, "--from: expected a published file or directory, got an empty path"),
        (["--from", "  "], {}, "--from: expected a published file or directory"),
        ([], {"COLLAPSE_PROBE_FROM": ""}, "$COLLAPSE_PROBE_FROM (--from): expected a published file"),
        (["--format", "jsonl"], {}, "--format jsonl: applies only to --from FILE"),
        (["--sim-role", "assistant"], {}, "--sim-role assistant: applies only to --from FILE"),
        (["--sim-role", "user"], {}, "--sim-role user: applies only to --from FILE"),
        ([], {"COLLAPSE_PROBE_FORMAT": "inspect"}, "$COLLAPSE_PROBE_FORMAT (--format) inspect: applies only to --from"),
        ([], {"COLLAPSE_PROBE_SIM_ROLE": "user"}, "$COLLAPSE_PROBE_SIM_ROLE (--sim-role) user: applies only to --from"),
    ],
)
def test_from_options_without_a_file_are_refused(tmp_path, monkeypatch, capsys, argv, env, says):
    monkeypatch.chdir(tmp_path)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert main(["audit", *argv, "--out", "o", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"collapse-probe audit: error: {says}" or (says in err and len(err.splitlines()) == 1), err
    assert not (tmp_path / "o").exists()  # no audit started


def test_sim_role_with_from_still_applies(tmp_path, capsys):
    import json

    f = tmp_path / "c.jsonl"
    lines = [{"task_id": "t", "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": c}]}
             for c in ("a", "a", "b")]  # fmt: skip
    f.write_text("".join(json.dumps(x) + "\n" for x in lines))
    rc = main(["audit", "--from", str(f), "--sim-role", "assistant", "--partition", "exact", "--out",
               str(tmp_path / "o"), "--no-progress"])  # fmt: skip
    assert rc == 0, capsys.readouterr().err
    assert json.loads((tmp_path / "o" / "results.json").read_text())["summary"]["n_states"] == 1


def _example():
    spec = importlib.util.spec_from_file_location("trl_grpo_monitor", REPO / "examples" / "trl_grpo_monitor.py")
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    sys.modules.setdefault("trl_grpo_monitor", module)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    ("flag", "value"),
    [("--lora-r", "-1"), ("--max-completion-length", "0"), ("--sim-max-tokens", "-5"), ("--shadow-samples", "1"),
     ("--lr", "-1"), ("--lr", "nan"), ("--shadow-fraction", "0"), ("--epsilon-star", "2"), ("--steps", "0"),
     ("--tasks", "-3"), ("--generations", "1")],
)  # fmt: skip
def test_the_trl_example_refuses_non_positive_sizes(capsys, flag, value):
    with pytest.raises(SystemExit) as exc:
        _example().parse_args([flag, value])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("trl_grpo_monitor.py: error:") or "error:" in err
    assert flag in err, err


def test_the_trl_example_keeps_lora_r_zero():
    assert _example().parse_args(["--lora-r", "0"]).lora_r == 0
