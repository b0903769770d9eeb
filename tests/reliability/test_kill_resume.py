"""kill -9 at random points of cross-play and audit runs: resuming gives the uninterrupted run's
results, with no conversation or state lost or duplicated."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.reliability

ROUNDS = 10
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[2]), *sys.path])}


def _write(tmp: Path) -> tuple[str, str, str]:
    pol = tmp / "pol.json"
    pol.write_text(json.dumps({"responses": [{"text": "Please donate for the kids.", "p": 0.6},
                                             {"text": "Would you give a little?", "p": 0.4}], "delay_s": 0.03}))  # fmt: skip
    donor = tmp / "donor.json"
    donor.write_text(json.dumps({
        "responses": [{"text": "Sure [DONATE $1]", "p": 0.5}, {"text": "No [DONATE $0]", "p": 0.3},
                      {"text": "A bit [DONATE $0.5]", "p": 0.2}],
        "delay_s": 0.03,
    }))  # fmt: skip
    donor2 = tmp / "donor2.json"
    donor2.write_text(json.dumps({"responses": [{"text": "Never [DONATE $0]", "p": 0.7},
                                                {"text": "Ok [DONATE $2]", "p": 0.3}], "delay_s": 0.03}))  # fmt: skip
    return f"scripted:{pol}", f"scripted:{donor}", f"scripted:{donor2}"


def _cli(args: list[str], cache: Path) -> list[str]:
    return [sys.executable, "-m", "collapse_probe.cli", *args, "--no-progress"]


def _lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except OSError:
        return 0


def _kill_until_done(argv: list[str], env: dict[str, str], watch: Path, rng: random.Random) -> list[int]:
    """Start the command and kill -9 it at a random moment after it recorded new work, ``ROUNDS``
    times (or until it finishes on its own); then let it finish. Returns the records seen at each kill."""
    seen = []
    for _ in range(ROUNDS):
        before = _lines(watch)
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while proc.poll() is None and _lines(watch) <= before and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(rng.uniform(0.0, 0.08))  # a random point after the first new record: mid-turn, mid-write
        if proc.poll() is not None:
            break  # finished before it could be killed
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        seen.append(_lines(watch))
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return seen


def _records(path: Path, key: str) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_crossplay_killed_at_random_points_resumes_to_identical_results(tmp_path):
    pol, d1, d2 = _write(tmp_path)
    env = {**ENV, "COLLAPSE_PROBE_CACHE": str(tmp_path / "nocache.sqlite")}
    args = ["crossplay", "--policies", pol, "--sims", f"{d1},{d2}", "--train-sim", d1, "--tasks", "10",
            "--rollouts", "4", "--max-turns", "2", "--max-live", "3", "--no-cache"]  # fmt: skip
    ref = subprocess.run(
        _cli([*args, "--out", str(tmp_path / "ref")], tmp_path), env=env, capture_output=True, text=True
    )
    assert ref.returncode == 0, ref.stderr
    out = tmp_path / "run"
    seen = _kill_until_done(
        _cli([*args, "--out", str(out)], tmp_path), env, out / "conversations.jsonl", random.Random(1)
    )
    assert len(seen) == ROUNDS and 0 < seen[0] < seen[-1] <= 2 * 10 * 4, seen  # every kill landed after new work
    got = json.loads((tmp_path / "run" / "results.json").read_text())
    want = json.loads((tmp_path / "ref" / "results.json").read_text())
    for key in ("cells", "transfer", "policy_diversity", "heldout_reward", "fingerprints"):
        assert got[key] == want[key], key
    keys = [r["key"] for r in _records(tmp_path / "run" / "conversations.jsonl", "key")]
    assert len(keys) == len(set(keys)) == 2 * 10 * 4  # 0 lost, 0 duplicated


def test_audit_killed_at_random_points_resumes_to_identical_results(tmp_path):
    _, d1, _ = _write(tmp_path)
    env = {**ENV, "COLLAPSE_PROBE_CACHE": str(tmp_path / "nocache.sqlite")}
    args = ["audit", "--sim", d1, "--states", "60", "--samples", "40", "--partition", "exact", "--no-cache"]
    ref = subprocess.run(
        _cli([*args, "--out", str(tmp_path / "ref")], tmp_path), env=env, capture_output=True, text=True
    )
    assert ref.returncode == 0, ref.stderr
    out = tmp_path / "run"
    seen = _kill_until_done(_cli([*args, "--out", str(out)], tmp_path), env, out / "samples.jsonl", random.Random(2))
    assert len(seen) == ROUNDS and 0 < seen[0] < seen[-1] <= 120, seen  # every kill landed after new work
    got = json.loads((tmp_path / "run" / "results.json").read_text())
    want = json.loads((tmp_path / "ref" / "results.json").read_text())
    assert got["summary"] == want["summary"] and got["states"] == want["states"]
    ids = [(r["state_id"], r["mode"]) for r in _records(tmp_path / "run" / "samples.jsonl", "state_id")]
    assert len(ids) == len(set(ids)) == 120  # 0 lost, 0 duplicated
