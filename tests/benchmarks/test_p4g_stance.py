"""The P4G stance reader: act -> stance mapping, rules and fitted model, multi-sentence replies, the
shipped model file, held-out accuracy against the annotated dialogues, and people's own ε."""

from __future__ import annotations

import csv
import json
import shutil
from collections import Counter

import numpy as np
import pytest

from collapse_probe import models
from collapse_probe.benchmarks.p4g import HumanDialogue, donor_stance
from collapse_probe.benchmarks.p4g import stance as ps
from collapse_probe.benchmarks.p4g.stance import (
    ACT_STANCE,
    DONATE,
    NO_DECISION,
    REFUSE,
    StanceReader,
    act_stance,
    heldout_dialogue,
    key_stance,
    load_annotated_dialogues,
    load_annotated_p4g,
    load_stance_model,
    split_sentences,
    turn_act,
    turn_stance,
)
from collapse_probe.core._meaning import KeyFamily
from collapse_probe.errors import ConfigError
from tests.conftest import run_cli


def _has_embed() -> bool:
    return ps._embed_extra_present()


READERS = [
    "rules",
    pytest.param(
        "model", marks=[pytest.mark.realmodel, pytest.mark.skipif(not _has_embed(), reason="needs the embed extra")]
    ),
]  # the model reader embeds with the packaged sentence encoder

# replies the regex reader of earlier versions misread ("any no counts", "an amount is a donation")
MISREADS = [
    ("Oh, yes, I think it is a great idea… I'd love to help the children.", REFUSE),
    ("No, what you say, is very valid… I love getting involved in causes like this.", REFUSE),
    ("$2?", DONATE),
]


@pytest.fixture
def annotated_dir(p4g_dir):
    if not (p4g_dir / "annotated_dialog.csv").exists():
        pytest.skip("annotated P4G CSVs not present at ../shared/datasets/p4g")
    return p4g_dir


def test_act_stance_mapping():
    assert {a: act_stance(a) for a in ACT_STANCE} == {
        "agree-donation": DONATE,
        "provide-donation-amount": DONATE,
        "confirm-donation": DONATE,
        "disagree-donation": REFUSE,
        "disagree-donation-more": REFUSE,
    }
    for other in ("ask-org-info", "positive-reaction-to-donation", "negative-reaction-to-donation", "", None):
        assert act_stance(other) == NO_DECISION


def test_key_stance_of_every_key_kind():
    assert [key_stance(k) for k in ("donate:$1", "donate", "refuse", "undecided", KeyFamily("question"), None)] == [
        DONATE, DONATE, REFUSE, NO_DECISION, NO_DECISION, NO_DECISION,
    ]  # fmt: skip


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize(("text", "not_this"), MISREADS)
def test_plain_replies_are_not_misread(reader, text, not_this):
    assert key_stance(StanceReader(reader)(text)) != not_this


@pytest.mark.realmodel
def test_misreads_through_donor_stance():
    for text, not_this in MISREADS:
        assert key_stance(donor_stance(text)) != not_this
    assert donor_stance("$2?") == KeyFamily("question")


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("Sure, I'll donate $1.", "donate:$1"),
        ("[DONATE $0.50] Happy to help.", "donate:$0.50"),
        ("[DONATE $0]", "refuse"),
        ("No thanks, I'd rather not donate.", "refuse"),
        ("Let me think about it first.", "undecided"),
        ("Who runs this charity?", KeyFamily("question")),
        # several sentences: the strongest decision stated wins, with its own amount
        ("No thanks. I'd rather keep my money.", "refuse"),
        ("Hi, nice to meet you! Sure, I'll donate $1.", "donate:$1"),
        ("I can't give $2. But I'll give $1.", "donate:$1"),
        ("I'll donate one dollar. How is it used?", "donate:$1"),
        ("How is it used? I'm not sure yet.", "undecided"),
    ],
)
def test_reader_keys(reader, text, key):
    assert StanceReader(reader)(text) == key


@pytest.mark.parametrize("reader", READERS)
def test_a_bare_no_is_read_against_the_message_it_answers(reader):
    """ "No." refuses after talk of giving and answers a question otherwise; without a context the
    rules refuse, as before, and the model reads it alone (on the training dialogues the context
    changes 3 rule readings, all to the gold)."""
    r = StanceReader(reader)
    alone = r("No.")
    assert alone == "refuse" or reader == "model"
    assert r("No.", "Could you give just $0.25?") == "refuse"
    assert r("No.", "Have you heard of Save the Children?") is None
    assert key_stance(r("No. I haven't heard of them.", "Have you heard of Save the Children?")) == NO_DECISION
    assert r("No thanks.", "Have you heard of Save the Children?") == "refuse"  # not bare: refuses anyway
    asked = ["Would you donate some of your payment?", "Have you heard of them?", None]
    assert r.keys(["No.", "No.", "No."], context=asked) == ["refuse", None, alone]
    assert r.keys(["No.", "no"], context="Have you heard of them?") == [None, None]
    with pytest.raises(ConfigError, match="context: expected one per reply"):
        r.keys(["No.", "Yes."], context=["Would you donate?"])


@pytest.mark.realmodel
@pytest.mark.skipif(not _has_embed(), reason="needs the embed extra")
def test_donor_stance_reads_a_bare_no_against_the_message_it_answers():
    """``donor_stance`` (the default reader: the model where the embed extra is installed) reads context too."""
    assert donor_stance("No.", "Have you heard of Save the Children?") is None


def test_the_embedding_partition_hands_each_state_its_context():
    from collapse_probe.metrics import partitioners
    from collapse_probe.pipelines.audit._sampling import state_context

    seen = []

    class Key:
        def __call__(self, text):
            return None

        def keys(self, texts, embeddings, context=None):
            seen.append((list(texts), context))
            ctx = context or [None] * len(texts)
            return [
                ("no" if c and "heard" in c else "refuse") if t == "No." else None
                for t, c in zip(texts, ctx, strict=True)
            ]

    texts = ["No.", "No thanks, maybe later"]
    emb = np.array([[1.0, 0.0], [0.0, 1.0]])
    part = partitioners.EmbeddingPartitioner(key=Key())
    part.embed = lambda ts: np.stack([emb[texts.index(t)] for t in ts])  # type: ignore[method-assign]
    part.partition_many([texts, texts], contexts=["Have you heard of them?", "Would you donate?"])
    assert seen[-1] == (texts + texts, ["Have you heard of them?"] * 2 + ["Would you donate?"] * 2)
    part.partition_many([texts])  # no contexts: the key is called as before
    assert seen[-1] == (texts, None)
    with pytest.raises(ConfigError, match="contexts: expected one per group"):
        part.partition_many([texts], contexts=[])
    # partitioners without contexts (exact, label, judge) class the replies as before
    import asyncio

    from collapse_probe.metrics.partitioners._base import apartition_states

    exact = partitioners.get_partitioner("exact")
    assert asyncio.run(apartition_states(exact, [["a", "a", "b"]], ["ctx"])) == [[0, 0, 1]]
    assert asyncio.run(apartition_states(part, [texts], ["Would you donate?"])) == [[0, 1]]

    class State:
        episode = type("E", (), {"messages": [{"role": "policy", "content": "Hi"}, {"role": "simulator",
                       "content": "Hello"}, {"role": "policy", "content": "Would you donate $1?"}]})()  # fmt: skip

    assert state_context(State()) == "Would you donate $1?"  # type: ignore[arg-type]
    State.episode.messages = []
    assert state_context(State()) is None  # type: ignore[arg-type]


def test_split_sentences():
    assert split_sentences("No thanks. I'd rather keep my money! Why?") == [
        "No thanks.",
        "I'd rather keep my money!",
        "Why?",
    ]
    assert split_sentences("$1.50 is fine") == ["$1.50 is fine"]
    assert split_sentences("  ") == [""]


def test_rules_reader_says_so_and_is_the_fallback(monkeypatch):
    monkeypatch.setattr(ps, "_embed_extra_present", lambda: False)
    r = StanceReader()
    assert r.reader == "rules" and "rules" in r.describe() and r.model_ is None
    with pytest.raises(ImportError, match=r"collapse-probe\[embed\]"):
        StanceReader("model")
    with pytest.raises(ConfigError, match="'auto', 'model' or 'rules'"):
        StanceReader("regex")


@pytest.mark.realmodel
@pytest.mark.skipif(not _has_embed(), reason="needs the embed extra")
def test_model_reader_reuses_the_callers_embeddings(monkeypatch):
    from collapse_probe.metrics import partitioners

    texts = ["Sure, I'll donate $1.", "No thanks.", "What does the charity do?"]
    reader = StanceReader("model")
    assert "logistic regression" in reader.describe() and reader.model_ is not None
    emb = partitioners.EmbeddingPartitioner().embed(texts)
    expected = reader.keys(texts)

    def no_encoder(*a, **k):
        raise AssertionError("single-sentence replies with embeddings given must not be encoded again")

    monkeypatch.setattr(models, "load_encoder", no_encoder)
    assert reader.keys(texts, emb) == expected
    # the embedding partition hands its embeddings to a key that reads many texts at once
    part = partitioners.EmbeddingPartitioner(key=reader)
    monkeypatch.setattr(partitioners.EmbeddingPartitioner, "encoder", property(lambda self: _Enc(emb, texts)))
    assert part.partition(texts) == [0, 1, 2]


class _Enc:
    def __init__(self, emb, texts):
        self.rows = dict(zip(texts, emb, strict=True))

    def encode(self, texts, **kw):
        return np.stack([self.rows[t] for t in texts])


def test_shipped_model_file_is_checked(tmp_path):
    m = load_stance_model()
    assert m.coef.shape == (3, 384 + len(ps.STANCE_FEATURES)) and m.classes == ps.STANCES
    assert "all-MiniLM-L6-v2" in m.encoder and len(m.sha256) == 64
    payload = json.loads(ps.package_path(*ps.MODEL_FILE).read_text())
    assert payload["trained_on"]["dialogues"] > 100 and "sha256" in payload["trained_on"]["split"]
    payload["offsets"][2] += 1.0
    bad = tmp_path / "m.json"
    bad.write_text(json.dumps(payload))
    with pytest.raises(ConfigError, match="content hash"):
        load_stance_model(bad)
    payload["features"] = ["x"]
    payload["sha256"] = ps.model_payload_hash(payload)
    bad.write_text(json.dumps(payload))
    with pytest.raises(ConfigError, match="field 'features'"):
        load_stance_model(bad)
    with pytest.raises(ConfigError, match="does not exist"):
        load_stance_model(tmp_path / "missing.json")
    bad.write_text("{")
    with pytest.raises(ConfigError, match="not a JSON stance model"):
        load_stance_model(bad)


def test_heldout_split_is_fixed_and_by_dialogue():
    ids = [f"2018{i:04d}_{i}_live" for i in range(2000)]
    held = [heldout_dialogue(i) for i in ids]
    assert 0.2 < np.mean(held) < 0.3
    assert held == [heldout_dialogue(i) for i in ids]  # a hash, not a random draw
    assert heldout_dialogue("20180723-042344_940_live") is False


def test_turn_stance_and_act():
    assert turn_stance(["greeting", "agree-donation", "disagree-donation"]) == REFUSE
    assert turn_stance(["thank", "ask-org-info"]) == NO_DECISION
    assert turn_act(["acknowledgement", "provide-donation-amount", "thank"]) == "provide-donation-amount"
    assert turn_act(["acknowledgement", "ask-org-info"]) == "acknowledgement"


def test_annotated_loader_errors(tmp_path):
    with pytest.raises(ConfigError, match="annotated_dialog.csv"):
        load_annotated_p4g(tmp_path)
    (tmp_path / "annotated_dialog.csv").write_text("B2,B4,Turn,Unit\nd,0,0,hi\n")
    with pytest.raises(ConfigError, match=r"missing columns \['ee_label_1', 'er_label_1'\]"):
        load_annotated_p4g(tmp_path)
    _write_annotated(tmp_path, [("d", "2", 0, "hi", "greeting")])
    with pytest.raises(ConfigError, match="line 2: column 'B4' must be 0"):
        load_annotated_p4g(tmp_path)
    assert load_annotated_dialogues(tmp_path / "nowhere", []) == []


def _write_annotated(d, rows):
    with open(d / "annotated_dialog.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["", "B2", "B4", "Turn", "Unit", "er_label_1", "ee_label_1", "er_label_2", "ee_label_2"])
        for i, (did, role, turn, text, act) in enumerate(rows):
            w.writerow([i, did, role, turn, text, act if role == "0" else "", act if role != "0" else "", "", ""])


def test_people_epsilon_by_hand():
    from collapse_probe.metrics.estimators import collapse_error_interval, mean_collapse_error_interval
    from collapse_probe.pipelines.audit._human import people_epsilon, people_epsilon_rows

    ask, hi = ["proposition-of-donation"], ["greeting"]
    # four people asked to donate: two agree, one refuses, one asks; at the greeting all greet back
    replies = [["agree-donation"], ["provide-donation-amount", "thank"], ["disagree-donation"], ["ask-org-info"]]
    annotated = [
        HumanDialogue(f"d{i}", [("policy", "Hi"), ("simulator", "Hey"), ("policy", "Donate?"), ("simulator", "...")],
                      acts=[hi, ["greeting"], ask, r])
        for i, r in enumerate(replies)
    ]  # fmt: skip
    recs = [
        {"state_id": "human:d0:3", "status": "ok", "source": "human",
         "responses": ["Sure, I'll donate $1."] * 6 + ["No thanks."] * 4},
        {"state_id": "human:d1:3", "status": "ok", "source": "human", "responses": ["Sure, I'll donate $1."] * 10},
        {"state_id": "human:d2:1", "status": "ok", "source": "human", "responses": ["Hello!"] * 10},
        {"state_id": "human:zz:1", "status": "ok", "source": "human", "responses": ["Hello!"] * 10},  # not annotated
        {"state_id": "opening:p1", "status": "ok", "source": "opening", "responses": ["No."] * 10},
    ]  # fmt: skip
    pe = people_epsilon(recs, annotated, StanceReader("rules"))
    assert pe is not None and pe["n_groups"] == 2 and pe["n_states"] == 3 and pe["n_people_replies"] == 8
    by = {g["persuader_act"]: g for g in pe["groups"]}
    g = by["proposition-of-donation"]
    assert g["people"]["counts"] == {DONATE: 2, NO_DECISION: 1, REFUSE: 1}
    assert g["people"]["collapse_error"] == collapse_error_interval([2, 1, 1]).estimate
    assert g["people_acts"]["n_acts"] == 4 and g["people_acts"]["n"] == 4
    assert g["simulator_pooled"]["counts"] == {DONATE: 16, NO_DECISION: 0, REFUSE: 4}
    assert g["simulator_pooled"]["collapse_error"] == collapse_error_interval([16, 4]).estimate
    assert g["simulator_within_state"]["estimate"] == mean_collapse_error_interval([[6, 4], [10]]).estimate
    assert by["greeting"]["people"]["counts"][NO_DECISION] == 4 and by["greeting"]["people"]["plugin"] == 0
    assert [g["persuader_act"] for g in pe["groups"]] == ["greeting", "proposition-of-donation"]  # ties: by name
    assert pe["people"]["estimate"] == mean_collapse_error_interval([[4], [2, 1, 1]]).estimate
    assert pe["simulator_pooled"]["estimate"] == mean_collapse_error_interval([[10], [16, 4]]).estimate
    assert pe["simulator_within_state"]["estimate"] == mean_collapse_error_interval([[10], [6, 4], [10]]).estimate
    assert "rules" in pe["stance_reader"]
    rows = dict(people_epsilon_rows({"human_reference": {"people_epsilon": pe}}))
    assert (
        rows["people's ε at matched states"].startswith("stance ")
        and "8 human replies" in rows["people's ε at matched states"]
    )
    assert people_epsilon(recs[3:], annotated, StanceReader("rules")) is None
    assert people_epsilon_rows({}) == []


@pytest.mark.realmodel
def test_annotated_file_labels_and_held_out_accuracy(annotated_dir):
    """The mapping covers the file's spellings; on the held-out dialogues the model reads people's
    stances better than the rules (measured: macro-F1 0.744 vs 0.674; the regex reader of earlier
    versions: 0.588)."""
    from sklearn.metrics import f1_score

    rows = load_annotated_p4g(annotated_dir)
    acts = Counter(r.act for r in rows if r.speaker == "simulator")
    assert set(ACT_STANCE) <= set(acts) and "" not in acts
    held = [r for r in rows if r.speaker == "simulator" and heldout_dialogue(r.dialogue_id)]
    train_ids = {r.dialogue_id for r in rows if not heldout_dialogue(r.dialogue_id)}
    assert not train_ids & {r.dialogue_id for r in held} and len({r.dialogue_id for r in held}) == 52
    gold = [act_stance(r.act) for r in held]
    rules = [key_stance(k) for k in StanceReader("rules").keys([r.text for r in held])]
    assert f1_score(gold, rules, average="macro") > 0.64
    if _has_embed():
        model = [key_stance(k) for k in StanceReader("model").keys([r.text for r in held])]
        assert f1_score(gold, model, average="macro") > 0.72


def test_audit_with_annotated_dialogues_reports_peoples_epsilon(
    annotated_dir, write_scripted, tmp_path, monkeypatch, capsys
):
    # the rules stance reader: the default one embeds with the packaged sentence encoder (the real-model tier's)
    monkeypatch.setattr(ps, "default_stance_reader", lambda: ps.StanceReader("rules"))
    human = tmp_path / "p4g"
    human.mkdir()
    for name in ("full_info.csv", "full_dialog.csv", "annotated_dialog.csv"):
        shutil.copy(annotated_dir / name, human / name)
    sim = write_scripted([("No thanks.", 0.6), ("Sure, I'll give $1.", 0.4)])
    out = tmp_path / "audit"
    rc, stdout, stderr = run_cli(
        ["audit", "--sim", sim, "--human", str(human), "--states", "6", "--samples", "10", "--partition", "label",
         "--out", str(out), "--no-progress"],
        capsys,
    )  # fmt: skip
    assert rc == 0, stderr
    res = json.loads((out / "results.json").read_text())
    pe = res["human_reference"]["people_epsilon"]
    assert pe["n_states"] == 6 and pe["n_groups"] >= 1 and pe["grouping"].startswith("the persuader's act")
    annotated = {r.dialogue_id for r in load_annotated_p4g(human)}
    human_states = [s for s in res["states"] if s["source"] == "human"]
    assert len(human_states) == 6 and all(s["state_id"].split(":")[1] in annotated for s in human_states)
    for g in pe["groups"]:
        # the scripted donor refuses 60 % of the time and gives $1 otherwise, whatever the state
        assert sum(g["simulator_pooled"]["counts"].values()) == 10 * g["n_states"]
        lo, hi = g["people"]["ci95"]
        assert 0 <= lo <= g["people"]["collapse_error"] <= hi <= 1
    assert "people's ε at matched states" in stdout
    assert "People as the reference" in (out / "report.html").read_text()
