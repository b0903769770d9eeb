"""The dashboard (Streamlit AppTest, headless) over fixture runs of every kind, and run discovery."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import fixtures  # noqa: E402  (tests/dashboards/fixtures.py)

from collapse_probe.report import runs as rd  # noqa: E402

APP = Path(__file__).resolve().parents[2] / "collapse_probe" / "dashboard" / "app.py"


@pytest.fixture(scope="module")
def runs_root(tmp_path_factory) -> Path:
    """Finished runs of every kind (made by the real pipelines where they exist) plus half-written ones."""
    root = tmp_path_factory.mktemp("runs")
    cp = fixtures.write_crossplay_run(root)
    fixtures.write_gate_verdict(cp, root / "gate" / "verdict.json")
    # exact-text classes: the meaning partition's sentence encoder is the real-model tier's
    fixtures.write_audit_run(
        root, "audit_mode", "sim_audit", compare_vs=True, policy="pol_a", max_turns=3, partition="exact"
    )
    fixtures.write_audit_run(root, "audit_probe", "sim_div", samples=30, states=3, partition="exact")
    fixtures.write_train_run(root, "train_single", "single")
    fixtures.write_train_run(root, "train_vs", "vs")
    fixtures.write_lab_run(root, "lab_population", "population", steps=20)
    fixtures.write_half_written_runs(root / "live")
    return root


@pytest.fixture(scope="module")
def half_written_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("live")
    fixtures.write_half_written_runs(root)
    return root


def _app(root: Path):
    """Run the app once; the caller has pointed ``$COLLAPSE_PROBE_RUNS_DIR`` at ``root`` (monkeypatch)."""
    st_testing = pytest.importorskip("streamlit.testing.v1")
    assert os.environ["COLLAPSE_PROBE_RUNS_DIR"] == str(root)
    at = st_testing.AppTest.from_file(str(APP), default_timeout=60)
    at.run()
    return at


@pytest.fixture
def app(runs_root, monkeypatch):
    monkeypatch.setenv("COLLAPSE_PROBE_RUNS_DIR", str(runs_root))
    return _app(runs_root)


def _view(at, name: str):
    at.sidebar.radio(key="view").set_value(name).run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.warning, [w.value for w in at.warning]  # no run was misread as off-schema
    return at


def _plotly(at) -> list:
    return list(at.get("plotly_chart"))


def _figure(chart) -> dict:
    return json.loads(chart.proto.spec)


# ------------------------------------------------------------------------------------------------ views


def test_runs_view_lists_every_kind(app):
    assert not app.exception
    table = app.dataframe[0].value
    kinds = dict(zip(table["run"], table["kind"], strict=True))
    assert kinds["crossplay"] == "crossplay" and kinds["gate"] == "gate" and kinds["audit_mode"] == "audit"
    assert kinds["train_single"] == "train" and kinds["lab_population"] == "lab"
    status = dict(zip(table["run"], table["status"], strict=True))
    assert status["live/crossplay_resuming"] == "in progress" and status["crossplay"] == "complete"
    assert status["gate"] == "complete"


def _samples(run_dir: Path) -> dict[tuple[str, str], dict]:
    recs = [json.loads(line) for line in (run_dir / "samples.jsonl").read_text().splitlines()]
    return {(r["state_id"], r["mode"]): r for r in recs}


def test_simulator_view_draws_the_real_audit(app, runs_root):
    at = _view(app, "Simulator")
    assert [s.label for s in at.selectbox] == ["Audit run", "State"]
    assert at.selectbox(key="sim_run").value == "audit_mode [audit, complete]"  # on-policy, --compare-vs
    res = json.loads((runs_root / "audit_mode" / "results.json").read_text())
    assert any(res["verdict"] in i.value.replace("\\", "") for i in at.info)
    charts = [_figure(c) for c in _plotly(at)]
    assert len(charts) == 5  # collapse map, per state, by turn, direct vs VS, classes of the chosen state
    # the collapse map: one panel per mode, each row a state's class shares (largest first), rows summing to 1
    cmap = charts.pop(0)
    # per mode the ranked classes in blue, then the smaller classes together in grey (their own trace)
    assert [t["type"] for t in cmap["data"]] == ["heatmap"] * 4
    for ranked, tail in zip(cmap["data"][::2], cmap["data"][1::2], strict=True):
        assert tail["x0"] == len(ranked["x"]) and tail["colorscale"] != ranked["colorscale"]
        for row, rest in zip(ranked["z"], tail["z"], strict=True):
            assert abs(sum(row + rest) - 1) < 1e-9 and row == sorted(row, reverse=True)
    # ε per state: both sampling modes, the bias-aware values of results.json (as printed) in its state order
    per_state = {t["name"]: t for t in charts[0]["data"]}
    assert set(per_state) == {"direct: on_policy", "verbalized: on_policy", f"ε* = {res['epsilon_star']:g}"}
    assert per_state["direct: on_policy"]["x"] == [s["state_id"] for s in res["states"]]
    assert per_state["direct: on_policy"]["y"] == [s["collapse_error_estimate"] for s in res["states"]]
    assert per_state["verbalized: on_policy"]["y"] == [
        s["collapse_error_estimate"] for s in res["compare_vs"]["states"]
    ]
    # ε by turn along the rollouts and the direct-vs-VS summary come from the trajectory and compare_vs blocks
    assert charts[1]["data"][0]["y"] == [t["mean"] for t in res["trajectory"]["collapse_error_by_turn"]]
    # direct vs VS: the bars are the two estimates the printed difference is taken of
    bars = charts[2]["data"][0]
    d = res["compare_vs"]["difference_vs_minus_direct"]
    assert bars["y"] == [d["a_estimate"], d["b_estimate"]]
    assert abs(bars["y"][1] - bars["y"][0] - d["estimate"]) < 1e-9
    assert charts[2]["data"][2]["y"] == [d["estimate"]]
    assert "VS parse failures" in " ".join(a["text"] for a in charts[2]["layout"]["annotations"])


def test_simulator_view_state_classes_recounted_from_samples(app, runs_root):
    at = _view(app, "Simulator")
    samples = _samples(runs_root / "audit_mode")
    sid = at.selectbox(key="sim_state").value.split(" (")[0]
    tables = [d.value for d in at.dataframe if "class" in d.value.columns]
    assert len(tables) == 2  # direct and verbalized, side by side
    for table, mode in zip(tables, ("direct", "verbalized"), strict=True):
        rec = samples[(sid, mode)]
        assert table["count"].tolist() == rec["class_counts"] and table["class"].tolist() == rec["class_names"]
        assert table["count"].sum() == 12 and abs(table["share"].sum() - 1) < 1e-9
        for name, ex in zip(table["class"], table["examples"], strict=True):
            k = rec["class_names"].index(name)
            assert all(rec["labels"][i] == k for i, t in enumerate(rec["responses"]) if t in ex.split(" | "))
    hist = _figure(_plotly(at)[-1])  # horizontal bars: one panel per mode, counts on x
    assert [t["x"] for t in hist["data"]] == [samples[(sid, m)]["class_counts"] for m in ("direct", "verbalized")]
    assert any("Please donate" in m.value or "Kids need" in m.value for m in at.markdown)  # the state's context


def test_simulator_view_state_selection(app, runs_root):
    at = _view(app, "Simulator")
    at.selectbox(key="sim_run").set_value("audit_probe [audit, complete]").run()
    assert not at.exception and not at.warning
    assert len(_plotly(at)) == 3  # collapse map, per state and classes: no rollouts, no VS, no human reference
    options = at.selectbox(key="sim_state").options
    assert len(options) == 6  # opening and elicitation of 3 personas
    at.selectbox(key="sim_state").set_value(options[-1]).run()
    assert not at.exception
    table = next(d.value for d in at.dataframe if "class" in d.value.columns)
    sid = options[-1].split(" (")[0]
    assert table["count"].tolist() == _samples(runs_root / "audit_probe")[(sid, "direct")]["class_counts"]
    assert table["count"].sum() == 30


def test_simulator_view_human_reference(p4g_dir, tmp_path, monkeypatch):
    from collapse_probe.benchmarks.p4g import stance as p4g_stance

    # the rules stance reader: the default one embeds with the packaged encoder (the real-model tier's)
    monkeypatch.setattr(p4g_stance, "default_stance_reader", lambda: p4g_stance.StanceReader("rules"))
    run = fixtures.write_audit_run(
        tmp_path, "audit_human", "sim_mode", samples=20, states=3, human=p4g_dir, partition="exact"
    )
    res = json.loads((run / "results.json").read_text())
    monkeypatch.setenv("COLLAPSE_PROBE_RUNS_DIR", str(tmp_path))
    at = _view(_app(tmp_path), "Simulator")
    donations = res["human_reference"]["donations"]
    fig = next(f for f in map(_figure, _plotly(at)) if f["layout"]["title"]["text"].startswith("Donations"))
    assert [t["y"] for t in fig["data"]] == [donations["simulated_binned"], donations["human_binned"]]
    realism = next(d.value for d in at.dataframe if list(d.value.columns) == ["measure", "value", "95% CI"])
    row = realism.set_index("measure").loc["distinct-1 at the same states: simulator / human"]
    assert row["value"].endswith(f"/ {res['human_reference']['diversity']['distinct_1']['human']:.3f}")
    assert row["95% CI"].startswith("difference [")
    grounding = next(d.value for d in at.dataframe if "the human persuadee replied" in list(d.value.columns))
    assert len(grounding) == res["human_reference"]["grounding"]["n_states"]
    human = next(o for o in at.selectbox(key="sim_state").options if o.startswith("human:"))
    at.selectbox(key="sim_state").set_value(human).run()
    assert not at.exception
    reply = _samples(run)[(human.split(" (")[0], "direct")]["human_reply"]
    assert any("human persuadee replied" in m.value and reply[:10] in m.value.replace("\\", "") for m in at.markdown)


def test_crossplay_view_heatmap_transfer_and_gate(app):
    at = _view(app, "Cross-play")
    assert [s.label for s in at.selectbox] == ["Cross-play run"]
    charts = [_figure(c) for c in _plotly(at)]
    types = [f["data"][0]["type"] for f in charts]
    assert types[0] == "heatmap" and "bar" in types[1:]
    heat = charts[0]["data"][0]
    assert len(heat["z"]) == 2 and len(heat["z"][0]) == 2
    md = " ".join(m.value for m in at.markdown)
    assert "Gate verdicts" in md and "pass" in md


def test_crossplay_view_in_progress_run(app):
    at = _view(app, "Cross-play")
    at.selectbox(key="cp_run").set_value("live/crossplay_resuming [crossplay, in progress]").run()
    assert not at.exception
    assert any("in progress" in i.value for i in at.info)
    progress = at.dataframe[0].value
    assert progress["finished"].tolist() == [1]  # the torn second record is not counted


def test_training_view_overlays_runs(app):
    at = _view(app, "Training")
    chosen = at.multiselect(key="train_runs")
    labels = [o for o in chosen.options if not o.startswith("live/")]
    chosen.set_value(labels).run()
    assert not at.exception
    charts = [_figure(c) for c in _plotly(at)]
    assert len(charts) == 3  # no group of these runs had zero reward variance: a sentence, not an empty chart
    assert any("No rollout group had zero reward variance" in i.value for i in at.info)
    reward_traces = {t["name"] for t in charts[0]["data"]}
    assert {
        "train_single — train",
        "train_single — held-out",
        "train_vs — train",
        "lab_population — held-out",
    } <= reward_traces
    held = next(t for t in charts[0]["data"] if t["name"] == "train_single — held-out")
    assert held["x"] == [0, 10, 20, 30, 40, 50, 60]  # held-out only where the trainer evaluated
    assert any("bound checks" in m.value for m in at.markdown)


def test_runs_table_keeps_status_and_cost_in_view(app):
    """The long columns (run name capped, notes) do not push status and cost off to the right."""
    table = app.dataframe[0]
    columns = list(table.value.columns)
    assert columns.index("cost (USD)") < columns.index("modified") < columns.index("notes")
    assert columns.index("status") < columns.index("cost (USD)")
    widths = json.loads(table.proto.columns)
    assert widths["run"]["width"] <= 320 and widths["notes"]["width"] <= 420


def test_training_view_draws_runs_of_very_different_length_on_progress(tmp_path, monkeypatch):
    """A 2-step LLM run beside a 300-step lab run: drawn against the share of each run's steps, and
    the step axis on request."""
    fixtures.write_train_run(tmp_path, "train_short", "single", steps=2, eval_every=1)
    fixtures.write_lab_run(tmp_path, "lab_long", "single", steps=300)
    monkeypatch.setenv("COLLAPSE_PROBE_RUNS_DIR", str(tmp_path))
    at = _view(_app(tmp_path), "Training")
    chosen = at.multiselect(key="train_runs")
    chosen.set_value(list(chosen.options)).run()
    assert any("differ more than tenfold" in c.value for c in at.caption)
    reward = _figure(_plotly(at)[0])
    ends = {t["name"]: t["x"][-1] for t in reward["data"] if t["name"].endswith("— train")}
    assert ends == {"train_short — train": 1.0, "lab_long — train": 1.0}
    at.radio(key="train_axis").set_value("training step").run()
    reward = _figure(_plotly(at)[0])
    ends = {t["name"]: t["x"][-1] for t in reward["data"] if t["name"].endswith("— train")}
    assert ends == {"train_short — train": 2, "lab_long — train": 300}


def test_compare_view_two_audits(app):
    at = _view(app, "Compare")
    assert [s.label for s in at.selectbox] == ["Audit A", "Audit B"]
    charts = [_figure(c) for c in _plotly(at)]
    assert len(charts) == 3
    names = {t["name"] for t in charts[2]["data"]}
    assert names == {"audit_probe", "audit_mode"}
    assert charts[2]["layout"]["xaxis"]["title"]["text"].startswith("state quantile")  # no shared states


@pytest.mark.parametrize("view", ["Runs", "Simulator", "Cross-play", "Training", "Compare"])
def test_half_written_runs_do_not_crash(half_written_root, monkeypatch, view):
    monkeypatch.setenv("COLLAPSE_PROBE_RUNS_DIR", str(half_written_root))
    at = _app(half_written_root)
    at = _view(at, view)
    if view in ("Simulator", "Cross-play"):
        assert any("in progress" in i.value for i in at.info)
    if view == "Simulator":  # the states measured before the kill, the torn record left out
        recs = fixtures_records(half_written_root / "audit_running")
        (fig,) = [_figure(c) for c in _plotly(at)]
        ys = [y for t in fig["data"] for y in t["y"]]
        assert sorted(ys) == sorted(r["collapse_error_estimate"] for r in recs)
        assert len(recs) == 3
    if view == "Training":
        # the steps recorded before the torn line are drawn (zero-variance groups: a sentence when none had any)
        assert len(_plotly(at)) + sum("zero reward variance" in i.value for i in at.info) == 4


def test_off_schema_results_are_one_line_not_a_crash(tmp_path, monkeypatch):
    d = tmp_path / "odd"
    d.mkdir()
    (d / "results.json").write_text(json.dumps({"schema": "collapse-probe/audit/v1", "summary": [1], "states": "x"}))
    monkeypatch.setenv("COLLAPSE_PROBE_RUNS_DIR", str(tmp_path))
    at = _app(tmp_path)
    at.sidebar.radio(key="view").set_value("Simulator").run()
    assert not at.exception and not at.warning
    # the audit results model's first complaint, naming the file and the field
    assert [e.value for e in at.error] == ["odd: results.json field 'simulator' is missing"]


def test_missing_runs_dir_is_an_error_box(tmp_path, monkeypatch):
    monkeypatch.setenv("COLLAPSE_PROBE_RUNS_DIR", str(tmp_path / "nope"))
    at = _app(tmp_path / "nope")
    assert not at.exception
    assert "does not exist yet" in at.error[0].value and "collapse-probe dashboard PATH" in at.error[0].value


# ------------------------------------------------------------------------------------------------ discovery


def test_read_jsonl_skips_torn_tail_and_bad_lines(tmp_path):
    p = tmp_path / "m.jsonl"
    p.write_text('{"a": 1}\nnot json\n[1]\n{"a": 2}\n{"a": 3')
    read = rd.read_jsonl(p)
    assert [r["a"] for r in read.records] == [1, 2]
    assert read.torn_tail and read.bad_lines == [2, 3]
    assert rd.read_jsonl(tmp_path / "absent.jsonl").records == []


def test_peek_json_reports_partial_file(tmp_path):
    (tmp_path / "r.json").write_text('{"schema": "x", "cells": [')
    value, problem = rd.peek_json(tmp_path / "r.json")
    assert value is None and "not complete JSON" in problem
    assert rd.peek_json(tmp_path / "none.json") == (None, "none.json is missing")


def test_discovery_of_half_written_runs(half_written_root):
    runs = {r.name: r for r in rd.discover_runs(half_written_root)}
    assert set(runs) == {"audit_running", "crossplay_resuming", "train_running", "lab_starting", "foreign_results"}
    assert all(r.status == "in progress" for r in runs.values())
    assert runs["crossplay_resuming"].kind == "crossplay"
    assert any("not complete JSON" in p for p in runs["crossplay_resuming"].problems)
    assert any("empty" in p for p in runs["lab_starting"].problems)
    curve = rd.training_curve(runs["train_running"])
    assert [r["step"] for r in curve] == [0, 1, 2, 3]


def test_training_curve_from_lab_lists_and_repeated_steps(tmp_path):
    lab = rd.RunInfo(
        path=tmp_path, name="lab", kind="lab", config=None, files=(),
        results={"schema": "collapse-probe/lab/v1", "steps": [0, 5], "train_reward": [0.1, 0.2],
                 "zero_std_fraction": [None, 0.5], "method": "single", "bound_checks": {"tv_bound_holds": True}},
    )  # fmt: skip
    assert rd.training_curve(lab) == [
        {"step": 0, "train_reward": 0.1},
        {"step": 5, "train_reward": 0.2, "zero_std_fraction": 0.5},
    ]
    # a resumed trainer that redid step 1: the last record wins
    rows = [
        {"step": 0, "x": 1.0},
        {"step": 1, "x": 2.0},
        {"step": 1, "x": 3.0},
        {"step": "bad"},
        {"step": 2, "x": float("nan")},
    ]
    assert rd.training_curve_from_records(rows) == [{"step": 0, "x": 1.0}, {"step": 1, "x": 3.0}, {"step": 2}]


def test_discovery_does_not_follow_symlink_loops(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "config.json").write_text('{"kind": "audit"}')
    (tmp_path / "a" / "loop").symlink_to(tmp_path, target_is_directory=True)
    assert [r.name for r in rd.discover_runs(tmp_path)] == ["a"]


def test_discover_runs_rejects_a_file(tmp_path):
    from collapse_probe.errors import ConfigError

    (tmp_path / "f").write_text("x")
    with pytest.raises(ConfigError, match="not a directory"):
        rd.discover_runs(tmp_path / "f")


def test_cli_command_binds_localhost(tmp_path):
    from collapse_probe.cli import build_parser
    from collapse_probe.dashboard._serve import streamlit_command

    args = build_parser().parse_args(["dashboard", str(tmp_path)])
    assert args.host == "127.0.0.1" and args.port == 8501
    cmd = streamlit_command(args.runs_dir, args.port, args.host)
    assert cmd[1:4] == ["-m", "streamlit", "run"] and Path(cmd[4]) == APP
    assert cmd[cmd.index("--server.address") + 1] == "127.0.0.1"
    assert cmd[-2:] == ["--", str(tmp_path.resolve())]


def test_cli_rejects_missing_runs_dir(tmp_path, capsys):
    from collapse_probe.cli import main

    assert main(["dashboard", str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err
    assert "does not exist yet" in err and "made by the first run" in err and len(err.strip().splitlines()) == 1
    (tmp_path / "file").write_text("")
    assert main(["dashboard", str(tmp_path / "file")]) == 2
    assert "is not a directory" in capsys.readouterr().err


def fixtures_records(run_dir: Path) -> list[dict]:
    return rd.read_jsonl(run_dir / "samples.jsonl").records


def test_compare_audits_matches_shared_states(write_scripted):
    from collapse_probe.pipelines.audit import AuditConfig, run_audit
    from collapse_probe.report import audit_plots as ap

    a = run_audit(AuditConfig(sim=write_scripted([("[DONATE $1]", 0.9), ("No.", 0.1)], name="a.json"), samples=20,
                              n_boot=200, partition="exact"), None, progress=False, cache=False)  # fmt: skip
    b = run_audit(AuditConfig(sim=write_scripted([("[DONATE $1]", 0.5), ("No.", 0.5)], name="b.json"), samples=20,
                              n_boot=200, partition="exact"), None, progress=False, cache=False)  # fmt: skip
    fig = ap.compare_audits_figure({"a": a, "b": b})
    ta, tb = fig.data
    ids = sorted(
        (s["state_id"] for s in a["states"]),
        key=lambda i: ({s["state_id"]: s for s in a["states"]}[i]["collapse_error_estimate"], i),
    )
    assert list(ta.x) == list(tb.x) == ids  # the same probe states, matched
    by_id = {s["state_id"]: s["collapse_error_estimate"] for s in b["states"]}
    assert list(tb.y) == [by_id[i] for i in ids]
    assert all(s == "circle" for s in ta.marker.symbol)  # N = 20: not low confidence


def test_state_classes_of_a_real_record(write_scripted, tmp_path):
    from collapse_probe.pipelines.audit import AuditConfig, run_audit
    from collapse_probe.report import audit_plots as ap

    spec = write_scripted([("alpha", 0.5), ("beta", 0.3), ("gamma", 0.2)])
    run_audit(AuditConfig(sim=spec, samples=40, states=1, partition="exact", n_boot=200), tmp_path / "r",
              progress=False, cache=False)  # fmt: skip
    for rec in fixtures_records(tmp_path / "r"):
        classes = ap.state_classes(rec)
        assert [c["count"] for c in classes] == rec["class_counts"]
        assert [c["class"] for c in classes] == rec["class_names"]
        assert {c["examples"] for c in classes} == {"alpha", "beta", "gamma"}
        assert sum(c["share"] for c in classes) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="3 responses but 2 labels"):
        ap.state_classes({"state_id": "s", "responses": ["a", "b", "c"], "labels": [0, 0]})


def test_audit_records_last_record_of_a_state_wins():
    recs = [{"state_id": "s0", "mode": "direct", "x": 1}, {"state_id": "s0", "mode": "verbalized", "x": 2},
            {"state_id": "s0", "mode": "direct", "x": 3}, {"mode": "direct"}]  # fmt: skip
    assert rd.audit_records(recs) == {"direct": {"s0": recs[2]}, "verbalized": {"s0": recs[1]}}


def test_compare_view_of_two_identical_runs_draws_both(tmp_path, monkeypatch):
    """Two copies of one audit side by side: the same charts twice, each drawn (Streamlit derives an
    element's id from its content, so identical charts need keys of their own)."""
    import shutil

    root = tmp_path / "runs"
    fixtures.write_audit_run(root, "audit_a", "sim_div", samples=30, states=3, partition="exact")
    shutil.copytree(root / "audit_a", root / "audit_b")
    monkeypatch.setenv("COLLAPSE_PROBE_RUNS_DIR", str(root))
    at = _view(_app(root), "Compare")
    charts = [_figure(c) for c in _plotly(at)]
    assert len(charts) == 3
    assert charts[0] == charts[1]  # the two runs' per-state charts are the same chart, both on the page


def test_runs_table_shows_each_runs_verdict_and_whole_cells(app, runs_root):
    """A verdict column (the audit's answer, the gate's outcome), every cell as wide as its text, every
    run in view up to the height where the table scrolls."""
    from collapse_probe.dashboard.app import CAPPED, CELL_PAD_PX, CHAR_PX, ROW_PX, RUNS_SHOWN, runs_table_height

    table = app.dataframe[0]
    df = table.value
    verdicts = dict(zip(df["run"], df["verdict"], strict=True))
    answer = json.loads((runs_root / "audit_probe" / "results.json").read_text())["verdict_text"]["answer"]
    assert verdicts["audit_probe"] == answer and verdicts["gate"].endswith(": pass")
    assert verdicts["train_single"] == "—"
    assert list(df.columns).index("verdict") < list(df.columns).index("cost (USD)")
    widths = json.loads(table.proto.columns)
    for name in df.columns:
        longest = max(len(str(name)), *(len(str(v)) for v in df[name]))
        assert widths[name]["width"] >= min(CELL_PAD_PX + CHAR_PX * longest, CAPPED.get(name, 10**6)), name
    assert any(v == "not recorded" for v in df["model calls"])  # the cell that was cut ("not recorde")
    assert runs_table_height(len(df)) >= ROW_PX * (len(df) + 1)  # no run hidden below the table's edge
    assert runs_table_height(RUNS_SHOWN + 50) == runs_table_height(RUNS_SHOWN)  # more scroll inside it


def test_no_bare_string_is_written_onto_the_page():
    """Streamlit's magic writes every bare string statement of the app script onto the page: a
    docstring under a constant would appear above every view. Only the module docstring may be bare."""
    import ast

    tree = ast.parse(APP.read_text(encoding="utf-8"))
    bare = [n.lineno for n in tree.body[1:] if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)]
    assert not bare, f"bare strings at lines {bare} of {APP.name}"
