"""Installed distributions whose entry points are broken (raise on import, a syntax error, endless
recursion, ``sys.exit(7)``, sleep on import, raise in ``build`` or ``partition``): each gives one line
naming the distribution, the entry point and its group, and ``--help`` still works.

The distribution is built and installed with pip (offline, no build isolation) onto a ``--target``
directory that only the subprocesses see, as ``tests/test_plugin_package.py`` does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "reliability"))
from hostile_cases import install_hostile_plugins  # noqa: E402

BACKSTOP = "rerun with -v for the traceback"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    target = tmp_path_factory.mktemp("site")
    try:
        install_hostile_plugins(target)
    except subprocess.CalledProcessError as exc:
        pytest.skip(f"cannot build a local distribution here: {exc.stderr!r:.200}")
    return target


def _cli(site: Path, tmp_path: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("COLLAPSE_PROBE_")}
    env.update(PYTHONPATH=os.pathsep.join([str(site), str(REPO)]), COLLAPSE_PROBE_PLUGIN_TIMEOUT="2")
    (tmp_path / "donor.json").write_text(json.dumps({"responses": [{"text": "Sure [DONATE $1]", "p": 0.5},
                                                                   {"text": "No [DONATE $0]", "p": 0.5}]}))  # fmt: skip
    return subprocess.run([sys.executable, "-m", "collapse_probe.cli", *args], capture_output=True, text=True,
                          cwd=tmp_path, env=env, timeout=timeout)  # fmt: skip


def _one_line(proc: subprocess.CompletedProcess, *names: str) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr and BACKSTOP not in proc.stderr, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if "error:" in line]
    assert len(lines) == 1, proc.stderr
    for n in names:
        assert n in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize(
    ("entry", "why"),
    [
        ("raises-import", "RuntimeError: plugin exploded on import"),
        ("syntax-error", "SyntaxError"),
        ("recursion", "RecursionError"),
        ("exits", "it called sys.exit(7)"),
        ("sleeps", "did not load within 2 s"),
    ],
)
def test_an_entry_point_that_cannot_load_is_one_line_and_help_still_works(site, tmp_path, entry, why):
    run = _cli(site, tmp_path, "audit", "--benchmark", entry, "--sim", "scripted:donor.json", "--out", "o")
    _one_line(run, f"entry point {entry!r}", "collapse_probe.benchmarks", "cp-hostile-plugins 0.1", why)
    helped = _cli(site, tmp_path, "audit", "--benchmark", entry, "--help")
    assert helped.returncode == 0 and "--from" in helped.stdout, helped.stderr


def test_help_works_with_broken_plugins_installed(site, tmp_path):
    for args in (["--help"], ["audit", "--help"], ["play", "--help"]):
        proc = _cli(site, tmp_path, *args)
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr


def test_a_plugin_raising_in_build_or_partition_is_named(site, tmp_path):
    build = _cli(site, tmp_path, "audit", "--benchmark", "build-raises", "--sim", "scripted:donor.json", "--out", "o")
    _one_line(build, "benchmark 'build-raises'", "cp-hostile-plugins", "build failed: RuntimeError: cannot build")
    part = _cli(site, tmp_path, "audit", "--sim", "scripted:donor.json", "--partition", "raising", "--states", "1",
                "--samples", "4", "--no-cache", "--no-progress", "--out", "p")  # fmt: skip
    _one_line(part, "partitioner 'raising'", "cp-hostile-plugins", "partition failed: RuntimeError: partition exploded")


def test_plugin_timeout_variable_is_checked(monkeypatch):
    from collapse_probe.core._plugins import PLUGIN_TIMEOUT_S, plugin_timeout
    from collapse_probe.errors import ConfigError

    monkeypatch.delenv("COLLAPSE_PROBE_PLUGIN_TIMEOUT", raising=False)
    assert plugin_timeout() == PLUGIN_TIMEOUT_S
    for bad in ("soon", "0", "-1", "nan", "inf"):
        monkeypatch.setenv("COLLAPSE_PROBE_PLUGIN_TIMEOUT", bad)
        with pytest.raises(ConfigError, match="COLLAPSE_PROBE_PLUGIN_TIMEOUT: expected a positive number"):
            plugin_timeout()
