"""``card --out`` and ``export --out`` against hostile paths and damaged runs, through the CLI: one line
naming the file (never the "rerun with -v" backstop), nothing of a user or a run replaced, and the
card's figures the ones the audit itself prints."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import threading
from pathlib import Path

import pytest

from collapse_probe.cli import main
from collapse_probe.errors import ConfigError


def _snapshot(*roots: Path) -> dict[str, str]:
    out = {}
    for root in roots:
        for p in sorted(root.rglob("*")):
            if p.is_symlink():
                out[str(p)] = "link:" + os.readlink(p)
            elif p.is_file():
                out[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
            else:
                out[str(p)] = "fifo" if p.is_fifo() else "dir"
    return out


def _one_line_error(capsys, code: int) -> str:
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert "rerun with -v" not in err and "Traceback" not in err, err
    assert len(err.splitlines()) == 1, err
    return err


@pytest.fixture
def audit_copy(audit_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(audit_run, run)
    return run


@pytest.fixture
def crossplay_copy(crossplay_run, tmp_path):
    run = tmp_path / "xp"
    shutil.copytree(crossplay_run, run)
    return run


def _card_cases(tmp: Path, run: Path) -> dict[str, str]:
    (tmp / "README.md").write_text("# my project\n")
    (tmp / "package.json").write_text('{"name": "mine"}\n')
    (tmp / "t.txt").write_text("target\n")
    (tmp / "link.md").symlink_to(tmp / "t.txt")
    os.mkfifo(tmp / "fifo.md")
    (tmp / "f").write_text("a file\n")
    (tmp / "cards").mkdir()
    (tmp / "cards" / "card.json").mkdir()
    return {
        "results.md in the run": str(run / "results.md"),
        "config.md in the run": str(run / "config.md"),
        "README.md": str(tmp / "README.md"),
        "package.md beside package.json": str(tmp / "package.md"),
        "symlink": str(tmp / "link.md"),
        "fifo": str(tmp / "fifo.md"),
        "under a file": str(tmp / "f" / "card.md"),
        "in /proc": "/proc/self/card.md",
        "name over 255 bytes": str(tmp / ("c" * 300 + ".md")),
        "directory named card.json": str(tmp / "cards" / "card.md"),
    }


@pytest.mark.parametrize(
    "case",
    ["results.md in the run", "config.md in the run", "README.md", "package.md beside package.json", "symlink",
     "fifo", "under a file", "in /proc", "name over 255 bytes", "directory named card.json"],
)  # fmt: skip
def test_card_out_that_would_overwrite_or_hang_is_one_line(audit_copy, tmp_path, capsys, case):
    out = _card_cases(tmp_path, audit_copy)[case]
    before = _snapshot(tmp_path)
    err = _one_line_error(capsys, main(["card", str(audit_copy), "--out", out]))
    assert "--out" in err
    assert _snapshot(tmp_path) == before


def test_export_inspect_never_overwrites_the_twin_and_six_exports_give_one_winner(audit_copy, tmp_path, capsys):
    pytest.importorskip("inspect_ai")
    from collapse_probe.integrations.interop import export_run

    twin = tmp_path / "x-verbalized.eval"
    twin.write_text("someone else's log")
    assert _one_line_error(
        capsys, main(["export", str(audit_copy), "--to", "inspect", "--out", str(tmp_path / "x.eval")])
    )
    assert twin.read_text() == "someone else's log" and not (tmp_path / "x.eval").exists()

    out = tmp_path / "race" / "y.eval"
    outcomes: list[str] = []
    barrier = threading.Barrier(6)

    def one() -> None:
        barrier.wait()
        try:
            export_run(audit_copy, "inspect", out)
            outcomes.append("won")
        except ConfigError as exc:
            outcomes.append(str(exc))

    threads = [threading.Thread(target=one) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert outcomes.count("won") == 1, outcomes
    assert all("exists" in o for o in outcomes if o != "won"), outcomes
    assert sorted(p.name for p in out.parent.iterdir()) == ["y-verbalized.eval", "y.eval"]


def _mutate_lines(path: Path, edit) -> None:
    lines = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    path.write_text("".join(json.dumps(r) + "\n" for r in edit(lines)))


@pytest.mark.parametrize(
    ("damage", "match"),
    [
        ("no samples.jsonl", "samples.jsonl is missing"),
        ("no results.json", "no results.json yet"),
        ("samples cut short", "incomplete run"),
        ("results field of the wrong type", r"field summary\.n_states is 'four'"),
        ("a sample with a wrong type", r"samples.jsonl: line 1: field 'n'"),
        ("a state recorded twice", "lines 1 and"),
    ],
)
def test_a_damaged_audit_is_refused_naming_the_file_line_and_field(audit_copy, tmp_path, capsys, damage, match):
    s = audit_copy / "samples.jsonl"
    if damage == "no samples.jsonl":
        s.unlink()
    elif damage == "no results.json":
        (audit_copy / "results.json").unlink()
    elif damage == "samples cut short":
        _mutate_lines(s, lambda rs: rs[:1])
    elif damage == "results field of the wrong type":
        res = json.loads((audit_copy / "results.json").read_text())
        res["summary"]["n_states"] = "four"
        (audit_copy / "results.json").write_text(json.dumps(res))
    elif damage == "a sample with a wrong type":
        _mutate_lines(s, lambda rs: [{**rs[0], "n": "20"}, *rs[1:]])
    else:
        _mutate_lines(s, lambda rs: [rs[0], rs[0], *rs[1:]])
    for cmd in (["export", str(audit_copy), "--to", "parquet", "--out", str(tmp_path / "tables")],
                ["card", str(audit_copy), "--out", str(tmp_path / "card.md")]):  # fmt: skip
        if cmd[0] == "export":
            pytest.importorskip("pyarrow")
        elif damage not in ("no results.json", "results field of the wrong type"):
            continue  # a card reads results.json only
        err = _one_line_error(capsys, main(cmd))
        assert re.search(match, err), err
    assert not (tmp_path / "tables").exists() and not (tmp_path / "card.md").exists()


@pytest.mark.parametrize(
    ("damage", "match"),
    [
        ("records without key", r"conversations.jsonl: line 1: field 'key'"),
        ("a NaN reward", r"field 'reward': expected a finite number or null"),
        ("a finished conversation twice", "recorded twice|both record key"),
    ],
)
def test_damaged_conversation_records_are_named_not_collapsed(crossplay_copy, tmp_path, capsys, damage, match):
    pytest.importorskip("pyarrow")
    c = crossplay_copy / "conversations.jsonl"
    if damage == "records without key":
        _mutate_lines(c, lambda rs: [{k: v for k, v in r.items() if k != "key"} for r in rs])
    elif damage == "a NaN reward":
        text = c.read_text().splitlines()
        i = next(i for i, x in enumerate(text) if '"reward": 1' in x or '"reward": 0' in x)
        text[i] = re.sub(r'"reward": [0-9.]+', '"reward": NaN', text[i])
        c.write_text("\n".join(text) + "\n")
    else:
        done = [x for x in c.read_text().splitlines() if '"status": "done"' in x]
        c.write_text(c.read_text() + done[0] + "\n")
    err = _one_line_error(
        capsys, main(["export", str(crossplay_copy), "--to", "parquet", "--out", str(tmp_path / "t")])
    )
    assert re.search(match, err), err


def _terminal_pairs(text: str) -> list[tuple[str, str]]:
    pairs = []
    for line in text.splitlines():
        m = re.match(r"^(\s*\S.*?)\s{2,}(\S.*)$", line)
        if m:
            pairs.append((m.group(1).strip(), m.group(2)))
    return pairs


@pytest.mark.parametrize("simulator", ["nearly distinct replies", "closed answers and chatter"])
def test_card_figures_are_the_figures_the_audit_prints(tmp_path, monkeypatch, capsys, simulator):
    """A real audit run through the CLI, then its card: every figure the terminal shows for the
    effective modes, the reward view and the exact closed-set scores is the card's, to the digits
    printed (the card once showed exp(H) where the audit said "at least 20.0 (lower bound only)")."""
    monkeypatch.chdir(tmp_path)
    if simulator == "nearly distinct replies":
        responses = [{"text": f"I might give [DONATE ${i % 3}], reply {i}", "p": 1 / 200} for i in range(200)]
    else:
        responses = [{"text": "[DONATE $0]", "p": 0.3}, {"text": "[DONATE $1]", "p": 0.2}] + [
            {"text": f"Maybe something, reply {i}", "p": 0.5 / 60} for i in range(60)
        ]
    Path("sim.json").write_text(json.dumps({"responses": responses}))
    assert main(["audit", "--sim", "scripted:sim.json", "--states", "2", "--samples", "20", "--partition", "exact",
                 "--out", "run", "--no-progress"]) == 0  # fmt: skip
    pairs = _terminal_pairs(capsys.readouterr().out)
    rows = dict(reversed(pairs))  # the first row of each name
    assert main(["card", "run", "--out", "card.md"]) == 0
    card = json.loads(Path("card.json").read_text())
    figs = {f["name"]: f for f in card["figures"]}
    res = json.loads(Path("run/results.json").read_text())

    em = rows["effective modes exp(H)"]
    if "lower bound only" in em:
        assert simulator == "nearly distinct replies"
        fig = figs["effective modes exp(H): at least"]
        assert em.startswith(f"at least {fig['value']:.1f}") and "lower bound only" in fig["note"]
        assert "effective modes exp(H)" not in figs  # the unbounded exp(H) is not shown as measured
    else:
        assert em.startswith(f"{figs['effective modes exp(H)']['value']:.2f}")

    reward_line = next(v for k, v in pairs if k == "collapse error ε̂ (mean)" and " over " in v)
    rv = figs["reward view ε̂"]
    assert reward_line.startswith(f"{rv['value']:.3f} [{rv['ci95'][0]:.3f}, {rv['ci95'][1]:.3f}]")
    assert rows["reward view"].startswith(figs["reward view: classes"]["value"][:40])

    exact = rows.get("exact closed-set scores")
    if exact is not None:
        mass = figs["exact: P(the whole reply is a closed answer), format compliance"]["value"]
        assert f"closed answers) {mass:.4f}" in exact
        if "given one of them" in exact:
            eps = figs["exact: ε of the answer given a closed answer"]["value"]
            assert exact.endswith(f"given one of them {eps:.3f}")
    assert "exact ε (closed set)" not in figs  # the per-state mean the audit never prints
    d = res["summary"].get("decision_collapse_error")
    if d:
        fig = figs["decision-label ε (the benchmark's labels, not the reward's classes)"]
        assert fig["section"] == "views" and fig["value"] == d["estimate"]  # never labelled the reward view
