"""The shipped meaning material (constructed pairs and labelled states) and its readers."""

from __future__ import annotations

import importlib.util
import json
from collections import Counter
from pathlib import Path

import pytest

from collapse_probe.core._resources import package_path
from collapse_probe.errors import ConfigError
from collapse_probe.metrics import load_meaning_material, read_labelled_states, read_meaning_pairs
from collapse_probe.metrics._meaning_material import DIFFERS_IN, PAIR_KINDS, as_state_records

DATA = package_path("data", "meaning")
REPO = Path(__file__).resolve().parents[2]
SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "datasets" / "tau2-real"
DOMAINS = {"retail", "telecom", "healthcare", "banking", "it_support", "travel"}
PAIR_KEYS = {"id", "domain", "prefix", "a", "b", "kind", "differs_in", "note", "kind_second", "kind_third"}
STATE_KEYS = {
    "state_id", "source", "simulator", "domain", "task_id", "user_turn", "prefix", "replies", "labels",
    "labels_second", "note", "labels_third",
}  # fmt: skip


def _lines(name: str) -> list[dict]:
    return [json.loads(line) for line in (DATA / name).read_text(encoding="utf-8").splitlines() if line.strip()]


def _check_prefix(prefix: list) -> None:
    assert prefix, "a constructed reply always answers an agent turn"
    for turn in prefix:
        assert set(turn) == {"role", "content"}
        assert turn["role"] in ("assistant", "user") and turn["content"].strip()
    assert prefix[-1]["role"] == "assistant"


def test_every_shipped_pair_line_has_the_schema() -> None:
    lines = _lines("pairs.jsonl")
    assert len({rec["id"] for rec in lines}) == len(lines)
    for rec in lines:
        assert set(rec) <= PAIR_KEYS and PAIR_KEYS - {"note", "kind_second", "kind_third"} <= set(rec), rec["id"]
        _check_prefix(rec["prefix"])
        assert rec["kind"] in PAIR_KINDS and rec["differs_in"] in DIFFERS_IN
        assert (rec["kind"] == "paraphrase") == (rec["differs_in"] == "none"), rec["id"]
        assert rec["a"].strip() and rec["b"].strip() and rec["a"] != rec["b"]
        assert rec.get("kind_second") in PAIR_KINDS, f"{rec['id']}: no second, blind pass"
        assert rec.get("kind_third") in PAIR_KINDS, f"{rec['id']}: no third pass (an annotator blind to the labels)"


def test_every_shipped_state_line_has_the_schema() -> None:
    lines = _lines("states.jsonl")
    assert len({rec["state_id"] for rec in lines}) == len(lines)
    for rec in lines:
        assert set(rec) == STATE_KEYS, rec["state_id"]
        assert rec["source"] == "written for collapse-probe" and rec["simulator"] == "constructed"
        _check_prefix(rec["prefix"])
        assert rec["user_turn"] == sum(t["role"] == "user" for t in rec["prefix"])
        assert 4 <= len(rec["replies"]) <= 12 and all(r.strip() for r in rec["replies"])
        for key in ("labels", "labels_second", "labels_third"):
            labels = rec[key]
            assert len(labels) == len(rec["replies"])
            first: dict[int, int] = {}
            assert [first.setdefault(x, len(first)) for x in labels] == labels, f"{rec['state_id']} {key}"


def test_the_material_covers_every_domain_with_the_promised_counts() -> None:
    material = load_meaning_material()
    assert DOMAINS <= set(material.domains())
    kinds = Counter((p.domain, p.kind) for p in material.pairs)
    states = Counter(s.domain for s in material.states)
    for domain in material.domains():
        assert kinds[domain, "contrast"] >= 30 and kinds[domain, "paraphrase"] >= 30, domain
        assert states[domain] >= 12, domain
    # the states span the range of collapse: one meaning, every reply its own meaning, and between
    classes = Counter(
        min(len(set(s.labels)), 3) if len(set(s.labels)) < len(s.labels) else "all" for s in material.states
    )
    assert classes[1] >= 7 and classes[2] >= 7 and classes[3] >= 7 and classes["all"] >= 7
    assert all(s.labels_second is not None for s in material.states)
    assert all(p.kind_second is not None for p in material.pairs)


def test_every_domain_has_material_that_must_be_judged_against_earlier_user_turns() -> None:
    material = load_meaning_material()
    after_user = Counter((p.domain, p.kind) for p in material.pairs if any(t.role == "user" for t in p.prefix))
    later_states = Counter(s.domain for s in material.states if s.user_turn >= 2)
    for domain in material.domains():
        assert after_user[domain, "contrast"] >= 4 and after_user[domain, "paraphrase"] >= 4, domain
        assert later_states[domain] >= 1, domain


def test_every_contrast_kind_is_used() -> None:
    used = Counter(p.differs_in for p in load_meaning_material().pairs)
    assert set(used) == set(DIFFERS_IN)


@pytest.mark.skipif(
    not (SHARED / "states.jsonl").is_file(), reason="the tau2-real labelled states are not at ../shared"
)
def test_no_reply_is_taken_from_the_labelled_tau2_sets() -> None:
    shared = {r for f in SHARED.rglob("states.jsonl") for s in read_labelled_states(f) for r in s.replies}
    material = load_meaning_material()
    ours = {r for s in material.states for r in s.replies} | {t for p in material.pairs for t in (p.a, p.b)}
    assert not ours & shared


@pytest.mark.skipif(
    not (SHARED / "states.jsonl").is_file(), reason="the tau2-real labelled states are not at ../shared"
)
def test_the_state_reader_reads_the_tau2_sets_too() -> None:
    states = read_labelled_states(SHARED / "states.jsonl")
    assert len(states) >= 70 and {t.role for s in states for t in s.prefix} >= {"assistant", "user"}


def test_state_records_round_trip(tmp_path: Path) -> None:
    states = load_meaning_material().states[:5]
    path = tmp_path / "states.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in as_state_records(states)), encoding="utf-8")
    back = read_labelled_states(path)
    assert [(s.state_id, s.prefix, s.replies, s.labels) for s in back] == [
        (s.state_id, s.prefix, s.replies, s.labels) for s in states
    ]


def test_a_pair_is_same_exactly_when_it_is_a_paraphrase() -> None:
    pairs = load_meaning_material().pairs
    assert {p.same for p in pairs if p.kind == "paraphrase"} == {True}
    assert {p.same for p in pairs if p.kind == "contrast"} == {False}


GOOD_PAIR = {
    "id": "x-1", "domain": "retail", "prefix": [{"role": "assistant", "content": "Which item?"}],
    "a": "The t-shirt.", "b": "The sunglasses.", "kind": "contrast", "differs_in": "item",
}  # fmt: skip
GOOD_STATE = {
    "state_id": "s1", "source": "here", "simulator": "sim", "domain": "retail", "task_id": "1", "user_turn": 0,
    "prefix": [{"role": "assistant", "content": "Hi!"}], "replies": ["a", "b", "a"], "labels": [0, 1, 0],
}  # fmt: skip


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"kind": "similar"}, "field 'kind' is 'similar'; expected 'contrast' or 'paraphrase'"),
        ({"kind": None}, "field 'kind' is null"),
        ({"differs_in": "colour"}, "field 'differs_in' is 'colour'; expected one of item"),
        ({"differs_in": "none"}, "field 'differs_in' is 'none' for a contrast"),
        ({"kind": "paraphrase"}, "field 'differs_in' is 'item' for a paraphrase"),
        ({"b": "The t-shirt."}, "fields 'a' and 'b' are the same text"),
        ({"a": "  "}, "field 'a' is empty"),
        ({"prefix": [{"role": "agent", "content": "Hi"}]}, "field 'prefix' item 0 is not"),
        ({"prefix": "Hi"}, "field 'prefix' is str; expected a list"),
        ({"kind_second": "maybe"}, "field 'kind_second' is 'maybe'"),
    ],
)
def test_a_malformed_pair_line_is_refused_naming_the_line_and_field(tmp_path: Path, change: dict, needle: str) -> None:
    path = tmp_path / "pairs.jsonl"
    path.write_text(json.dumps(GOOD_PAIR) + "\n" + json.dumps({**GOOD_PAIR, "id": "x-2", **change}) + "\n")
    with pytest.raises(ConfigError) as err:
        read_meaning_pairs(path)
    message = str(err.value)
    assert f"{path}: line 2: " in message and needle in message and "\n" not in message


def test_a_pair_field_that_is_missing_or_an_id_given_twice_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "pairs.jsonl"
    path.write_text(json.dumps({k: v for k, v in GOOD_PAIR.items() if k != "b"}) + "\n")
    with pytest.raises(ConfigError, match=r"line 1: field 'b' is missing"):
        read_meaning_pairs(path)
    path.write_text(json.dumps(GOOD_PAIR) + "\n" + json.dumps(GOOD_PAIR) + "\n")
    with pytest.raises(ConfigError, match=r"line 2: id 'x-1' appears twice"):
        read_meaning_pairs(path)
    path.write_text(json.dumps(GOOD_PAIR) + "\n[1, 2]\n")
    with pytest.raises(ConfigError, match=r"line 2: is list; expected one JSON object per line"):
        read_meaning_pairs(path)
    path.write_text(json.dumps(GOOD_PAIR) + "\n{not json\n")
    with pytest.raises(ConfigError, match=r"line 2"):
        read_meaning_pairs(path)


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"labels": [1, 0, 1]}, "field 'labels' is [1, 0, 1]; expected a list of 3 class numbers"),
        ({"labels": [0, 2, 0]}, "field 'labels' is [0, 2, 0]"),
        ({"labels": [0, 1]}, "field 'labels' is [0, 1]; expected a list of 3"),
        ({"labels": [0, True, 0]}, "field 'labels'"),
        ({"labels_second": [0, 0, 2]}, "field 'labels_second' is [0, 0, 2]"),
        ({"user_turn": 1}, "field 'user_turn' is 1; expected 0, the number of user turns"),
        ({"user_turn": "0"}, "field 'user_turn' is str"),
        ({"replies": []}, "field 'replies' is not a non-empty list"),
        ({"replies": ["a", 2, "a"]}, "field 'replies' is not a non-empty list"),
        ({"task_id": 7}, "field 'task_id' is int; expected a non-empty string"),
    ],
)
def test_a_malformed_state_line_is_refused_naming_the_line_and_field(tmp_path: Path, change: dict, needle: str) -> None:
    path = tmp_path / "states.jsonl"
    path.write_text(json.dumps(GOOD_STATE) + "\n" + json.dumps({**GOOD_STATE, "state_id": "s2", **change}) + "\n")
    with pytest.raises(ConfigError) as err:
        read_labelled_states(path)
    message = str(err.value)
    assert f"{path}: line 2: " in message and needle in message and "\n" not in message


def test_a_directory_without_the_files_is_refused_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        load_meaning_material(tmp_path)
    assert "pairs.jsonl" in str(err.value) and "\n" not in str(err.value)


def _blind_pass_script():
    spec = importlib.util.spec_from_file_location("meaning_blind_pass", REPO / "scripts" / "meaning_blind_pass.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_readme_agreement_table_is_the_one_the_data_gives() -> None:
    script = _blind_pass_script()
    states, pairs = _lines("states.jsonl"), _lines("pairs.jsonl")
    found = script.passes(states)
    assert [f for f, _ in found] == ["labels", "labels_second", "labels_third"]
    names = {"labels": "first", "labels_second": "second", "labels_third": "third"}
    readme = (DATA / "README.md").read_text(encoding="utf-8")
    for i, (field, kind_field) in enumerate(found):
        for base, base_kind in found[:i]:
            table = script.agreement(states, pairs, field, kind_field, base, base_kind)
            rows = [line.split()[1:] for line in table.splitlines() if line.split()[:1] == ["all"]]
            (n, same, delta, ari), pairs_all = rows[0], rows[1]
            passes = f"{names[field]} vs {names[base]}"
            assert f"| {passes} | states, all | {n} | {same} | {delta} | {ari} |" in readme
            assert f"| {passes} | pairs (kind), all | {pairs_all[0]} | {pairs_all[1]} agree |" in readme
    # the command prints every pass against every earlier one
    assert script.all_agreements(states, pairs).count("states (") == 3


def test_a_blind_pass_is_printed_without_labels_and_mapped_back(tmp_path: Path, capsys) -> None:
    script = _blind_pass_script()
    material, work = tmp_path / "meaning", tmp_path / "work"
    material.mkdir()
    for name in ("states.jsonl", "pairs.jsonl"):
        (material / name).write_text((DATA / name).read_text(encoding="utf-8"), encoding="utf-8")
    assert script.main(["print", "--dir", str(material), "--out", str(work), "--seed", "3"]) == 0
    printed = (work / "states.txt").read_text(encoding="utf-8") + (work / "pairs.txt").read_text(encoding="utf-8")
    assert "labels" not in printed and "contrast" not in printed and "paraphrase" not in printed
    key = json.loads((work / "key.json").read_text(encoding="utf-8"))
    states = {s["state_id"]: s for s in _lines("states.jsonl")}
    pairs = {p["id"]: p for p in _lines("pairs.jsonl")}
    # an annotator who agrees everywhere except that one state is given a single class
    answers, merged = [], next(iter(key["states"]))
    for printed_key, entry in key["states"].items():
        labels = states[entry["state_id"]]["labels"]
        shown = [0] * len(labels) if printed_key == merged else [labels[r] for r in entry["perm"]]
        answers.append(f"{printed_key} {','.join(map(str, shown))}")
    (work / "states_labels.txt").write_text("\n".join(answers) + "\n")
    (work / "pairs_kinds.txt").write_text("".join(f"{k} {pairs[i]['kind'][0]}\n" for k, i in key["pairs"].items()))
    assert script.main(["apply", "--dir", str(material), "--work", str(work)]) == 0
    back = {s.state_id: s for s in read_labelled_states(material / "states.jsonl")}
    raw = {json.loads(line)["state_id"]: json.loads(line) for line in (material / "states.jsonl").open()}
    merged_id = key["states"][merged]["state_id"]
    for state_id, s in back.items():
        expected = [0] * len(s.labels) if state_id == merged_id else list(s.labels)
        assert raw[state_id]["labels_third"] == expected
    kinds = [json.loads(line) for line in (material / "pairs.jsonl").open()]
    assert all(p["kind_third"] == p["kind"] for p in kinds)
    rows = [line.split() for line in capsys.readouterr().out.splitlines() if line.split()[:1] == ["all"]]
    differs = len(set(states[merged_id]["labels"])) > 1
    assert rows[0][1:3] == [str(len(back)), str(len(back) - differs)]  # states: n, identical partitions
    assert rows[1][1:3] == [str(len(kinds)), str(len(kinds))]  # pairs: n, agree


def test_a_blind_pass_answer_that_does_not_fit_is_refused_in_one_line(tmp_path: Path, capsys) -> None:
    script = _blind_pass_script()
    material, work = tmp_path / "meaning", tmp_path / "work"
    material.mkdir()
    for name in ("states.jsonl", "pairs.jsonl"):
        (material / name).write_text((DATA / name).read_text(encoding="utf-8"), encoding="utf-8")
    assert script.main(["print", "--dir", str(material), "--out", str(work)]) == 0
    (work / "states_labels.txt").write_text("S000 0,1\n")
    (work / "pairs_kinds.txt").write_text("")
    assert script.main(["apply", "--dir", str(material), "--work", str(work)]) == 2
    err = capsys.readouterr().err.strip()
    assert "states_labels.txt: S000 has 2 classes for" in err and "\n" not in err
    assert script.main(["print", "--dir", str(material)]) == 2


def test_a_partitioner_is_scored_against_the_labels_like_a_further_pass(capsys) -> None:
    script = _blind_pass_script()
    assert script.main(["agreement", "--partition", "exact"]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines() if line.split()[:1] == ["all"]]
    material = load_meaning_material()
    one_class_per_reply = sum(len(set(s.labels)) == len(s.labels) for s in material.states)
    # exact text splits every pair and gives every distinct reply its own class
    assert rows[0][1:3] == [str(len(material.states)), str(one_class_per_reply)]
    contrasts = sum(p.kind == "contrast" for p in material.pairs)
    assert rows[1][1:] == [str(len(material.pairs)), str(contrasts), str(contrasts), "/", str(contrasts), "0", "/"] + [
        str(len(material.pairs) - contrasts)
    ]


HELDOUT = DATA / "heldout"
HELDOUT_DOMAINS = {"utilities", "food_delivery", "education", "hr_payroll", "rental", "auto_service"}


def _heldout_texts() -> set[str]:
    material = load_meaning_material(HELDOUT)
    return {r for s in material.states for r in s.replies} | {t for p in material.pairs for t in (p.a, p.b)}


def test_the_held_out_material_loads_in_domains_the_training_material_does_not_have() -> None:
    material = load_meaning_material(HELDOUT)
    assert set(material.domains()) == HELDOUT_DOMAINS
    assert not HELDOUT_DOMAINS & set(load_meaning_material().domains())
    kinds = Counter((p.domain, p.kind) for p in material.pairs)
    after_user = Counter(p.domain for p in material.pairs if any(t.role == "user" for t in p.prefix))
    for domain in HELDOUT_DOMAINS:
        assert kinds[domain, "contrast"] == 18 and kinds[domain, "paraphrase"] == 18, domain
        assert after_user[domain] >= 9, domain  # about a quarter judged against an earlier user turn
        assert sum(s.domain == domain for s in material.states) == 5, domain
    assert all(p.id.startswith(f"{p.domain}-h") for p in material.pairs)
    raw = [json.loads(line) for line in (HELDOUT / "states.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len({s["task_id"] for s in raw}) == len(raw) == len({s["state_id"] for s in raw})
    for s in raw:
        assert s["source"] == "written for collapse-probe (held out)" and s["simulator"] == "constructed"
        assert len(s["state_id"]) == 12 and int(s["state_id"], 16) >= 0
        assert 6 <= len(s["replies"]) <= 12, s["state_id"]
        _check_prefix(s["prefix"])
    # the class structures vary: one class, two, three or more, every reply its own
    sizes = Counter(
        min(len(set(s.labels)), 3) if len(set(s.labels)) < len(s.labels) else "all" for s in material.states
    )
    assert set(sizes) == {1, 2, 3, "all"}


def test_no_held_out_reply_equals_a_reply_of_the_training_material() -> None:
    training = load_meaning_material()
    seen = {r for s in training.states for r in s.replies} | {t for p in training.pairs for t in (p.a, p.b)}
    assert not _heldout_texts() & seen


@pytest.mark.skipif(not SHARED.is_dir(), reason="the tau2-real labelled states are not at ../shared")
def test_no_held_out_reply_equals_a_reply_of_the_labelled_tau2_sets() -> None:
    shared = {r for f in SHARED.rglob("states.jsonl") for s in read_labelled_states(f) for r in s.replies}
    assert shared, "the tau2-real folder holds no labelled states"
    assert not _heldout_texts() & shared
