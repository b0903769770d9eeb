"""The benchmarks' typed records say what the data holds: the τ2 database rows have exactly the keys of
their TypedDicts (in the order the agent sees them), the records every arena appends to an episode use
only keys :class:`EpisodeMessage` declares, and τ2's score info only keys :class:`Tau2ScoreInfo` declares."""

from __future__ import annotations

import asyncio
import json

import pytest

from collapse_probe.benchmarks import ArenaToolCall, EpisodeMessage, make_arena
from collapse_probe.benchmarks.cooperbench import SUBMIT
from collapse_probe.benchmarks.p4g import ELICITATION, P4GArena
from collapse_probe.benchmarks.tau2 import load_domain
from collapse_probe.benchmarks.tau2._arena import Tau2ScoreInfo
from collapse_probe.benchmarks.tau2._db import (
    Address,
    AirlineUser,
    Database,
    Flight,
    FlightDate,
    Fulfillment,
    Name,
    Order,
    OrderItem,
    OrderPayment,
    Passenger,
    PaymentMethod,
    Product,
    Reservation,
    ReservationFlight,
    ReservationPayment,
    RetailUser,
    Variant,
)
from collapse_probe.models import Completion


def _keys(td: type) -> list[str]:
    return list(td.__annotations__)


def _check(row: dict, td: type, where: str) -> None:
    """``row`` has every required key of ``td`` and no other key than its declared ones; a TypedDict
    without optional keys fixes the order too (the tools' JSON output is in this order)."""
    required, declared = set(td.__required_keys__), _keys(td)
    assert required <= set(row), (where, sorted(required - set(row)))
    assert set(row) <= set(declared), (where, sorted(set(row) - set(declared)))
    if not td.__optional_keys__:
        assert list(row) == declared, where


def _check_retail(tables: dict) -> int:
    n = 0
    for pid, p in tables["products"].items():
        _check(p, Product, f"products.{pid}")
        for iid, v in p["variants"].items():
            _check(v, Variant, f"products.{pid}.variants.{iid}")
    for uid, u in tables["users"].items():
        _check(u, RetailUser, f"users.{uid}")
        _check(u["name"], Name, f"users.{uid}.name")
        _check(u["address"], Address, f"users.{uid}.address")
        for k, pm in u["payment_methods"].items():
            _check(pm, PaymentMethod, f"users.{uid}.payment_methods.{k}")
    for oid, o in tables["orders"].items():
        _check(o, Order, f"orders.{oid}")
        _check(o["address"], Address, f"orders.{oid}.address")
        for it in o["items"]:
            _check(it, OrderItem, f"orders.{oid}.items")
        for f in o["fulfillments"]:
            _check(f, Fulfillment, f"orders.{oid}.fulfillments")
        for ph in o["payment_history"]:
            _check(ph, OrderPayment, f"orders.{oid}.payment_history")
        n += 1
    return n


def test_demo_database_rows_are_their_typed_rows():
    assert _check_retail(load_domain("demo").db) > 0


def test_official_database_rows_are_their_typed_rows(tau2_dir):
    assert _check_retail(load_domain("retail", tau2_dir).db) > 100
    db = load_domain("airline", tau2_dir).db
    for fn, f in db["flights"].items():
        _check(f, Flight, f"flights.{fn}")
        for d, fd in f["dates"].items():
            _check(fd, FlightDate, f"flights.{fn}.dates.{d}")
    for uid, u in db["users"].items():
        _check(u, AirlineUser, f"users.{uid}")
        for p in u["saved_passengers"]:
            _check(p, Passenger, f"users.{uid}.saved_passengers")
        for k, pm in u["payment_methods"].items():
            _check(pm, PaymentMethod, f"users.{uid}.payment_methods.{k}")
    for rid, r in db["reservations"].items():
        _check(r, Reservation, f"reservations.{rid}")
        for rf in r["flights"]:
            _check(rf, ReservationFlight, f"reservations.{rid}.flights")
        for p in r["passengers"]:
            _check(p, Passenger, f"reservations.{rid}.passengers")
        for pay in r["payment_history"]:
            _check(pay, ReservationPayment, f"reservations.{rid}.payment_history")


def test_database_owns_a_copy_before_a_row_changes():
    base = load_domain("demo").db
    db, other = Database("retail", base), Database("retail", base)
    oid = next(iter(base["orders"]))
    before = json.dumps(base["orders"][oid])
    db.own("orders", oid)
    assert db.tables["orders"][oid] is not base["orders"][oid]
    db.tables["orders"][oid]["status"] = "cancelled"
    assert json.dumps(base["orders"][oid]) == before  # the shared base is never written
    assert db.changed() == {"orders": [oid]} and not db.same_state(other)
    row = db.tables["orders"][oid]
    db.own("orders", oid)  # owned once: a second call keeps the private copy and its change
    assert db.tables["orders"][oid] is row and row["status"] == "cancelled"
    with pytest.raises(KeyError):
        db.mark_inserted("orders", "#W-not-there")
    db.tables["orders"]["#W-new"] = json.loads(json.dumps(db.tables["orders"][oid]))
    db.mark_inserted("orders", "#W-new")
    assert db.changed() == {"orders": sorted([oid, "#W-new"])}


def _check_messages(messages: list) -> None:
    for m in messages:
        assert {"role", "content"} <= set(m) <= set(_keys(EpisodeMessage)), m
        for c in m.get("tool_calls") or []:
            assert set(c) <= set(_keys(ArenaToolCall)), c


def _drive(arena, task, policy_turns, user_turns):
    ep = arena.new_episode(task, 0)
    pol, usr = iter(policy_turns), iter(user_turns)
    while (side := arena.next_side(ep)) is not None:
        arena.prompt_for(ep, side)
        comp = (
            next(pol, Completion("Is there anything else?"))
            if side == "policy"
            else Completion(next(usr, "###STOP###"))
        )
        arena.apply(ep, side, comp, comp.text)
    return ep


def test_tau2_records_and_score_info_use_declared_keys():
    for options in ({}, {"compact": True, "tool_protocol": "text"}):
        arena = make_arena("tau2-demo", **options)
        eps = []
        for task in arena.load_tasks()[:3]:
            actions = task.data["task"]["evaluation_criteria"]["actions"] or []
            if options:
                turns = [Completion(json.dumps({"name": a["name"], "arguments": a["arguments"]})) for a in actions]
                turns.append(Completion("{not json"))  # a malformed call: a tool error with parse_error
            else:
                turns = [Completion("", tool_calls=[{"name": a["name"], "arguments": a["arguments"], "id": f"c{i}"}])
                         for i, a in enumerate(actions)]  # fmt: skip
            eps.append(_drive(arena, task, turns, ["I need help.", "###STOP###"]))
        for ep in eps:
            _check_messages(ep.messages)
            assert any(m.get("tool_calls") for m in ep.messages)
        for score in asyncio.run(arena.score(eps)):
            assert set(Tau2ScoreInfo.__required_keys__) <= set(score.info) <= set(_keys(Tau2ScoreInfo))


def test_p4g_and_cooperbench_records_use_declared_keys():
    arena = P4GArena(max_turns=1)
    (task,) = arena.load_tasks(1)
    ep = _drive(arena, task, [Completion("Would you donate?")], ["Maybe.", "I'll give [DONATE $1]"])
    _check_messages(ep.messages)
    assert any(m["content"] == ELICITATION and m.get("meta") for m in ep.messages)

    submit = json.dumps({"name": "bash", "arguments": {"command": f"echo {SUBMIT}"}})
    note = json.dumps({"name": "send_message", "arguments": {"recipient": "agent2", "content": "I take core.py"}})
    coop = make_arena("cooperbench-demo", compact=True, tool_protocol="text")
    ep = coop.new_episode(coop.task("demo_minstats_task/task4/f1_f3"), seed=0)
    for side, text in (("policy", note), ("simulator", submit), ("policy", "no tool call"), ("policy", submit)):
        assert coop.next_side(ep) == side
        coop.prompt_for(ep, side)
        coop.apply(ep, side, Completion(text), text)
    _check_messages(ep.messages)
    assert {m["role"] for m in ep.messages} == {"policy", "simulator", "tool", "message"}
