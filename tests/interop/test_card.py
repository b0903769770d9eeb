"""``card``: every figure on a simulator card is the value at its JSON pointer in the run's results.json."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from collapse_probe.cli import main
from collapse_probe.errors import ConfigError
from collapse_probe.integrations.interop import simulator_card
from collapse_probe.integrations.interop._card import resolve_pointer

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tau2_results import make_results  # noqa: E402


def _check_figures(card: dict) -> None:
    """Each figure equals results.json at its pointer, and its interval at its interval pointer."""
    for fig in card["figures"]:
        src = card["sources"][fig["source"]["run"]]
        res = json.loads((Path(src["run"]) / "results.json").read_text())
        assert resolve_pointer(res, fig["source"]["pointer"]) == fig["value"], fig
        if "ci95" in fig:
            assert resolve_pointer(res, fig["source"]["ci95_pointer"]) == fig["ci95"], fig


def test_card_of_an_audit_and_a_crossplay_run_equals_their_results(audit_run, crossplay_run, p4g_specs, tmp_path):
    out = tmp_path / "cards" / "donor.md"
    assert main(["card", str(audit_run), str(crossplay_run), "--out", str(out)]) == 0
    card = json.loads(out.with_suffix(".json").read_text())
    _check_figures(card)
    res = json.loads((audit_run / "results.json").read_text())
    cfg = json.loads((audit_run / "config.json").read_text())
    sim = p4g_specs["donor"]
    assert card["simulator"] == {"spec": sim, "mode": "direct", "fingerprint": cfg["fingerprints"][sim]}
    (audit,) = card["audits"]
    for key in ("collapse_error", "entropy", "decision_collapse_error", "n_states"):
        assert audit[key] == res["summary"][key]  # the headline blocks as results.json holds them
    assert audit["verdict"] == res["verdict"]
    names = {f["name"]: f for f in card["figures"]}
    head = names["meaning view ε̂ (mean over states)"]
    assert head["value"] == res["summary"]["collapse_error"]["estimate"]
    assert head["ci95"] == res["summary"]["collapse_error"]["ci95"]
    assert names["verdict"]["value"] == res["verdict"]
    assert (
        names["decision-label ε (the benchmark's labels, not the reward's classes)"]["value"]
        == res["summary"]["decision_collapse_error"]["estimate"]
    )
    assert names["entropy, nats (Chao–Wang–Jost)"]["ci95"] == res["summary"]["entropy"]["ci95"]
    xp = json.loads((crossplay_run / "results.json").read_text())
    (block,) = card["crossplay"]
    assert block["transfer"] == xp["transfer"] and block["cells"] == [c for c in xp["cells"] if c["simulator"] == sim]
    for t in xp["transfer"]:
        assert t["train_simulator"] == sim
        assert names[f"transfer ratio of {t['policy']} (trained on it)"]["value"] == t["transfer_ratio"]
    assert {f["section"] for f in card["figures"]} >= {"verdict", "states", "entropy", "transfer", "cost", "failures"}
    # the card's own fingerprint covers everything else, and each source run is pinned by its hash
    import hashlib

    body = {k: v for k, v in card.items() if k != "card_fingerprint"}
    digest = hashlib.sha256(json.dumps(body, sort_keys=True, ensure_ascii=False).encode()).hexdigest()
    assert card["card_fingerprint"] == digest
    assert card["sources"][0]["results_sha256"] == hashlib.sha256((audit_run / "results.json").read_bytes()).hexdigest()
    md = out.read_text()
    assert f"{res['summary']['collapse_error']['estimate']:.3f}" in md and "Not measured (audit with `--human" in md
    assert card["tool_version"] and re.search(r"collapse-probe \S+; card fingerprint", md)


def test_two_view_verdicts_are_read_when_the_audit_wrote_them(audit_run, tmp_path):
    import shutil

    run = tmp_path / "run"
    shutil.copytree(audit_run, run, ignore=shutil.ignore_patterns(".lock"))
    res = json.loads((run / "results.json").read_text())
    res["verdicts"] = {  # as the audit writes them: one block per view
        "meaning": {"label": "NOT COLLAPSED", "estimate": 0.41, "ci95": [0.3, 0.5], "n_states": 4,
                    "classes": "by meaning (embedding)", "over": "4 probe states", "reason": None},
        "reward": {"label": "COLLAPSED", "estimate": 0.05, "ci95": [0.0, 0.1], "n_states": 2,
                   "classes": "what the reward pays", "over": "2 probe states", "reason": None},
    }  # fmt: skip
    (run / "results.json").write_text(json.dumps(res))
    card = simulator_card([run])
    _check_figures(card)
    names = {f["name"]: f for f in card["figures"]}
    assert names["reward view"]["value"] == "COLLAPSED" and names["meaning view"]["value"] == "NOT COLLAPSED"
    assert names["reward view: n states"]["value"] == 2
    assert names["reward view ε̂"]["value"] == 0.05 and names["reward view ε̂"]["ci95"] == [0.0, 0.1]
    assert names["meaning view ε̂"]["ci95"] == [0.3, 0.5]


def test_card_of_a_published_audit_names_the_file_and_the_flags(tmp_path):
    from collapse_probe.pipelines.audit import AuditConfig, run_audit_from

    f = tmp_path / "results.json"
    make_results(f, {"1": [("a", 0.5), ("b", 0.5)], "2": [("c", 0.8), ("d", 0.2)]}, 6, seed=2, infra_failures=1,
                 reviewed_user_errors=2)  # fmt: skip
    run_audit_from(f, "tau2", AuditConfig(partition="exact"), tmp_path / "run", progress=False)
    card = simulator_card([tmp_path / "run"])
    _check_figures(card)
    names = {f["name"]: f["value"] for f in card["figures"]}
    assert card["simulator"]["fingerprint"].startswith("published:sha256:")
    assert names["published file: infra_failures"] == 1 and names["simulator errors flagged: flagged"] == 2
    assert "simulator share of reward variance" in names


def test_card_refuses_mixed_simulators_and_other_kinds(audit_run, train_run, tmp_path, p4g_specs):
    from collapse_probe.pipelines.audit import AuditConfig, run_audit

    other = tmp_path / "other"
    run_audit(AuditConfig(sim=p4g_specs["donor2"], states=1, samples=4, partition="label", n_boot=200), other,
              progress=False, cache=False)  # fmt: skip
    with pytest.raises(ConfigError, match="a card describes one"):
        simulator_card([audit_run, other])
    with pytest.raises(ConfigError, match="holds a train run"):
        simulator_card([train_run])
    with pytest.raises(ConfigError, match=r"\.md"):
        from collapse_probe.integrations.interop import write_card

        write_card(simulator_card([audit_run]), tmp_path / "card.txt")
