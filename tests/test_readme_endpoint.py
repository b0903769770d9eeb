"""The README's "Audit your own endpoint" commands run as written against a local OpenAI-compatible
server (the README block needs a server of your own, so the README test skips it): the URL
``http://127.0.0.1:8000/v1`` is the local server's, ``openai/`` reaches it through ``$OPENAI_BASE_URL``,
and the key each command sets is sent and kept out of every output."""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

import pytest

pytest.importorskip("openai")

sys.path.insert(0, str(Path(__file__).parent / "reliability"))
sys.path.insert(0, str(Path(__file__).parent))
from _fault_server import FaultServer  # noqa: E402
from readme_blocks import README, marked_blocks  # noqa: E402

from collapse_probe.cli import main  # noqa: E402
from collapse_probe.core._state import reset_caches  # noqa: E402

SMALL = ["--states", "2", "--samples", "3", "--partition", "exact", "--no-exact", "--no-progress"]


def endpoint_commands() -> list[tuple[dict[str, str], list[str]]]:
    """``(environment, argv)`` of each command of the README block under "### Audit your own endpoint"."""
    text = README.read_text(encoding="utf-8")
    heading = text.splitlines().index("### Audit your own endpoint") + 1
    block = next(b for b in marked_blocks() if b.line > heading)
    out = []
    for line in block.text.splitlines():
        argv = shlex.split(line, comments=True)
        env = {}
        while argv and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", argv[0]):
            name, _, value = argv.pop(0).partition("=")
            env[name] = value
        if argv:
            out.append((env, argv))
    return out


def test_the_readme_block_names_both_endpoint_kinds():
    commands = endpoint_commands()
    assert [argv[:2] for _, argv in commands] == [["collapse-probe", "audit"]] * 2
    assert {"COLLAPSE_PROBE_API_KEY", "OPENAI_API_KEY"} == {name for env, _ in commands for name in env}


@pytest.mark.parametrize("index", [0, 1])
def test_the_readme_endpoint_command_runs_against_a_local_server(index, tmp_path, monkeypatch, capsys):
    env, argv = endpoint_commands()[index]
    reset_caches()  # a fresh process: no backend built for an earlier test's server
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLLAPSE_PROBE_CACHE", str(tmp_path / "cache") + "/")
    for name in ("COLLAPSE_PROBE_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL", "COLLAPSE_PROBE_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with FaultServer(rate=0.0) as s:
        monkeypatch.setenv("OPENAI_BASE_URL", s.url)
        args = [a.replace("http://127.0.0.1:8000/v1", s.url) for a in argv[1:]]
        code = main([*args, *SMALL, "-M", "sim.timeout=5"])
    out = capsys.readouterr()
    assert code == 0, out.err[-2000:]
    out_dir = tmp_path / args[args.index("--out") + 1]
    assert (out_dir / "results.json").is_file() and s.counts["ok"] > 0
    [key] = env.values()
    assert s.authorizations and all(a == f"Bearer {key}" for a in s.authorizations)
    assert all(b["temperature"] == 1.0 for b in s.bodies)
    texts = [out.out + out.err] + [p.read_text(errors="replace") for p in tmp_path.rglob("*") if p.is_file()]
    assert not any(key in t for t in texts)
