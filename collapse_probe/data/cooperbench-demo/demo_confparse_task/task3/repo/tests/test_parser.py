from confparse import parse


def test_pairs():
    assert parse("a = x\nb=two\n\n") == {"a": "x", "b": "two"}
