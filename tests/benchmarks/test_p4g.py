"""P4G arena: donation parsing, reward, personas, official CSVs, turn taking and elicitation."""

from __future__ import annotations

import asyncio
import json

import pytest

from collapse_probe.benchmarks.p4g import (
    ELICITATION,
    PERSONA_FIELDS,
    P4GArena,
    donation_reward,
    load_official_p4g,
    load_personas,
    parse_donation,
)
from collapse_probe.cli import main
from collapse_probe.errors import ConfigError
from collapse_probe.models import Completion


@pytest.mark.parametrize(
    ("text", "amount"),
    [
        ("[DONATE $1]", 1.0),
        ("ok [DONATE $1.50] thanks", 1.5),
        ("[donate 1.5]", 1.5),
        ("[DONATE: $0]", 0.0),
        ("[DONATE $.50]", 0.5),
        ("[DONATE $2] no wait [DONATE $0.25]", 0.25),
        ("I will donate $1", None),
        ("", None),
    ],
)
def test_parse_donation_takes_the_last_marker(text, amount):
    assert parse_donation(text) == amount


def test_reward_is_capped_half_donation():
    assert donation_reward(1.0) == 0.5
    assert donation_reward(2.0) == 1.0
    assert donation_reward(5.0) == 1.0  # above the $2 task payment: capped
    assert donation_reward(None) == 0.0


def test_shipped_personas_have_all_survey_fields():
    personas = load_personas()
    assert len(personas) >= 100
    assert len({p["persona_id"] for p in personas}) == len(personas)
    for p in personas:
        assert set(PERSONA_FIELDS) <= set(p)


def test_malformed_persona_file_names_file_line_and_field(tmp_path):
    good = load_personas()[0]
    bad = dict(good)
    del bad["care"]
    path = tmp_path / "personas.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    with pytest.raises(ConfigError, match=r"line 2 .*'care'"):
        load_personas(path)
    path.write_text(json.dumps({**good, "open": "very"}) + "\n")
    with pytest.raises(ConfigError, match=r"'open' must be a number"):
        load_personas(path)
    path.write_text("{oops\n")
    with pytest.raises(ConfigError, match="line 1 is not valid JSON"):
        load_personas(path)


def test_official_csvs_give_personas_and_human_dialogues(p4g_dir):
    personas, dialogues = load_official_p4g(p4g_dir)
    assert len(dialogues) == 1017
    assert len(personas) > 950
    donations = [d.donation for d in dialogues if d.donation is not None]
    assert max(donations) <= 2.0
    zero_share = sum(1 for d in donations if d == 0) / len(donations)
    assert 0.40 < zero_share < 0.52  # about 46 % of persuadees give nothing
    d0 = dialogues[0]
    assert d0.turns[0][0] == "policy" and d0.turns[1][0] == "simulator"
    assert all(a[0] != b[0] for a, b in zip(d0.turns, d0.turns[1:], strict=False))  # speakers alternate


def test_official_loader_reports_missing_files(tmp_path):
    with pytest.raises(ConfigError, match="full_info.csv"):
        load_official_p4g(tmp_path)


def test_turn_taking_and_elicitation():
    arena = P4GArena(max_turns=2)
    [task] = arena.load_tasks(1)
    ep = arena.new_episode(task, 0)
    script = ["Hi, would you donate?", "Maybe.", "It helps children.", "I'll think about it."]
    for text in script:
        side = arena.next_side(ep)
        prompt = arena.prompt_for(ep, side)
        assert prompt.prompt.endswith("Persuader:" if side == "policy" else "Persuadee:")
        arena.apply(ep, side, Completion(text), text)
    assert arena.next_side(ep) == "simulator"  # no donation stated: the elicitation turn
    assert ep.messages[-1]["content"] == ELICITATION
    arena.apply(ep, "simulator", Completion(""), "Fine. [DONATE $0.50]")
    assert arena.next_side(ep) is None and ep.status == "done"
    [score] = asyncio.run(arena.score([ep]))
    assert score.reward == 0.25 and score.info["elicited"] and score.info["donation"] == 0.5


def test_play_cli_with_scripted_models(write_scripted, tmp_path, capsys):
    pol = write_scripted([("Please donate.", 1.0)], name="pol.json")
    sim = write_scripted([("[DONATE $2]", 0.5), ("[DONATE $0]", 0.5)], name="sim.json")
    rc = main(
        [
            "play",
            "--policy",
            pol,
            "--sim",
            sim,
            "--tasks",
            "3",
            "--rollouts",
            "4",
            "--out",
            str(tmp_path / "run"),
            "--no-progress",
        ]
    )
    out = capsys.readouterr().out
    assert rc == 0 and "mean reward" in out and "95% CI" in out
    recs = [json.loads(line) for line in (tmp_path / "run" / "conversations.jsonl").read_text().splitlines()]
    assert len(recs) == 12
    for r in recs:
        assert {"task_id", "rollout", "policy", "simulator", "messages", "reward", "status"} <= set(r)
        assert r["reward"] == (1.0 if "[DONATE $2]" in r["messages"][-1]["content"] else 0.0)


def test_play_cli_bad_flags_give_clear_errors(tmp_path, capsys):
    assert main(["play", "--sim", "nonexistent-model", "--out", str(tmp_path / "r")]) == 2
    assert "unknown model spec 'nonexistent-model'" in capsys.readouterr().err
    assert main(["play", "--tasks", "0", "--out", str(tmp_path / "r")]) == 2
    assert "--tasks must be an integer >= 1" in capsys.readouterr().err
