"""NO REWARD SIGNAL: the reward view's own outcome when the simulator (almost) never gives the closed answer
the reward reads, the verdict led by the view that measured something, and ``next:`` steps that run."""

from __future__ import annotations

import json
import re
import shlex

import pytest

from collapse_probe.cli import build_parser, main
from collapse_probe.pipelines.audit import AuditConfig
from collapse_probe.pipelines.audit._verdict import FORMAT_COMPLIANCE_LOW, audit_verdicts, verdict_parts

NEVER_STATES_A_DONATION = "scripted:p4g_donor_wording_varies"  # six replies that mean different things, no tag


def _summary(reward_estimate=0.0, reward_ci=(0.0, 0.093), given=0, read=40, mass=0.0004, meaning=0.898):
    return {
        "collapse_error": {"estimate": meaning, "ci95": [meaning - 0.13, min(meaning + 0.09, 1.0)]},
        "n_states": 4,
        "exact": {"closed_set_mass": mass} if mass is not None else None,
        "reward_view": {"estimate": reward_estimate, "ci95": list(reward_ci), "n_states": 2, "classes": "reward",
                        "states": "2 states the reward reads: 2 elicitation", "closed_answers_given": given,
                        "replies_read": read},
    }  # fmt: skip


def _parts(config, **kw):
    return verdict_parts(audit_verdicts(_summary(**kw), config, partition="embedding"), config)


def test_the_embedded_simulators_verdict_names_the_format_problem_and_leads_with_meaning():
    parts = _parts(AuditConfig())
    answer = parts["answer"]
    assert answer == (
        "NOT COLLAPSED: wording varies; NO REWARD SIGNAL where the reward looks: the simulator gives one of the "
        "closed answers in 0 of 40 sampled replies, model probability 0.04 %"
    )
    assert not answer.startswith("COLLAPSED") and "COLLAPSED where" not in answer
    assert parts["why"].startswith("why: meaning ε̂ 0.898")  # the view that measured something first
    assert (
        "format compliance, not collapse" in parts["why"] and f"below {FORMAT_COMPLIANCE_LOW * 100:g} %" in parts["why"]
    )
    # no advice the user has no option for (a stricter prompt), and no Verbalized Sampling for a non-collapse
    assert "prompt" not in parts["next"] and "--compare-vs" not in parts["next"]
    assert (
        "collapse-probe play --sim smollm2" in parts["next"]
        and "collapse-probe audit --sim gpt-5-mini" in parts["next"]
    )


def test_the_outcome_is_the_same_in_results_json_schema_and_typed_model():
    from collapse_probe.results import published_schema
    from collapse_probe.results._audit import VerdictView

    v = audit_verdicts(_summary(), AuditConfig(), partition="embedding")["reward"]
    assert v["label"] == "NO REWARD SIGNAL" and v["interval_label"] == "COLLAPSED"
    assert v["closed_answer_share"] == 0.0 and v["closed_answers_given"] == 0 and v["replies_read"] == 40
    assert "format, not collapse" in v["reason"]
    schema = published_schema("audit")
    view = schema["$defs"]["VerdictView"]["properties"]
    assert "NO REWARD SIGNAL" in json.dumps(view["label"]) and {"interval_label", "closed_answer_share"} <= set(view)
    typed = VerdictView.model_validate(v)  # the typed model reads the outcome (it refused the label before)
    assert typed.label == "NO REWARD SIGNAL" and typed.interval_label == "COLLAPSED" and typed.replies_read == 40


def test_a_meaning_view_that_is_not_measured_leaves_the_reward_outcome_as_the_answer():
    config = AuditConfig()
    verdicts = audit_verdicts(_summary(), config, partition="embedding")
    verdicts["meaning"].update(label="NOT MEASURED", estimate=None, ci95=None, reason="no sentence encoder")
    parts = verdict_parts(verdicts, config)
    assert (
        parts["answer"].startswith("NO REWARD SIGNAL where the reward looks")
        and "meaning view not measured" in (parts["answer"])
    )
    assert "collapse-probe play" in parts["next"]


def test_where_the_reward_does_read_answers_the_decision_is_unchanged():
    config = AuditConfig()
    for given in (2, 20, 40):  # 5 % and more of the replies give a closed answer
        assert audit_verdicts(_summary(given=given), config, partition="embedding")["reward"]["label"] == "COLLAPSED"
    assert _parts(config, given=40)["answer"] == "COLLAPSED where the reward looks, although wording varies"


def _commands(next_line: str) -> list[str]:
    return [m.strip() for m in re.findall(r"collapse-probe [^;]+", next_line.removeprefix("next: "))]


@pytest.mark.parametrize(
    ("config", "kw"),
    [
        (AuditConfig(), {}),  # NO REWARD SIGNAL
        (AuditConfig(), {"given": 40}),  # COLLAPSED where the reward looks: Verbalized Sampling beside it
        (AuditConfig(samples=10), {"given": 40}),  # LOW CONFIDENCE: more replies
        (AuditConfig(), {"given": 40, "reward_ci": (0.0, 0.3), "reward_estimate": 0.1}),  # INCONCLUSIVE: rerun
        (
            AuditConfig(sim="vs:smollm2", benchmark="tau2-demo", policy="smollm2", partition="exact", judge="smollm2"),
            {"given": 0},
        ),  # fmt: skip
        (AuditConfig(sim="scripted:p4g_donor_wording_varies", states=3), {"given": 1, "read": 60}),
        (
            AuditConfig(
                sim="scripted:clinic_patient_train",
                benchmark="scenarios",
                arena_options={"scenarios": "examples/clinic-intake.yaml"},
            ),
            {},
        ),  # fmt: skip
        (
            AuditConfig(
                sim="scripted:clinic_patient_train",
                benchmark="scenarios",
                arena_options={"scenarios": "examples/clinic-intake.yaml"},
            ),
            {"given": 40},
        ),  # fmt: skip
    ],
)
def test_every_next_step_is_a_command_the_real_parser_accepts(config, kw):
    parser = build_parser()
    nxt = _parts(config, **kw)["next"]
    commands = _commands(nxt)
    assert commands, nxt
    for cmd in commands:
        words = shlex.split(cmd)
        assert words[0] == "collapse-probe"
        assert not any(re.fullmatch(r"[A-Z_]{3,}(@[A-Z]+)?", w) for w in words), cmd  # no SPEC placeholders
        parser.parse_args(words[1:])  # argparse exits 2 on anything it cannot read
        for name, value in (config.arena_options or {}).items():  # the same states: the benchmark's options kept
            if "--benchmark" in words:
                assert f"--{name.replace('_', '-')}" in words and str(value) in words, cmd


@pytest.mark.realmodel
def test_a_real_audit_of_a_donor_that_never_states_a_donation_says_so_everywhere(tmp_path, capsys, monkeypatch):
    pytest.importorskip("jsonschema")
    import jsonschema

    from collapse_probe.integrations.interop._card import simulator_card
    from collapse_probe.results import published_schema

    monkeypatch.chdir(tmp_path)
    out = tmp_path / "audit"
    # one state the reward reads: its 19 hits of 19 at N = 20 do not decide (0.8^19 = 0.014 at ε*, above the
    # look's 0.006); the sequential audit draws to 40, where 39 of 39 do
    argv = ["audit", "--sim", NEVER_STATES_A_DONATION, "--states", "1", "--samples", "40", "--partition", "exact",
            "--no-progress", "--no-cache", "--out", str(out)]  # fmt: skip
    assert main(argv) == 0
    printed = capsys.readouterr().out
    res = json.loads((out / "results.json").read_text())
    jsonschema.Draft202012Validator(published_schema("audit")).validate(res)
    assert res["verdicts"]["reward"]["label"] == "NO REWARD SIGNAL"
    answer = res["verdict_text"]["answer"]
    assert "NO REWARD SIGNAL where the reward looks" in answer and answer in printed
    assert "NO REWARD SIGNAL (a closed answer in 0 of 40 sampled replies" in printed  # the table's reward row
    assert res["summary"]["sequential"]["views"]["reward"]["replies_per_state"] == 40
    # the report: the same answer, amber (not the green of NOT COLLAPSED), the same row
    report = (out / "report.html").read_text()
    assert answer.replace("'", "&#x27;") in report and "color:#9a6700" in report
    # the card carries the label and its evidence
    card = simulator_card([out])
    figures = {f["name"]: f.get("value") for f in card["figures"]}
    assert figures["reward view"] == "NO REWARD SIGNAL" and figures["reward view: interval label"] == "COLLAPSED"
    assert figures["reward view: closed answer share"] == 0.0
    # the first next: step runs as printed (offline: the local simulator and policy)
    play = next(c for c in _commands(res["verdict_text"]["next"]) if c.startswith("collapse-probe play"))
    assert main(shlex.split(play)[1:] + ["--no-progress"]) == 0
    assert "SIMULATOR:" in capsys.readouterr().out


def test_the_dashboard_shows_the_outcome(tmp_path, monkeypatch):
    st_testing = pytest.importorskip("streamlit.testing.v1")
    from pathlib import Path

    monkeypatch.chdir(tmp_path)
    out = tmp_path / "runs" / "audit-format"
    argv = ["audit", "--sim", NEVER_STATES_A_DONATION, "--states", "1", "--samples", "40", "--partition", "exact",
            "--no-progress", "--no-cache", "--out", str(out)]  # fmt: skip
    assert main(argv) == 0
    monkeypatch.setenv("COLLAPSE_PROBE_RUNS_DIR", str(tmp_path / "runs"))
    app = Path(__file__).resolve().parents[2] / "collapse_probe" / "dashboard" / "app.py"
    at = st_testing.AppTest.from_file(str(app), default_timeout=60)
    at.run()
    at.sidebar.radio(key="view").set_value("Simulator").run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("NO REWARD SIGNAL where the reward looks" in i.value.replace("\\", "") for i in at.info)
    assert any(m.delta == "NO REWARD SIGNAL" for m in at.metric)


def test_a_published_file_without_the_format_is_not_told_there_is_nothing_to_fix():
    config = AuditConfig()
    verdicts = audit_verdicts(_summary(), config, partition="embedding")
    nxt = verdict_parts(verdicts, config, published=True)["next"]
    assert "nothing to fix" not in nxt and "never answers in the reward's format" in nxt
    assert "collapse-probe play" not in nxt  # a published file's simulator cannot be asked again
