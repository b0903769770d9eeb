"""``--log-to``: W&B (offline files), MLflow (a local file store) and TensorBoard (an event directory) hold
the same figures as results.json, read back from what each tracker wrote."""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path

import pytest

from collapse_probe.cli import main
from collapse_probe.integrations.interop import log_run, run_figures
from collapse_probe.integrations.interop._trackers import step_figures

FAKE_KEY = "sk-test-FAKEFAKEFAKE1234567890"


def _wandb_records(f: Path) -> list[bytes]:
    """The records of a ``run-*.wandb`` file: LevelDB-log chunks (32 KiB blocks, 7-byte headers) after
    wandb's 7-byte file header."""
    data, pos, block, buf, raw = f.read_bytes(), 7, 32768, b"", []
    while pos + 7 <= len(data):
        left = block - pos % block
        if left < 7:
            pos += left
            continue
        _, length, kind = struct.unpack("<IHB", data[pos : pos + 7])
        if length == 0 and kind == 0:
            pos += left
            continue
        chunk, pos = data[pos + 7 : pos + 7 + length], pos + 7 + length
        if kind == 1:
            raw.append(chunk)
        elif kind == 2:
            buf = chunk
        elif kind == 3:
            buf += chunk
        elif kind == 4:
            raw.append(buf + chunk)
    return raw


def read_wandb_offline(run_dir: Path) -> tuple[dict[str, float], dict[int, dict[str, float]]]:
    """Summary and history of an offline W&B run, read from its ``run-*.wandb`` file (wandb's protobuf
    ``Record``s). wandb's service writes the file after ``finish()`` returns: wait for the exit record."""
    import time

    from google.protobuf.message import DecodeError
    from wandb.proto import wandb_internal_pb2 as pb

    (f,) = list(run_dir.glob("run-*.wandb"))
    records: list = []
    for _ in range(240):
        records = []
        try:
            for r in _wandb_records(f):
                rec = pb.Record()
                rec.ParseFromString(r)
                records.append(rec)
        except DecodeError:  # the service is still writing the last record: read the file again
            records = []
        if any(rec.WhichOneof("record_type") == "exit" for rec in records):
            break
        time.sleep(0.25)
    summary: dict[str, float] = {}
    history: dict[int, dict[str, float]] = {}
    for rec in records:
        kind = rec.WhichOneof("record_type")
        if kind == "summary":
            for item in rec.summary.update:
                summary[item.key or "/".join(item.nested_key)] = json.loads(item.value_json)
        elif kind == "history":
            row = {item.key or "/".join(item.nested_key): json.loads(item.value_json) for item in rec.history.item}
            history[int(row["_step"])] = row
    return summary, history


def _numbers(d: dict) -> dict[str, float]:
    return {k: v for k, v in d.items() if not k.startswith("_") and isinstance(v, int | float)}


def test_figures_are_results_json_numbers_by_path(crossplay_run):
    res = json.loads((crossplay_run / "results.json").read_text())
    fig = run_figures(res)
    c = res["cells"][0]
    name = f"cells/{c['policy']} vs {c['simulator']}/mean_reward".replace("/tmp", "_tmp")
    assert any(k.endswith("/mean_reward") and v == c["mean_reward"] for k, v in fig.items())
    assert all(not k.startswith(("config/", "states/")) for k in fig)
    assert all(math.isfinite(v) for v in fig.values()) and name


def test_wandb_offline_holds_the_results_figures(crossplay_run, tmp_path, monkeypatch):
    pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path))
    monkeypatch.setenv("WANDB_API_KEY", FAKE_KEY)
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    where = log_run(crossplay_run, "wandb")
    run_dir = Path(where["wandb"]).parent
    summary, _ = read_wandb_offline(run_dir)
    expected = run_figures(json.loads((crossplay_run / "results.json").read_text()))
    assert _numbers(summary) == expected
    for f in run_dir.rglob("*"):  # no secret of the environment in anything W&B wrote
        if f.is_file():
            assert FAKE_KEY.encode() not in f.read_bytes(), f


def test_wandb_offline_train_history_per_step(train_run, tmp_path, monkeypatch):
    pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path))
    where = log_run(train_run, "wandb", project="cp-test")
    summary, history = read_wandb_offline(Path(where["wandb"]).parent)
    metrics = [json.loads(line) for line in (train_run / "metrics.jsonl").read_text().splitlines()]
    assert sorted(history) == [m["step"] for m in metrics]
    for step, values in step_figures(metrics):
        assert _numbers(history[step]) == values
    assert (
        summary["final/train_reward"] == json.loads((train_run / "results.json").read_text())["final"]["train_reward"]
    )


def test_mlflow_file_store_holds_the_results_figures(audit_run, train_run, tmp_path, monkeypatch):
    mlflow = pytest.importorskip("mlflow")
    from mlflow.tracking import MlflowClient

    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # MLflow 3 keeps the file store behind this switch

    uri = f"file:{tmp_path / 'mlruns'}"
    mlflow.set_tracking_uri(uri)
    try:
        log_run(audit_run, "mlflow", project="cp-audit")
        log_run(train_run, "mlflow", project="cp-train")
        client = MlflowClient(tracking_uri=uri)
        (run,) = client.search_runs([client.get_experiment_by_name("cp-audit").experiment_id])
        expected = run_figures(json.loads((audit_run / "results.json").read_text()))
        assert run.data.metrics == expected
        cfg = json.loads((audit_run / "config.json").read_text())
        assert run.data.params["sim"] == cfg["sim"] and run.data.tags["collapse_probe.kind"] == "audit"
        assert {a.path for a in client.list_artifacts(run.info.run_id)} >= {
            "results.json",
            "config.json",
            "report.html",
        }
        (trun,) = client.search_runs([client.get_experiment_by_name("cp-train").experiment_id])
        metrics = [json.loads(line) for line in (train_run / "metrics.jsonl").read_text().splitlines()]
        hist = client.get_metric_history(trun.info.run_id, "train_reward")
        assert [(h.step, h.value) for h in hist] == [(m["step"], m["train_reward"]) for m in metrics]
    finally:
        mlflow.set_tracking_uri(None)


def test_tensorboard_event_files_hold_the_results_figures(crossplay_run, tmp_path):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    log_run(crossplay_run, "tensorboard", tensorboard_dir=tmp_path / "tb")
    acc = EventAccumulator(str(tmp_path / "tb"), size_guidance={"scalars": 0})
    acc.Reload()
    expected = run_figures(json.loads((crossplay_run / "results.json").read_text()))
    tags = acc.Tags()["scalars"]
    assert sorted(tags) == sorted(expected)
    for tag in tags:
        (ev,) = acc.Scalars(tag)
        assert ev.step == 0 and ev.value == pytest.approx(expected[tag], rel=1e-6, abs=1e-7)  # float32 in TensorBoard


def test_log_to_flag_on_audit_and_bad_trackers(write_scripted, tmp_path, capsys):
    pytest.importorskip("tensorboard")
    sim = write_scripted([("Sure! [DONATE $1]", 0.6), ("No thanks.", 0.4)])
    out = tmp_path / "run"
    assert main(["audit", "--sim", sim, "--states", "1", "--samples", "4", "--partition", "label", "--no-progress",
                 "--out", str(out), "--log-to", "tensorboard"]) == 0  # fmt: skip
    assert "logged to tensorboard" in capsys.readouterr().out
    assert list((out / "tensorboard").glob("events.out.tfevents.*"))
    assert main(["audit", "--sim", sim, "--out", str(tmp_path / "x"), "--log-to", "neptune"]) == 2
    err = capsys.readouterr().err
    assert "--log-to: unknown tracker 'neptune'" in err and not (tmp_path / "x").exists()  # refused before the run
