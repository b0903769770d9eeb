"""The typed ``samples.jsonl`` record (:data:`~collapse_probe.results._samples.SampleRecord`): its
validation names the first bad field in the same one line the hand-written checks gave, counts and
lengths included, and its JSON Schema ships beside the results schemas."""

from __future__ import annotations

import copy
import json

import pytest

from collapse_probe.results._samples import SAMPLE_RECORD, FailedSample, MeasuredSample, sample_problem

GOOD = {
    "state_id": "t0/opening", "mode": "direct", "source": "opening", "kind": "opening", "turn": 0, "task_id": "t0",
    "status": "ok", "n": 4, "class_counts": [3, 1], "class_names": ["a", "b"], "class_examples": [["a"], ["b"]],
    "responses": ["a", "a", "a", "b"], "labels": [0, 0, 0, 1], "collapse_error": 0.25,
    "collapse_error_ci95": [0.0, 0.7], "collapse_error_corrected": 0.3, "entropy": 0.56, "entropy_ci95": [0.1, 1.0],
    "entropy_note": None, "hill_note": None, "low_confidence": True, "n_empty": 0,
}  # fmt: skip
_DROP = object()


def _with(changes):
    rec = {**copy.deepcopy(GOOD), **changes}
    return {k: v for k, v in rec.items() if v is not _DROP}


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({'state_id': _DROP}, "field 'state_id': expected a string, got None"),
        ({'mode': 1}, "field 'mode': expected a string, got 1"),
        ({'status': None}, "field 'status': expected a string, got None"),
        ({'source': []}, "field 'source': expected a string, got []"),
        ({'kind': 2.0}, "field 'kind': expected a string, got 2.0"),
        ({'mode': 1, 'state_id': 2}, "field 'state_id': expected a string, got 2"),
        ({'turn': -1}, "field 'turn': expected a whole number >= 0 or null, got -1"),
        ({'turn': True}, "field 'turn': expected a whole number >= 0 or null, got True"),
        ({'turn': '0'}, "field 'turn': expected a whole number >= 0 or null, got '0'"),
        ({'n': 0}, "field 'n': expected a whole number >= 1, got 0"),
        ({'n': True}, "field 'n': expected a whole number >= 1, got True"),
        ({'n': '4'}, "field 'n': expected a whole number >= 1, got '4'"),
        ({'n': _DROP}, "field 'n': expected a whole number >= 1, got None"),
        ({'class_counts': [3, 2]}, "field 'class_counts': expected whole numbers >= 1 summing to n = 4, got [3, 2]"),
        ({'class_counts': [4, 0]}, "field 'class_counts': expected whole numbers >= 1 summing to n = 4, got [4, 0]"),
        ({'class_counts': []}, "field 'class_counts': expected whole numbers >= 1 summing to n = 4, got []"),
        ({'class_counts': 'x'}, "field 'class_counts': expected whole numbers >= 1 summing to n = 4, got 'x'"),
        ({'class_counts': [3.0, 1]}, "field 'class_counts': expected whole numbers >= 1 summing to n = 4, got [3.0, 1]"),
        ({'responses': ['a']}, "field 'responses': expected 4 reply texts, got ['a']"),
        ({'responses': ['a', 'a', 'a', 1]}, "field 'responses': expected 4 reply texts, got ['a', 'a', 'a', 1]"),
        ({'responses': _DROP}, "field 'responses': expected 4 reply texts, got None"),
        ({'class_names': ['a']}, "field 'class_names': expected 2 class names, got ['a']"),
        ({'class_names': ['a', 2]}, "field 'class_names': expected 2 class names, got ['a', 2]"),
        ({'class_names': _DROP}, "field 'class_names': expected 2 class names, got None"),
        ({'class_examples': [['a']]}, "field 'class_examples': expected 2 lists of example replies, got [['a']]"),
        ({'class_examples': [['a'], [1]]}, "field 'class_examples': expected 2 lists of example replies, got [['a'], [1]]"),
        ({'class_examples': _DROP}, "field 'class_examples': expected 2 lists of example replies, got None"),
        ({'labels': [0, 0, 0]}, "field 'labels': expected 4 class indices, got [0, 0, 0]"),
        ({'labels': [0, 0, 0, 2]}, "field 'labels': expected 4 class indices, got [0, 0, 0, 2]"),
        ({'labels': [0, 0, 0, -1]}, "field 'labels': expected 4 class indices, got [0, 0, 0, -1]"),
        ({'labels': 'x'}, "field 'labels': expected 4 class indices, got 'x'"),
        ({'labels': None}, None),
        ({'n_empty': -1}, "field 'n_empty': expected a whole number >= 0, got -1"),
        ({'n_empty': None}, "field 'n_empty': expected a whole number >= 0, got None"),
        ({'n_empty': _DROP}, None),
        ({'collapse_error': _DROP}, "field 'collapse_error': expected a number, got None"),
        ({'collapse_error': '0.2'}, "field 'collapse_error': expected a number, got '0.2'"),
        ({'collapse_error': True}, "field 'collapse_error': expected a number, got True"),
        ({'entropy': None}, "field 'entropy': expected a number, got None"),
        ({'collapse_error_corrected': [1]}, "field 'collapse_error_corrected': expected a number, got [1]"),
        ({'collapse_error_estimate': 'x'}, "field 'collapse_error_estimate': expected a number or null, got 'x'"),
        ({'vendi': True}, "field 'vendi': expected a number or null, got True"),
        ({'distinct_1': None}, None),
        ({'mean_pairwise_cosine': 0.5}, None),
        ({'collapse_error_ci95': [0.1]}, "field 'collapse_error_ci95': expected two numbers or null, got [0.1]"),
        ({'collapse_error_ci95': [0.1, None]}, "field 'collapse_error_ci95': expected two numbers or null, got [0.1, None]"),
        ({'collapse_error_ci95': None}, None),
        ({'collapse_error_ci95': 'x'}, "field 'collapse_error_ci95': expected two numbers or null, got 'x'"),
        ({'entropy_ci95': [0.1, None]}, None),
        ({'entropy_ci95': [None, 0.1]}, "field 'entropy_ci95': expected two numbers or null (or [number, null]), got [None, 0.1]"),
        ({'entropy_ci95': [0.1, 'x']}, "field 'entropy_ci95': expected two numbers or null (or [number, null]), got [0.1, 'x']"),
        ({'entropy_ci95': (0.1, 0.2)}, "field 'entropy_ci95': expected two numbers or null (or [number, null]), got (0.1, 0.2)"),
        ({'hill': [1]}, "field 'hill': expected an object, got [1]"),
        ({'exact': 'x'}, "field 'exact': expected an object, got 'x'"),
        ({'decision': 3}, "field 'decision': expected an object, got 3"),
        ({'vs': []}, "field 'vs': expected an object, got []"),
        ({'hill': {'q': 1}}, None),
        ({'task_id': []}, "the record's field task_id is []; expected a string"),
        ({'low_confidence': 'x'}, "the record's field low_confidence is 'x'; expected true or false"),
        ({'entropy_note': {}}, "the record's field entropy_note is {}; expected a string"),
        ({'status': 'infra_error', 'n': 0, 'class_counts': [], 'error': 'timeout'}, None),
        ({'status': 'infra_error', 'n': 0, 'class_counts': [], 'responses': 3, 'entropy': 'x', 'turn': 1}, "the record's field entropy is 'x'; expected a number"),
        ({'status': 'infra_error', 'task_id': [], 'n': 0, 'class_counts': []}, "the record's field task_id is []; expected a string"),
        ({'status': 'infra_error', 'turn': -2}, "field 'turn': expected a whole number >= 0 or null, got -2"),
        ({'n': 3, 'class_counts': [3, 2]}, "field 'class_counts': expected whole numbers >= 1 summing to n = 3, got [3, 2]"),
        ({'responses': ['a'], 'entropy': 'x'}, "field 'responses': expected 4 reply texts, got ['a']"),
        ({'class_counts': [3, 2], 'entropy': 'x'}, "field 'class_counts': expected whole numbers >= 1 summing to n = 4, got [3, 2]"),
    ],
)  # fmt: skip
def test_the_first_bad_field_is_named_as_before(changes, message):
    assert sample_problem(_with(changes)) == message


def test_a_line_reads_as_its_typed_record():
    measured = SAMPLE_RECORD.validate_python(copy.deepcopy(GOOD), strict=True)
    assert isinstance(measured, MeasuredSample) and measured.class_counts == [3, 1] and measured.n_empty == 0
    assert measured.model_extra is not None and measured.model_extra["task_id"] == "t0"  # the row's fields are kept
    failed = SAMPLE_RECORD.validate_python({**GOOD, "status": "infra_error", "n": 0, "class_counts": []}, strict=True)
    assert isinstance(failed, FailedSample) and failed.status == "infra_error"


def test_the_sample_schema_ships_and_refuses_what_the_model_refuses():
    from importlib.resources import files

    jsonschema = pytest.importorskip("jsonschema")
    from collapse_probe.results import published_schema, schema_text

    shipped = files("collapse_probe").joinpath("schemas", "sample.json").read_text(encoding="utf-8")
    assert shipped == schema_text("sample"), "stale: run python scripts/write_schemas.py"
    validator = jsonschema.Draft202012Validator(published_schema("sample"))
    assert not list(validator.iter_errors(json.loads(json.dumps(GOOD))))
    assert list(validator.iter_errors({**GOOD, "n": "4"}))


def test_every_line_a_real_audit_writes_validates(tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    from collapse_probe.cli import main
    from collapse_probe.results import published_schema

    out = tmp_path / "audit"
    argv = ["audit", "--sim", "scripted:p4g_donor_diverse", "--states", "2", "--samples", "10", "--partition",
            "exact", "--no-progress", "--no-cache", "--out", str(out)]  # fmt: skip
    assert main(argv) == 0
    validator = jsonschema.Draft202012Validator(published_schema("sample"))
    lines = (out / "samples.jsonl").read_text().splitlines()
    assert lines
    for line in lines:
        data = json.loads(line)
        assert not [e.message for e in validator.iter_errors(data)]
        assert sample_problem(data) is None
        assert isinstance(SAMPLE_RECORD.validate_python(data, strict=True), MeasuredSample)
