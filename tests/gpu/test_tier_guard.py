"""The ``gpu`` tier never reads as a pass when nothing ran on a GPU (default tier; hides any GPU).

Both entry points are run with ``CUDA_VISIBLE_DEVICES=""``, so the check is the same on a CPU
machine and on a GPU one: the tier must exit non-zero and say in one line that nothing ran.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _run(cmd: list[str]) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "CUDA_VISIBLE_DEVICES": "",
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
    }
    return subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)


def test_gpu_tier_without_a_gpu_fails_and_says_nothing_ran():
    proc = _run([sys.executable, "-m", "pytest", "-q", "-m", "gpu", "tests/gpu", "-p", "no:cacheprovider"])
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = [line for line in proc.stdout.splitlines() if line.startswith("gpu tier: nothing ran on a GPU")]
    assert len(lines) == 1 and "needs a CUDA GPU" in lines[0], proc.stdout
    assert "Traceback" not in proc.stdout + proc.stderr


def test_gpu_smoke_script_without_a_gpu_is_one_line_and_exit_2():
    proc = _run(["bash", "scripts/gpu_smoke.sh"])
    assert proc.returncode == 2, proc.stdout + proc.stderr
    out = [line for line in (proc.stdout + proc.stderr).splitlines() if line.strip()]
    assert len(out) == 1 and out[0].startswith("gpu-smoke: no CUDA GPU visible") and "nothing ran" in out[0], out
