"""``collapse_probe.results.load``: the one reader of a run's ``results.json`` (the gate, the exporters and
the cards read through it), and ``read_results``, its non-raising form for the dashboard."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import collapse_probe.integrations.interop._rundata as rundata
import collapse_probe.pipelines.crossplay as crossplay
import collapse_probe.results as results
from collapse_probe.errors import ConfigError
from collapse_probe.results import CrossplayResults, load, read_results


@pytest.fixture(scope="module")
def crossplay_file(gate_demo_run: Path) -> dict:
    return json.loads((gate_demo_run / "results.json").read_text(encoding="utf-8"))


def _write(d: Path, data: object) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    (d / "results.json").write_text(json.dumps(data), encoding="utf-8")
    return d


def test_a_run_directory_and_its_file_read_alike_and_the_kind_is_checked(gate_demo_run):
    typed = load(gate_demo_run, kind="crossplay")
    assert isinstance(typed, CrossplayResults)
    assert load(gate_demo_run / "results.json").to_json() == typed.to_json()
    with pytest.raises(ConfigError, match=r"results\.json: holds results of schema 'collapse-probe/crossplay/v1'; "
                       r"expected the results of an audit run$"):  # fmt: skip
        load(gate_demo_run, kind="audit")
    with pytest.raises(ConfigError, match=r"^unknown results kind 'crosplay'; expected one of play, audit"):
        load(gate_demo_run, kind="crosplay")


def test_a_run_without_its_results_yet_is_named_as_in_progress(tmp_path):
    (tmp_path / "run").mkdir()
    with pytest.raises(ConfigError) as exc:
        load(tmp_path / "run", kind="crossplay")
    assert str(exc.value) == (
        f"{tmp_path / 'run'}: no cross-play results.json yet (the run is in progress, or was stopped: "
        "rerun its command to finish it)"
    )
    with pytest.raises(ConfigError, match=r"nope\.json: does not exist; expected results\.json$"):
        load(tmp_path / "nope.json")


def test_a_bad_cross_play_cell_is_named_by_load_and_by_read_results(crossplay_file, tmp_path):
    data = json.loads(json.dumps(crossplay_file))
    data["cells"][0]["n"] = "8"
    run = _write(tmp_path / "bad", data)
    cell = f"cell {data['cells'][0]['policy']} vs {data['cells'][0]['simulator']}"
    with pytest.raises(ConfigError) as exc:
        load(run, kind="crossplay")
    assert str(exc.value).startswith(f"{run / 'results.json'}: {cell}: ") and "\n" not in str(exc.value)
    typed, problem = read_results(data, "r.json")
    assert typed is None and problem is not None and problem.startswith(f"r.json: {cell}: ")
    assert read_results(crossplay_file)[1] is None


def test_the_other_readers_are_gone():
    """One public reader: the six of earlier versions are not forwarded (no release used them)."""
    assert {"load", "read_results"} <= set(results.__all__)
    for name in ("load_results", "parse_results"):
        assert not hasattr(results, name) and name not in results.__all__, name
    assert not hasattr(crossplay, "load_results_json")
    assert not hasattr(rundata, "read_results") and not hasattr(rundata, "typed_results")
