"""A simulator card as built matches its declared types (SimulatorCard and its parts)."""

from __future__ import annotations

from typing import NotRequired, get_origin, get_type_hints

from collapse_probe.integrations.interop._card import (
    AuditText,
    CardSimulator,
    CardSource,
    CrossplayEntry,
    Figure,
    FigureSource,
    SimulatorCard,
    simulator_card,
)


def _keys(typed: type) -> tuple[set[str], set[str]]:
    """(required keys, all keys) of a TypedDict, read from its annotations (the module postpones them)."""
    hints = get_type_hints(typed, include_extras=True)
    return {k for k, t in hints.items() if get_origin(t) is not NotRequired}, set(hints)


def _conforms(value: dict, typed: type) -> bool:
    required, declared = _keys(typed)
    return required <= set(value) <= declared


def test_a_card_holds_exactly_its_declared_fields(audit_run, crossplay_run):
    card = simulator_card([audit_run, crossplay_run])
    assert _conforms(card, SimulatorCard) and "card_fingerprint" in card
    assert _conforms(card["simulator"], CardSimulator)
    assert card["audits"] and all(_conforms(a, AuditText) for a in card["audits"])
    assert card["crossplay"] and all(_conforms(c, CrossplayEntry) for c in card["crossplay"])
    assert len(card["sources"]) == 2 and all(_conforms(s, CardSource) for s in card["sources"])
    assert card["figures"] and all(
        _conforms(f, Figure) and _conforms(f["source"], FigureSource) for f in card["figures"]
    )
    assert any("ci95" in f and "ci95_pointer" in f["source"] for f in card["figures"])
    assert any("note" in f for f in card["figures"])
