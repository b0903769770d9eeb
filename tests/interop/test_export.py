"""``export``: inspect eval logs read by inspect_ai's own reader, parquet tables equal to the JSONL records
field for field (pandas, DuckDB, polars), Hugging Face datasets saved to disk."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from collapse_probe.cli import main
from collapse_probe.errors import ConfigError
from collapse_probe.integrations.interop import export_run, read_table

pytest.importorskip("pyarrow")


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _current(records: list[dict], fields: tuple[str, ...]) -> list[dict]:
    last = {tuple(r.get(f) for f in fields): r for r in records}
    return list(last.values())


# ---------------------------------------------------------------------------------------------- inspect


def test_crossplay_as_inspect_log_one_sample_per_conversation_scores_equal_results(crossplay_run, tmp_path):
    pytest.importorskip("inspect_ai")
    from inspect_ai.log import read_eval_log

    out = tmp_path / "xp.eval"
    assert main(["export", str(crossplay_run), "--to", "inspect", "--out", str(out)]) == 0
    log = read_eval_log(str(out))
    convs = _current(_jsonl(crossplay_run / "conversations.jsonl"), ("key",))
    assert len(log.samples) == len(convs) == 24  # the retried conversations once each
    by_key = {c["key"]: c for c in convs}
    for s in log.samples:
        rec = by_key[s.metadata["key"]]
        assert s.scores["reward"].value == pytest.approx(rec["reward"])
        assert s.metadata["simulator"] == rec["simulator"] and s.epoch == rec["rollout"] + 1
        assert [m.text for m in s.messages] == [m["content"] for m in rec["messages"]]
        assert [m.role for m in s.messages] == [
            "assistant" if m["role"] == "policy" else "user" for m in rec["messages"]
        ]
    res = json.loads((crossplay_run / "results.json").read_text())
    scores = {sc.name: sc for sc in log.results.scores}
    for c in res["cells"]:
        sc = scores[f"reward[{c['policy']} vs {c['simulator']}]"]
        assert sc.metrics["mean_reward"].value == c["mean_reward"]
        assert [sc.metrics["ci95_lower"].value, sc.metrics["ci95_upper"].value] == c["ci95"]
        # and the samples themselves average to the cell's mean
        rewards = [s.scores["reward"].value for s in log.samples
                   if s.metadata["policy"] == c["policy"] and s.metadata["simulator"] == c["simulator"]]  # fmt: skip
        assert math.isclose(sum(rewards) / len(rewards), c["mean_reward"])
    for t in res["transfer"]:
        assert scores[f"transfer[{t['policy']}]"].metrics["transfer_ratio"].value == t["transfer_ratio"]
    from inspect_ai.analysis import samples_df

    df = samples_df(str(out))
    assert len(df) == 24 and "score_reward" in df.columns


def test_audit_as_inspect_log_one_sample_per_state_scores_equal_results(audit_run, tmp_path):
    pytest.importorskip("inspect_ai")
    from inspect_ai.log import read_eval_log

    out = tmp_path / "audit.eval"
    written = export_run(audit_run, "inspect", out)
    res = json.loads((audit_run / "results.json").read_text())
    log = read_eval_log(str(out))
    assert len(log.samples) == len(res["states"])
    rows = {r["state_id"]: r for r in res["states"]}
    for s in log.samples:
        row = rows[s.id]
        assert s.scores["collapse_error"].value == row["collapse_error"]
        assert s.scores["collapse_error_estimate"].value == row["collapse_error_estimate"]
        assert s.scores["entropy"].value == row["entropy"]
        assert s.metadata["class_counts"] == row["class_counts"] and s.metadata["kind"] == row["kind"]
        assert len(s.output.choices) == row["n"]
        if row.get("decision"):
            assert s.scores["decision_collapse_error"].value == row["decision"]["collapse_error"]
    ce = {sc.name: sc for sc in log.results.scores}["collapse_error"]
    assert ce.metrics["estimate"].value == res["summary"]["collapse_error"]["estimate"]
    assert [ce.metrics["ci95_lower"].value, ce.metrics["ci95_upper"].value] == res["summary"]["collapse_error"]["ci95"]
    # --compare-vs: the other mode's states in a log beside it
    assert [p.name for p in written] == ["audit.eval", "audit-verbalized.eval"]
    vs = read_eval_log(str(tmp_path / "audit-verbalized.eval"))
    assert len(vs.samples) == len(res["compare_vs"]["states"])
    assert {s.metadata["mode"] for s in vs.samples} == {"verbalized"}


def test_train_and_play_as_inspect_logs(train_run, tau2_play_run, tmp_path):
    pytest.importorskip("inspect_ai")
    from inspect_ai.log import read_eval_log

    export_run(train_run, "inspect", tmp_path / "train.json")  # inspect's JSON log format
    log = read_eval_log(str(tmp_path / "train.json"))
    rollouts = _jsonl(train_run / "rollouts.jsonl")
    assert len(log.samples) == len(rollouts)
    assert {s.id.split("|")[0] for s in log.samples} == {"step-1", "step-2"}
    final = {sc.name: sc for sc in log.results.scores}["final"]
    res = json.loads((train_run / "results.json").read_text())
    assert final.metrics["train_reward"].value == res["final"]["train_reward"]

    export_run(tau2_play_run, "inspect", tmp_path / "play.eval")
    log = read_eval_log(str(tmp_path / "play.eval"))
    assert len(log.samples) == 12
    summary = json.loads((tau2_play_run / "results.json").read_text())["summary"]
    assert {sc.name: sc for sc in log.results.scores}["reward"].metrics["mean_reward"].value == summary["mean_reward"]


def test_inspect_view_serves_the_exported_log(crossplay_run, tmp_path):
    """``inspect view`` (the real server) lists the log and returns its samples."""
    pytest.importorskip("inspect_ai")
    import socket
    import subprocess
    import sys
    import time
    import urllib.parse
    import urllib.request

    logs = tmp_path / "logs"
    logs.mkdir()
    export_run(crossplay_run, "inspect", logs / "xp.eval")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    inspect_cli = Path(sys.executable).parent / "inspect"  # inspect_ai's console script
    if not inspect_cli.exists():
        pytest.skip("the inspect command is not installed beside this Python")
    proc = subprocess.Popen([str(inspect_cli), "view", "start", "--log-dir", str(logs),
                             "--port", str(port), "--host", "127.0.0.1"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # fmt: skip
    try:
        body = None
        for _ in range(120):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/logs", timeout=2) as r:
                    body = r.read().decode()
                break
            except OSError:
                time.sleep(0.5)
        assert body is not None, proc.stderr.read().decode() if proc.poll() is not None else "no answer"
        (entry,) = json.loads(body)["files"]
        assert entry["name"].endswith("xp.eval") and entry["task"] == "collapse-probe/crossplay"
        quoted = urllib.parse.quote(entry["name"], safe="")
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/logs/{quoted}", timeout=30) as r:
            served = json.loads(r.read().decode())
        assert served["status"] == "success" and len(served["samples"]) == 24
    finally:
        proc.terminate()
        proc.wait(timeout=30)


# ---------------------------------------------------------------------------------------------- parquet


def _eq(a, b) -> bool:
    """Equal as JSON values (a float NaN read by pandas stands for null)."""
    if isinstance(a, float) and math.isnan(a):
        a = None
    if hasattr(a, "tolist"):
        a = a.tolist()
    return a == b


def _pandas_rows(path: Path) -> list[dict]:
    import pandas as pd
    import pyarrow.parquet as pq

    from collapse_probe.integrations.interop import json_columns

    df = pd.read_parquet(path)
    decode = set(json_columns(pq.read_schema(path)))
    rows = []
    for rec in df.to_dict(orient="records"):
        rows.append({k: (json.loads(v) if k in decode and isinstance(v, str) else v) for k, v in rec.items()})
    return rows


@pytest.mark.parametrize("kind", ["crossplay", "audit", "train", "play"])
def test_parquet_read_back_with_pandas_equals_the_jsonl_records_field_for_field(
    kind, crossplay_run, audit_run, train_run, tau2_play_run, tmp_path
):
    run = {"crossplay": crossplay_run, "audit": audit_run, "train": train_run, "play": tau2_play_run}[kind]
    out = tmp_path / "tables"
    export_run(run, "parquet", out)
    files = {"conversations": "rollouts.jsonl" if kind == "train" else "conversations.jsonl",
             "states": "samples.jsonl", "metrics": "metrics.jsonl"}  # fmt: skip
    checked = 0
    for table, jsonl in files.items():
        if not (run / jsonl).is_file():
            assert not (out / f"{table}.parquet").exists()
            continue
        records = _jsonl(run / jsonl)
        rows = _pandas_rows(out / f"{table}.parquet")
        assert len(rows) == len(records)
        for i, (row, rec) in enumerate(zip(rows, records, strict=True), start=1):
            for k, v in rec.items():
                assert _eq(row[k], v), (table, i, k, row[k], v)
            if table != "metrics":
                assert row["record_line"] == i
            checked += 1
        # the package's own reader gives the records back exactly
        exact = read_table(out / f"{table}.parquet")
        for row, rec in zip(exact, records, strict=True):
            assert {k: row[k] for k in rec} == rec
    assert checked
    schema = json.loads((out / "schema.json").read_text())
    assert "run" in schema and all(schema[t]["rows"] > 0 for t in schema)


def test_parquet_tables_for_sql_and_dataframes(crossplay_run, audit_run, tmp_path):
    duckdb = pytest.importorskip("duckdb")
    polars = pytest.importorskip("polars")
    export_run(crossplay_run, "parquet", tmp_path / "xp")
    export_run(audit_run, "parquet", tmp_path / "audit")
    res = json.loads((crossplay_run / "results.json").read_text())
    # the cell means recomputed by SQL over the current conversations equal results.json's cells
    got = duckdb.sql(
        f"select policy, simulator, avg(reward) as m, count(*) as n from '{tmp_path / 'xp' / 'conversations.parquet'}' "
        "where is_current and status != 'infra_error' group by policy, simulator"
    ).fetchall()
    cells = {(c["policy"], c["simulator"]): c for c in res["cells"]}
    assert len(got) == len(cells)
    for p, s, m, n in got:
        assert math.isclose(m, cells[(p, s)]["mean_reward"]) and n == cells[(p, s)]["n"]
    cells_df = polars.read_parquet(tmp_path / "xp" / "cells.parquet")
    assert cells_df["mean_reward"].to_list() == [c["mean_reward"] for c in res["cells"]]
    turns = polars.read_parquet(tmp_path / "xp" / "turns.parquet")
    convs = _jsonl(crossplay_run / "conversations.jsonl")
    assert turns.height == sum(len(c["messages"]) for c in convs)
    samples = polars.read_parquet(tmp_path / "audit" / "audit_samples.parquet")
    recs = _jsonl(audit_run / "samples.jsonl")
    assert samples.height == sum(len(r.get("responses") or []) for r in recs)
    first = recs[0]
    rows = samples.filter(polars.col("state_id") == first["state_id"]).filter(polars.col("mode") == first["mode"])
    assert rows["response"].to_list() == first["responses"]
    assert rows["class_name"].to_list() == [first["class_names"][lab] for lab in first["labels"]]


# ---------------------------------------------------------------------------------------------- hf datasets


def _hf_datasets():  # noqa: ANN202
    """The Hugging Face datasets package, or a skip (a bare ``datasets/`` directory, such as the checkout's
    dataset cards, imports as a namespace package and is no install of it)."""
    from collapse_probe.errors import MissingDependencyError, require

    try:
        return require("datasets", "export", "this test")
    except MissingDependencyError:
        pytest.skip("the Hugging Face datasets package is not installed (the export extra)")


def test_hf_dataset_saved_to_disk(crossplay_run, tmp_path):
    datasets = _hf_datasets()
    out = tmp_path / "hf"
    assert main(["export", str(crossplay_run), "--to", "hf", "--out", str(out), "--no-progress"]) == 0
    dd = datasets.load_from_disk(str(out))
    assert {"run", "conversations", "turns", "cells", "transfer", "policy_diversity"} <= set(dd)
    records = _jsonl(crossplay_run / "conversations.jsonl")
    assert dd["conversations"].num_rows == len(records)
    assert dd["conversations"][0]["key"] == records[0]["key"]
    assert json.loads(dd["conversations"][0]["messages"]) == records[0]["messages"]
    res = json.loads((crossplay_run / "results.json").read_text())
    assert dd["cells"]["mean_reward"] == [c["mean_reward"] for c in res["cells"]]


def test_push_to_hub_without_a_token_is_one_line_and_keeps_the_local_copy(crossplay_run, tmp_path, monkeypatch, capsys):
    _hf_datasets()
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))  # no stored login either
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    out = tmp_path / "hf"
    code = main(
        ["export", str(crossplay_run), "--to", "hf", "--out", str(out), "--push-to-hub", "me/x", "--no-progress"]
    )
    assert code == 2
    assert "no Hugging Face token" in capsys.readouterr().err
    assert (out / "dataset_dict.json").is_file()


# ---------------------------------------------------------------------------------------------- refusals


def test_exports_never_overwrite_and_need_a_finished_run(crossplay_run, tmp_path):
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "x").write_text("keep")
    with pytest.raises(ConfigError, match="not empty"):
        export_run(crossplay_run, "parquet", tmp_path / "busy")
    (tmp_path / "a.eval").write_text("keep")
    with pytest.raises(ConfigError, match="exists"):
        export_run(crossplay_run, "inspect", tmp_path / "a.eval")
    with pytest.raises(ConfigError, match=r"\.eval or \.json"):
        export_run(crossplay_run, "inspect", tmp_path / "a.txt")
    with pytest.raises(ConfigError, match="inside the run directory"):
        export_run(crossplay_run, "parquet", crossplay_run / "tables")
    with pytest.raises(ConfigError, match="--push-to-hub needs --to hf"):
        export_run(crossplay_run, "parquet", tmp_path / "p", push_to_hub="me/x")
    unfinished = tmp_path / "unfinished"
    unfinished.mkdir()
    (unfinished / "config.json").write_text(json.dumps({"kind": "play"}))
    (unfinished / "conversations.jsonl").write_text("")
    with pytest.raises(ConfigError, match="no results.json yet"):
        export_run(unfinished, "parquet", tmp_path / "q")
    lab = tmp_path / "lab"
    lab.mkdir()
    (lab / "config.json").write_text(json.dumps({"kind": "lab"}))
    with pytest.raises(ConfigError, match="holds a lab run"):
        export_run(lab, "parquet", tmp_path / "r")
    assert (tmp_path / "busy" / "x").read_text() == "keep" and (tmp_path / "a.eval").read_text() == "keep"


def test_every_known_column_is_documented():
    from collapse_probe.integrations.interop._tables import KNOWN

    doc = (Path(__file__).resolve().parents[2] / "docs" / "interop.md").read_text()
    for table, columns in KNOWN.items():
        (row,) = [line for line in doc.splitlines() if line.startswith(f"| `{table}` |")]
        missing = [c for c in columns if f"`{c}`" not in row]
        assert not missing, (table, missing)
