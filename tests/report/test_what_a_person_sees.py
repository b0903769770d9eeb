"""Reports and dashboard figures as a person reads them, checked on the generated HTML and figures
(the browser tier measures the same pages: tests/dashboards/test_readable.py): tables that fit,
values on one line, a collapse map whose colours say what its caption says, distinct series, audits
side by side, a sentence where a chart would be empty, and labels cut between words."""

from __future__ import annotations

import json
import re

import pytest

from collapse_probe.cli import main
from collapse_probe.report._html import Sentence, table_html, write_html_report
from collapse_probe.report._layout import short_labels
from collapse_probe.report.audit_plots import (
    COLLAPSE_MAP_TITLE,
    TAIL_COLOURSCALE,
    collapse_map_figure,
    compare_audits_figure,
    states_audited_text,
    states_table,
)
from collapse_probe.report.training_plots import training_figures, zero_std_share_figure


@pytest.fixture(scope="module")
def audit(tmp_path_factory) -> dict:
    """A real audit's results (scripted simulator, exact partition: seconds)."""
    out = tmp_path_factory.mktemp("audit") / "run"
    assert main(["audit", "--sim", "scripted:p4g_donor_diverse", "--states", "3", "--samples", "12", "--partition",
                 "exact", "--no-progress", "--no-cache", "--out", str(out)]) == 0  # fmt: skip
    return json.loads((out / "results.json").read_text())


def _state(sid: str, counts: list[int]) -> dict:
    n = sum(counts)
    return {"state_id": sid, "status": "ok", "n": n, "class_counts": counts, "class_names": [f"c{i}" for i in counts],
            "collapse_error": 1 - max(counts) / n, "collapse_error_estimate": 1 - max(counts) / n,
            "collapse_error_ci95": [0.0, 1.0]}  # fmt: skip


def test_states_table_names_states_briefly_and_leaves_out_empty_columns(audit):
    long_id = "on_policy:scripted:models/pol_a.json|scripted:models/sim_audit.json|p4g-057|0:3"
    res = {**audit, "states": [{**audit["states"][0], "state_id": long_id}, *audit["states"][1:]]}
    table = states_table(res)
    assert table["rows"][0][0] == "on_policy:p4g-057|0:3"  # task, rollout and message: the specs are the audit's
    for j, column in enumerate(table["columns"][2:], start=2):  # every column kept says something
        assert any(row[j] not in (None, "", "n/a") for row in table["rows"]), column
    assert "error" not in table["columns"]  # no state failed
    assert {"state", "mode", "N", "status", "ε̂", "95% CI"} <= set(table["columns"])


def test_probe_states_are_named_once(audit):
    assert audit["states_note"].startswith("note: these are probe states")
    text = states_audited_text(audit)
    assert text.startswith("probe states: the benchmark's fixed prompts")
    assert text.count("probe states") == 1 and "these are" not in text
    assert states_audited_text({"states_audited": "on-policy simulator turns (Definition 3.1)"}) == (
        "on-policy simulator turns (Definition 3.1)"
    )


def test_value_cells_never_wrap():
    page = table_html(["method", "train final", "95% CI", "note"],
                      [["single", "0.569 ± 0.254", "[0.019, 0.498]", "LOW CONFIDENCE (N < 20)"], ["vs", 3, 1e-5, "n/a"]])  # fmt: skip
    cells = re.findall(r"<td( class=\"num\")?>([^<]*)</td>", page)
    assert [c for cls, c in cells if cls] == ["0.569 ± 0.254", "[0.019, 0.498]", "3", "1e-05", "n/a"]
    assert [c for cls, c in cells if not cls] == ["single", "LOW CONFIDENCE (N &lt; 20)", "vs"]


def test_report_css_keeps_value_cells_on_one_line(tmp_path):
    page = write_html_report(tmp_path / "r.html", "t", [("T", {"columns": ["a"], "rows": [["0.5 ± 0.1"]]})])
    text = page.read_text(encoding="utf-8")
    assert re.search(r"td\.num \{ white-space: nowrap; \}", text) and '<td class="num">0.5 ± 0.1</td>' in text


def test_collapse_map_draws_the_tail_apart_and_its_caption_holds():
    collapsed = _state("collapsed", [12])
    diverse = _state("diverse", [2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1])  # 11 classes: the tail holds 4 of 12
    fig = collapse_map_figure({"states": [collapsed, diverse], "mode": "direct", "samples_per_state": 12})
    ranked, tail = fig.data
    assert list(ranked.x) == list(range(7)) and tail.x0 == 7 and tail.dx == 1  # one column, right of rank 7
    assert list(fig.layout.xaxis.ticktext) == [*(f"#{k}" for k in range(1, 8)), "#8+"]
    # the caption: a collapsed state is one dark first cell and an empty row
    assert "collapsed: a dark first cell" in COLLAPSE_MAP_TITLE.replace("<br>", " ")
    rows = dict(zip(ranked.y, ranked.z, strict=True))
    top = next(v for k, v in rows.items() if k.startswith("collapsed"))
    assert top[0] == 1 and not any(top[1:]) and max(max(r) for r in ranked.z) == top[0]
    # the tail, where the diverse state is darkest, is in grey on a scale of its own, not the ranked blue
    assert tuple(tuple(c) for c in tail.colorscale) == tuple(tuple(c) for c in TAIL_COLOURSCALE)
    for _, colour in tail.colorscale:
        r, g, b = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
        assert r == g == b
    assert ranked.colorscale != tail.colorscale and tail.showscale is False
    tail_rows = dict(zip(tail.y, tail.z, strict=True))
    assert next(v for k, v in tail_rows.items() if k.startswith("diverse"))[0] == pytest.approx(4 / 12)


def test_one_runs_series_each_have_their_own_colour():
    curves = {"run": [{"step": s, "zero_std_share": 0.5, "zero_std_all_success_share": 0.2, "zero_std_all_fail_share": 0.2,
                       "zero_std_sim_caused_share": 0.1} for s in (1, 2, 3)]}  # fmt: skip
    fig = zero_std_share_figure(curves)
    colours = [t.line.color for t in fig.data]
    assert len(colours) == 4 and len(set(colours)) == 4
    assert fig.layout.showlegend is not False and len({t.name for t in fig.data}) == 4
    # several runs: a run keeps one colour, its series told apart by dash
    two = zero_std_share_figure({"a": curves["run"], "b": curves["run"]})
    by_run = {}
    for t in two.data:
        by_run.setdefault(t.legendgroup, set()).add(t.line.color)
    assert all(len(c) == 1 for c in by_run.values()) and len({next(iter(c)) for c in by_run.values()}) == 2


def test_zero_variance_is_a_sentence_when_there_is_nothing_to_draw():
    none_recorded = dict(training_figures({"run": [{"step": s, "train_reward": 0.5} for s in (1, 2)]}))
    assert isinstance(none_recorded["Zero-variance groups"], Sentence)
    assert "recorded" in none_recorded["Zero-variance groups"]
    all_zero = dict(training_figures({"run": [{"step": s, "zero_std_share": 0.0} for s in (1, 2, 3)]}))
    assert str(all_zero["Zero-variance groups"]).startswith("No rollout group had zero reward variance in any of the 3")
    some = dict(training_figures({"run": [{"step": s, "zero_std_share": 0.25 * s} for s in (1, 2)]}))
    assert not isinstance(some["Zero-variance groups"], str) and len(some["Zero-variance groups"].data) == 1


def test_a_sentence_section_is_an_escaped_paragraph(tmp_path):
    page = write_html_report(tmp_path / "r.html", "t", [("Zero-variance groups", Sentence("a < b & no chart"))])
    assert '<p class="sentence">a &lt; b &amp; no chart</p>' in page.read_text(encoding="utf-8")


def test_compared_audits_are_drawn_side_by_side(audit):
    other = {**audit, "states": [{**s, "collapse_error_estimate": 0.5} for s in audit["states"]]}
    shared = compare_audits_figure({"a": audit, "b": other})
    assert shared.layout.scattermode == "group" and len({t.offsetgroup for t in shared.data[:2]}) == 2
    # no shared state: each audit's profile against the quantile, the two never at the same x
    apart = {**other, "states": [{**s, "state_id": "x" + s["state_id"]} for s in other["states"]]}
    fig = compare_audits_figure({"a": audit, "b": apart})
    xa, xb = (list(t.x) for t in fig.data[:2])
    assert len(xa) == len(xb) and all(a < b for a, b in zip(xa, xb, strict=True))
    assert all(b - a < 1 / len(xa) for a, b in zip(xa, xb, strict=True))  # still beside their own quantile
    failed = {**audit, "states": [{**s, "status": "infra_error", "collapse_error": None} for s in audit["states"]]}
    assert list(compare_audits_figure({"a": audit, "none measured": failed}).data[1].x) == []


def test_labels_cut_from_the_left_start_at_a_word():
    sims = ["scripted:p4g_donor_diverse", "scripted:p4g_donor_rapport", "scripted:p4g_donor_skeptic"]
    assert short_labels(sims, 16) == ["…donor_diverse", "…donor_rapport", "…donor_skeptic"]
    from collapse_probe.report.crossplay_plots import matrix_labels

    _, labels = matrix_labels({"policies": ["scripted:p4g_persuader_cause"], "simulators": sims,
                               "train_simulator": sims[0]})  # fmt: skip
    assert labels == ["…donor_diverse (train)", "…donor_rapport", "…donor_skeptic"]
