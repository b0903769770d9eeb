"""Run state is explicit: what changes a run's results is in its ``config.json``, and a resume that
changes it is refused naming it; execution settings are recorded and may change on resume."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from collapse_probe.cli import main


def _cli(*argv: str) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        rc = main(list(argv))
    return rc, err.getvalue()


@pytest.fixture
def specs(tmp_path) -> dict[str, str]:
    def scripted(name: str, responses: list[tuple[str, float]]) -> str:
        (tmp_path / name).write_text(json.dumps({"responses": [{"text": t, "p": p} for t, p in responses]}))
        return f"scripted:{tmp_path / name}"

    return {
        "policy": scripted("policy.json", [("Would you donate today?", 1.0)]),
        "donor": scripted("donor.json", [("Sure [DONATE $1]", 0.6), ("No thanks.", 0.4)]),
        "donor2": scripted("donor2.json", [("I give [DONATE $2]", 0.5), ("Not today.", 0.5)]),
    }


def _config(run: Path) -> dict:
    return json.loads((run / "config.json").read_text())


def test_crossplay_records_vs_k_and_refuses_a_resume_with_another(tmp_path, specs):
    run = tmp_path / "xp"
    base = ("crossplay", "--policies", specs["policy"], "--sims", f"vs:{specs['donor']},{specs['donor2']}",
            "--tasks", "2", "--rollouts", "1", "--max-turns", "1", "--out", str(run), "--no-progress")  # fmt: skip
    assert _cli(*base, "--vs-k", "3")[0] == 0
    cfg = _config(run)
    assert cfg["vs_k"] == 3 and cfg["max_live"] is None and cfg["cache"] is True
    rc, err = _cli(*base, "--vs-k", "2")
    assert rc == 2 and "vs_k" in err and "Traceback" not in err
    assert _config(run)["vs_k"] == 3  # the refused resume changed nothing
    # execution settings are recorded and may change: the conversations are the same
    before = json.loads((run / "results.json").read_text())["cells"]
    assert _cli(*base, "--vs-k", "3", "--max-live", "1", "--no-cache")[0] == 0
    cfg = _config(run)
    assert cfg["cache"] is False
    assert json.loads((run / "results.json").read_text())["cells"] == before


def test_vs_k_is_not_recorded_without_a_verbalized_participant(tmp_path, specs):
    run = tmp_path / "xp"
    base = ("crossplay", "--policies", specs["policy"], "--sims", f"{specs['donor']},{specs['donor2']}",
            "--tasks", "2", "--rollouts", "1", "--max-turns", "1", "--out", str(run), "--no-progress")  # fmt: skip
    assert _cli(*base, "--vs-k", "3")[0] == 0
    assert _config(run)["vs_k"] is None
    assert _cli(*base, "--vs-k", "2")[0] == 0  # vs_k changes nothing here: the resume goes on


def test_play_refuses_a_resume_with_another_vs_k_and_a_run_made_before_it_was_recorded_resumes(tmp_path, specs):
    run = tmp_path / "play"
    base = ("play", "--policy", specs["policy"], "--sim", f"vs:{specs['donor']}", "--tasks", "2", "--rollouts",
            "1", "--max-turns", "1", "--out", str(run), "--no-progress")  # fmt: skip
    assert _cli(*base, "--vs-k", "4")[0] == 0
    assert _config(run)["vs_k"] == 4
    rc, err = _cli(*base, "--vs-k", "2")
    assert rc == 2 and "vs_k" in err
    cfg = _config(run)
    del cfg["vs_k"]  # a run directory written before vs_k was recorded
    (run / "config.json").write_text(json.dumps(cfg))
    assert _cli(*base, "--vs-k", "2")[0] == 0
