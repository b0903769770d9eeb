"""The arenas' ``reward_class`` hooks: what each benchmark's reward can see of one simulator turn."""

from __future__ import annotations

import pytest

from collapse_probe.benchmarks import Task
from collapse_probe.benchmarks.p4g import ELICITATION, P4GArena


@pytest.fixture
def p4g():
    return P4GArena(personas=[{"persona_id": "p"}], max_turns=3)


def _p4g_episode(arena, messages, elicited=False):
    ep = arena.new_episode(Task("p", {"persona": {}}), 0)
    ep.messages = messages
    ep.state.update(rounds=sum(m["role"] == "simulator" for m in messages), elicited=elicited)
    return ep


ASK = {"role": "policy", "content": ELICITATION, "meta": {"elicitation": True}}


def test_p4g_pays_by_the_last_tag_and_no_tag_at_the_donation_question_is_zero(p4g):
    ep = _p4g_episode(p4g, [{"role": "policy", "content": "Hi!"}, ASK], elicited=True)
    got = {t: p4g.reward_class(ep, t) for t in (
        "No thanks.", "Let me think about it.", "Who runs it?", "I'll give $1 for sure",  # no tag: $0
        "[DONATE $0]", "Sure [DONATE $1]", "[donate 1.00] happily", "[DONATE $2]", "[DONATE $5]",
    )}  # fmt: skip
    assert {got[t] for t in ("No thanks.", "Let me think about it.", "Who runs it?", "I'll give $1 for sure",
                             "[DONATE $0]")} == {"reward 0"}  # fmt: skip
    assert got["Sure [DONATE $1]"] == got["[donate 1.00] happily"] == "reward 0.5"
    assert got["[DONATE $2]"] == got["[DONATE $5]"] == "reward 1"  # min(donation / 2, 1)


def test_p4g_reads_the_last_round_and_not_earlier_ones(p4g):
    opening = _p4g_episode(p4g, [{"role": "policy", "content": "Hi!"}])
    assert p4g.reward_class(opening, "[DONATE $1]") is None  # a later tag can still replace it
    turns = [{"role": "policy", "content": "Hi!"}, {"role": "simulator", "content": "Hello. [DONATE $1]"},
             {"role": "policy", "content": "Thanks!"}, {"role": "simulator", "content": "Sure."},
             {"role": "policy", "content": "Anything else?"}]  # fmt: skip
    last = _p4g_episode(p4g, turns)
    assert p4g.reward_class(last, "No.") == "reward 0.5"  # the earlier tag still pays
    assert p4g.reward_class(last, "Fine, [DONATE $2]") == "reward 1"
    untagged = _p4g_episode(p4g, [{**m, "content": m["content"].replace(" [DONATE $1]", "")} for m in turns])
    assert p4g.reward_class(untagged, "No.") == "no donation stated yet"  # the donation question follows


def test_tau2_reads_ending_confirmation_and_the_gold_values_a_user_turn_states():
    from collapse_probe.benchmarks.tau2 import make_arena

    arena = make_arena("tau2-demo")
    task = arena.task("0")  # cancel order #W1000001 of Ada Moreno, zip 94110
    ep = arena.new_episode(task, 0)
    assert arena.reward_class(ep, "Hi, I want to cancel order #W1000001.") == "continues; states #W1000001"
    assert arena.reward_class(ep, "Hi, I'd like to cancel an order, W1000001.") == "continues; states #W1000001"
    assert arena.reward_class(ep, "I'm Ada Moreno, 94110.") == "continues; states 94110, Ada, Moreno"
    assert (
        arena.reward_class(ep, "Hello!") == arena.reward_class(ep, "Good morning.") == "continues; states no gold value"
    )
    assert arena.reward_class(ep, "Thanks, bye. ###STOP###").startswith("stops;")
    ep.messages.append({"role": "policy", "content": "I will cancel #W1000001. Shall I proceed (yes/no)?"})
    assert arena.reward_class(ep, "Yes, please go ahead.") == "continues; confirms; states no gold value"
    assert (
        arena.reward_class(ep, "Yep!") == arena.reward_class(ep, "yes") == "continues; confirms; states no gold value"
    )
    assert arena.reward_class(ep, "No, wait.") == "continues; declines; states no gold value"
    assert arena.reward_class(ep, "What will happen to my refund?") == "continues; neither; states no gold value"


def test_cooperbench_reads_what_a_partner_turn_does_to_its_patch():
    from collapse_probe.benchmarks.cooperbench import make_demo_arena

    arena = make_demo_arena()
    ep = None  # every partner turn is read; the class depends on the turn alone

    def bash(cmd):
        import json

        return json.dumps({"name": "bash", "arguments": {"command": cmd}})

    reads = [bash("ls -la"), bash("cat src/app.py | head -50"), bash("python -m pytest -q 2>&1 | tail"),
             '{"name": "send_message", "arguments": {"recipient": "agent1", "content": "I take app.py"}}',
             "I will look at the code first.", bash("grep -rn foo src > /dev/null")]  # fmt: skip
    assert {arena.reward_class(ep, t) for t in reads} == {"no change to the patch"}
    assert arena.reward_class(ep, bash("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")) == "submits"
    write = arena.reward_class(ep, bash("cat > src/app.py <<'EOF'\nif a > b:\n    pass\nEOF"))
    assert write.startswith("edits src/app.py (edit ")  # the ">" inside the heredoc is content, not a target
    other = arena.reward_class(ep, bash("cat > src/app.py <<'EOF'\nx = 1\nEOF"))
    assert other.startswith("edits src/app.py") and other != write  # two edits of one file: two patches
    assert arena.reward_class(ep, bash("sed -i 's/a/b/' src/app.py")).startswith("edits files")
