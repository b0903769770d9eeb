"""A non-editable install, used as a new user would: from an unrelated directory, ``play`` and ``audit``
run on the shipped personas and ``dashboard`` serves. Everything it needs must come from inside the package.

The slow test builds a fresh virtual environment from a copy of the tracked files (a clone), installs
``.[local,dashboard]`` into it without ``-e``, and drives the installed ``collapse-probe`` script. Set
``COLLAPSE_PROBE_INSTALL_VENV=/path/to/venv`` to check an environment prepared beforehand instead.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def test_shipped_files_are_found_through_the_package() -> None:
    from collapse_probe.benchmarks.p4g import load_personas
    from collapse_probe.benchmarks.tau2._data import demo_dir
    from collapse_probe.core._resources import dashboard_app, dataset_path

    assert dashboard_app().is_file() and dashboard_app().parent.parent.name == "collapse_probe"
    assert len(load_personas()) == 120
    assert (demo_dir() / "tasks.json").is_file()
    assert dataset_path("scripted", "p4g_donor_diverse.json").is_file()
    # nothing at the repository root may be installed as a top-level package: datasets/ (cards and builders,
    # not shipped) is no package, and the package finder of pyproject.toml takes collapse_probe* only
    from setuptools import find_packages
    from setuptools.config.pyprojecttoml import read_configuration

    find = read_configuration(REPO / "pyproject.toml", expand=False)["tool"]["setuptools"]["packages"]["find"]
    packages = find_packages(str(REPO), include=find["include"])
    assert packages and all(p.split(".")[0] == "collapse_probe" for p in packages), packages
    assert not list((REPO / "datasets").rglob("__init__.py"))
    # dashboards/ holds the Streamlit app; the package reaches it through its link collapse_probe/dashboard
    assert (REPO / "collapse_probe" / "dashboard").resolve() == (REPO / "dashboards").resolve()
    assert "collapse_probe.dashboard" in packages


def test_datasets_env_points_the_root_elsewhere(tmp_path, monkeypatch) -> None:
    from collapse_probe.benchmarks.p4g import load_personas

    (tmp_path / "p4g").mkdir()
    src = REPO / "collapse_probe" / "data" / "p4g" / "personas.jsonl"
    (tmp_path / "p4g" / "personas.jsonl").write_text(src.read_text(encoding="utf-8").splitlines()[0] + "\n")
    monkeypatch.setenv("COLLAPSE_PROBE_DATASETS", str(tmp_path))
    assert len(load_personas()) == 1


def _tracked_copy(dest: Path) -> Path:
    """The tracked files of the checkout (what a clone holds), without build outputs."""
    files = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout
    for name in files.decode().split("\0"):
        if name and (REPO / name).is_symlink():  # collapse_probe/dashboard -> ../dashboards, as a clone has it
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            os.symlink(os.readlink(REPO / name), dest / name)
        elif name and (REPO / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, dest / name)
    return dest


def _venv(tmp_path: Path) -> Path:
    prepared = os.environ.get("COLLAPSE_PROBE_INSTALL_VENV")
    if prepared:
        return Path(prepared)
    if shutil.which("git") is None:
        pytest.skip("git is needed to copy the tracked files")
    clone = _tracked_copy(tmp_path / "clone")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
    subprocess.run([*pip, "torch==2.13.0"], check=True, timeout=1200)
    subprocess.run([*pip, f"{clone}[local,dashboard]"], check=True, timeout=1200)
    return venv


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.slow
def test_non_editable_install_plays_and_serves(tmp_path) -> None:
    venv = _venv(tmp_path)
    exe = venv / "bin" / "collapse-probe"
    py = venv / "bin" / "python"
    work = tmp_path / "elsewhere"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "COLLAPSE_PROBE_DATASETS")}
    env["COLLAPSE_PROBE_CACHE"] = str(tmp_path / "cache.sqlite")

    site = subprocess.run(
        [str(py), "-c", "import collapse_probe, sys; print(collapse_probe.__file__)"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert "site-packages" in site, site
    site_packages = Path(site).parents[1]
    assert not (site_packages / "datasets").exists() and not (site_packages / "dashboards").exists()

    donor = Path(site).parent / "data" / "scripted" / "p4g_donor_diverse.json"
    policy = work / "persuader.json"
    policy.write_text(json.dumps({"responses": [{"text": "Would you give to Save the Children?", "p": 1.0}]}))
    run = subprocess.run(
        [
            str(exe),
            "play",
            "--policy",
            f"scripted:{policy}",
            "--sim",
            f"scripted:{donor}",
            "--tasks",
            "3",
            "--rollouts",
            "2",
            "--no-progress",
            "--out",
            "run",
        ],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    rows = [json.loads(line) for line in (work / "run" / "conversations.jsonl").read_text().splitlines()]
    assert len(rows) == 6
    shipped = {
        json.loads(line)["persona_id"] for line in (Path(site).parent / "data" / "p4g" / "personas.jsonl").open()
    }
    assert {r["task_id"] for r in rows} <= shipped

    audit = subprocess.run(
        [
            str(exe),
            "audit",
            "--sim",
            f"scripted:{donor}",
            "--states",
            "2",
            "--samples",
            "6",
            "--no-progress",
            "--out",
            "audit",
        ],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert audit.returncode == 0, audit.stderr
    assert json.loads((work / "audit" / "results.json").read_text())["summary"]["n_states"] > 0

    runs = work / "runs"
    shutil.copytree(work / "run", runs / "run")
    shutil.copytree(work / "audit", runs / "audit")
    port = _free_port()
    proc = subprocess.Popen(
        [str(exe), "dashboard", str(runs), "--port", str(port)],
        cwd=work,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        body, deadline = "", time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=5) as r:
                    body = r.read().decode()
                    break
            except OSError:
                if proc.poll() is not None:
                    break
                time.sleep(1)
        assert body == "ok", proc.stdout.read() if proc.poll() is not None else "dashboard did not answer"
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as r:
            assert r.status == 200 and "<html" in r.read().decode().lower()
        assert (work / "run" / "report.html").is_file()
    finally:
        proc.terminate()  # SIGTERM stops the Streamlit server it started as well
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            raise
    with pytest.raises(OSError):
        urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=5)
