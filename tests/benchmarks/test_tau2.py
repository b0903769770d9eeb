"""τ2 retail / airline / demo: tools, gold replay, episode protocol, reward, pass^k."""

from __future__ import annotations

import asyncio
import json
import math

import pytest

from collapse_probe.benchmarks import Arena
from collapse_probe.benchmarks.tau2 import (
    GREETING,
    Environment,
    load_domain,
    make_arena,
    parse_action,
    pass_hat_k,
    replay_gold,
    resolve_domain_dir,
)
from collapse_probe.errors import ConfigError
from collapse_probe.models import Completion, get_model

# Gold actions that fail in the shipped data (TOOLS.md §8.2): task -> [(action index, error text)].
RETAIL_FAILING = {
    "2": "Product not found",
    "3": "Product not found",
    "4": "Product not found",
    "35": "User not found",
    "37": "User not found",
    "38": "User not found",
    "54": "User not found",
    "55": "User not found",
    "39": "User not found",
    "67": "User not found",
    "68": "User not found",
    "46": "Order not found",
    "47": "Order not found",
    "64": "Non-delivered order cannot be exchanged",
    "105": "Insufficient gift card balance to pay for the price difference",
}
WRITE_TOOLS = {
    "retail": {
        "cancel_pending_order",
        "exchange_delivered_order_items",
        "modify_pending_order_address",
        "modify_pending_order_items",
        "modify_pending_order_payment",
        "modify_user_address",
        "return_delivered_order_items",
    },
    "airline": {
        "book_reservation",
        "cancel_reservation",
        "send_certificate",
        "update_reservation_baggages",
        "update_reservation_flights",
        "update_reservation_passengers",
    },
}


# ------------------------------------------------------------------------------------------- helpers


def drive(arena, task, policy_turns, user_turns, seed=0):
    """Run an episode by hand: ``policy_turns`` yields Completions, ``user_turns`` texts."""
    ep = arena.new_episode(task, seed)
    pol, usr = iter(policy_turns), iter(user_turns)
    while (side := arena.next_side(ep)) is not None:
        arena.prompt_for(ep, side)
        if side == "policy":
            comp = next(pol, Completion(text="Is there anything else?"))
        else:
            comp = Completion(text=next(usr, "###STOP###"))
        arena.apply(ep, side, comp, comp.text)
    return ep


def call(name, arguments, i=0):
    return Completion(text="", tool_calls=[{"name": name, "arguments": arguments, "id": f"c{i}"}])


def oracle_turns(raw_task):
    ec = raw_task["evaluation_criteria"]
    turns = [call(a["name"], a["arguments"], i) for i, a in enumerate(ec["actions"] or [])]
    info = " ".join(ec.get("communicate_info") or [])
    turns.append(Completion(text=f"All done. {info}".strip()))
    return turns


# ------------------------------------------------------------------------------------------- gold replay


def test_gold_replay_failure_pattern_matches_spec(tau2_dir):
    counts = {}
    for domain in ("retail", "airline"):
        data = load_domain(domain, tau2_dir)
        ok = fail = 0
        for task in data.tasks:
            r = replay_gold(domain, task["id"], tau2_dir)
            actions = task["evaluation_criteria"]["actions"] or []
            assert len(r.action_ok) == len(actions)
            ok += sum(r.action_ok)
            fail += len(r.action_ok) - sum(r.action_ok)
            failed = [
                (a["name"], out) for a, good, out in zip(actions, r.action_ok, r.outputs, strict=True) if not good
            ]
            if domain == "retail" and task["id"] in RETAIL_FAILING:
                assert failed and all(out == "Error: " + RETAIL_FAILING[task["id"]] for _, out in failed), task["id"]
                if task["id"] not in ("64", "105"):
                    assert all(n not in WRITE_TOOLS[domain] for n, _ in failed)
            else:
                assert failed == [], (domain, task["id"], failed)
            # The DB changes exactly where a successful write points, and nowhere when none succeeded.
            wrote = [
                a for a, good in zip(actions, r.action_ok, strict=True) if good and a["name"] in WRITE_TOOLS[domain]
            ]
            if not wrote:
                assert r.changed == {}, (domain, task["id"])
            for a in wrote:
                args = a["arguments"]
                if "order_id" in args:
                    assert args["order_id"] in r.changed["orders"]
                if "reservation_id" in args:
                    assert args["reservation_id"] in r.changed["reservations"]
                if a["name"] == "send_certificate":
                    assert args["user_id"] in r.changed["users"]
                if a["name"] == "modify_user_address":  # later writes may restore it (retail 22, 110)
                    last = [
                        b["arguments"]
                        for b in wrote
                        if b["name"] == a["name"] and b["arguments"]["user_id"] == args["user_id"]
                    ][-1]
                    expected = {k: last[k] for k in ("address1", "address2", "city", "country", "state", "zip")}
                    assert r.db_after["users"][args["user_id"]]["address"] == expected
                if a["name"] == "book_reservation":
                    assert "HATHAT" in r.changed["reservations"]
            allowed = {"retail": {"orders", "users"}, "airline": {"reservations", "users", "flights"}}[domain]
            assert set(r.changed) <= allowed
        counts[domain] = (ok, fail)
    assert counts == {"retail": (532, 18), "airline": (142, 0)}


def test_gold_replay_values_from_spec(tau2_dir):
    r = replay_gold("retail", "20", tau2_dir)  # last-variant price/options quirk, unrounded payment
    order = r.db_after["orders"]["#W9911714"]
    assert order["payment_history"][-1] == {
        "transaction_type": "payment",
        "amount": 71.96000000000001,
        "payment_method_id": "gift_card_4332117",
    }
    assert r.db_after["users"]["ethan_garcia_1261"]["payment_methods"]["gift_card_4332117"]["balance"] == 14.04
    assert {it["price"] for it in order["items"]} == {261.11} and order["status"] == "pending (item modified)"
    r = replay_gold("retail", "30", tau2_dir)
    assert r.db_after["users"]["olivia_lopez_3865"]["payment_methods"]["gift_card_7711863"]["balance"] == 153.27
    r = replay_gold("retail", "111", tau2_dir)
    amounts = sorted(o["payment_history"][-1]["amount"] for o in (r.db_after["orders"][k] for k in r.changed["orders"]))
    assert amounts == [77.14999999999986, 181.3699999999999]
    assert r.db_after["users"]["yara_silva_7567"]["payment_methods"]["gift_card_7252880"]["balance"] == 314.52
    r = replay_gold("retail", "0", tau2_dir)
    o = r.db_after["orders"]["#W2378156"]
    assert o["status"] == "exchange requested" and o["exchange_items"] == sorted(o["exchange_items"])
    assert o["payment_history"] == r.db_before["orders"]["#W2378156"]["payment_history"]
    assert replay_gold("retail", "105", tau2_dir).changed == {}
    assert replay_gold("retail", "64", tau2_dir).action_ok.count(False) == 1

    r = replay_gold("airline", "14", tau2_dir)
    new = r.db_after["reservations"]["HATHAT"]
    assert new["created_at"] == "2024-05-15T15:00:00" and new["status"] is None
    assert sum(p["amount"] for p in new["payment_history"]) == 2613 == 3 * (364 + 248 + 259)
    pms = r.db_after["users"]["mohamed_silva_9265"]["payment_methods"]
    assert "certificate_3765853" not in pms
    assert pms["gift_card_8020792"]["amount"] == 0.0 and isinstance(pms["gift_card_8020792"]["amount"], float)
    assert r.db_after["flights"]["HAT023"]["dates"]["2024-05-26"]["available_seats"]["business"] == 3
    assert r.db_after["users"]["mohamed_silva_9265"]["reservations"][-1] == "HATHAT"
    r = replay_gold("airline", "11", tau2_dir)
    assert r.db_after["reservations"]["GV1N64"]["payment_history"][-1] == {
        "payment_id": "gift_card_1642017",
        "amount": -5244,
    }
    assert r.db_after["users"]["james_patel_9828"]["payment_methods"]["gift_card_1642017"]["amount"] == 5372.0
    r = replay_gold("airline", "32", tau2_dir)
    assert [p["amount"] for p in r.db_after["reservations"]["OWZ4XL"]["payment_history"]] == [522, 396, -510]
    r = replay_gold("airline", "17", tau2_dir)
    res = r.db_after["reservations"]["FQ8APE"]
    assert res["total_baggages"] == 3 and res["nonfree_baggages"] == 0 and res["payment_history"][-1]["amount"] == 209
    # Loading types: every airline reservation gains status null; gift amounts are floats.
    assert all(v["status"] is None for v in r.db_before["reservations"].values())


# ------------------------------------------------------------------------------------------- tools


def _env(domain, tau2_dir):
    data = load_domain(domain, tau2_dir)
    return Environment(data.kind, data.db)


def test_generic_and_framework_errors(tau2_dir):
    env = _env("retail", tau2_dir)
    calc = {e: env.execute("calculate", {"expression": e}).content for e in ("2+2", "10/3", "2623.69 - 1126.04")}
    assert calc == {"2+2": "4.0", "10/3": "3.33", "2623.69 - 1126.04": "1497.65"}
    assert env.execute("calculate", {"expression": "2^3"}).content == "Error: Invalid characters in expression"
    assert env.execute("calculate", {"expression": "1/0"}).content == "Error: division by zero"
    assert "leading zeros" in env.execute("calculate", {"expression": "05+1"}).content
    assert env.execute("nope", {}).content == "Error: Tool 'nope' not found."
    missing = env.execute("get_order_details", {})
    assert missing.error and "missing 1 required positional argument: 'order_id'" in missing.content
    assert "RetailTools.get_order_details()" in missing.content
    assert env.execute("get_order_details", {"order_id": "W2378156"}).content == "Error: Order not found"
    assert env.execute("transfer_to_human_agents", {"summary": "x"}).content == "Transfer successful"
    types = json.loads(env.execute("list_all_product_types", {}).content)
    assert len(types) == 50 and list(types) == sorted(types)
    uid = env.execute("find_user_id_by_email", {"email": "NOAH.BROWN7922@EXAMPLE.COM"})
    assert (uid.content, uid.error) == ("noah_brown_6181", False)
    assert env.execute("find_user_id_by_name_zip", {"first_name": "noah", "last_name": "BROWN", "zip": 80279}).error


def test_retail_write_error_texts(tau2_dir):
    env = _env("retail", tau2_dir)
    before = env.db.hash()
    # #W2611340 is 'processed'; retail count-check messages differ per tool.
    assert env.execute("cancel_pending_order", {"order_id": "#W2611340", "reason": "no longer needed"}).content == (
        "Error: Non-pending order cannot be cancelled"
    )
    data = load_domain("retail", tau2_dir)
    pending = next(o for o in data.db["orders"].values() if o["status"] == "pending")
    delivered = next(o for o in data.db["orders"].values() if o["status"] == "delivered")
    assert (
        env.execute("cancel_pending_order", {"order_id": pending["order_id"], "reason": "bored"}).content
        == "Error: Invalid reason"
    )
    ex = {"order_id": delivered["order_id"], "item_ids": ["0"], "new_item_ids": ["1"], "payment_method_id": "x"}
    assert env.execute("exchange_delivered_order_items", ex).content == "Error: Number of 0 not found."
    mod = {**ex, "order_id": pending["order_id"]}
    assert env.execute("modify_pending_order_items", mod).content == "Error: 0 not found"
    first = pending["items"][0]["item_id"]
    mod = {**mod, "item_ids": [first], "new_item_ids": [first]}
    assert env.execute("modify_pending_order_items", mod).content == (
        "Error: The new item id should be different from the old item id"
    )
    mod = {**mod, "new_item_ids": []}
    assert (
        env.execute("modify_pending_order_items", mod).content
        == "Error: The number of items to be exchanged should match"
    )
    ret = {
        "order_id": delivered["order_id"],
        "item_ids": ["0"],
        "payment_method_id": delivered["payment_history"][0]["payment_method_id"],
    }
    assert env.execute("return_delivered_order_items", ret).content == "Error: Some item not found"
    bad_addr = {
        "order_id": pending["order_id"],
        "address1": "a",
        "address2": "",
        "city": "c",
        "state": "s",
        "country": "u",
        "zip": 123,
    }
    out = env.execute("modify_pending_order_address", bad_addr).content
    assert out.startswith("Error: 1 validation error for UserAddress")
    assert env.db.hash() == before  # failures never mutate
    # A modified pending order cannot be modified again, nor have its payment changed.
    pm = pending["payment_history"][0]["payment_method_id"]
    items = [it["item_id"] for it in pending["items"]]
    prod = data.db["products"][pending["items"][0]["product_id"]]
    alt = next(i for i, v in prod["variants"].items() if v["available"] and i != items[0])
    user = data.db["users"][pending["user_id"]]
    non_gift = next(k for k, v in user["payment_methods"].items() if v["source"] != "gift_card")
    r = env.execute(
        "modify_pending_order_items",
        {"order_id": pending["order_id"], "item_ids": items[:1], "new_item_ids": [alt], "payment_method_id": non_gift},
    )
    assert not r.error and json.loads(r.content)["status"] == "pending (item modified)"
    again = {
        "order_id": pending["order_id"],
        "item_ids": [alt],
        "new_item_ids": [items[0]],
        "payment_method_id": non_gift,
    }
    assert env.execute("modify_pending_order_items", again).content == "Error: Non-pending order cannot be modified"
    other = next((k for k in user["payment_methods"] if k != pm), None)
    if other is not None:
        out = env.execute(
            "modify_pending_order_payment", {"order_id": pending["order_id"], "payment_method_id": other}
        ).content
        assert out == "Error: There should be exactly one payment for a pending order"


def test_airline_tool_quirks(tau2_dir):
    env = _env("airline", tau2_dir)
    data = load_domain("airline", tau2_dir)
    assert env.execute("get_user_details", {"user_id": "nobody"}).content == "Error: User nobody not found"
    assert env.execute("get_flight_status", {"flight_number": "HAT001", "date": "2024-05-03"}).content == "cancelled"
    assert env.execute("get_flight_status", {"flight_number": "HAT001", "date": "2024-06-01"}).content == (
        "Error: Flight HAT001 not found on date 2024-06-01"
    )
    airports = json.loads(env.execute("list_all_airports", {}).content)
    assert airports[0] == {"iata": "SFO", "city": "San Francisco"} and len(airports) == 20
    f = next(f for f in data.db["flights"].values() if f["dates"].get("2024-05-20", {}).get("status") == "available")
    direct = json.loads(
        env.execute(
            "search_direct_flight", {"origin": f["origin"], "destination": f["destination"], "date": "2024-05-20"}
        ).content
    )
    assert any(d["flight_number"] == f["flight_number"] and d["date"] is None for d in direct)
    # One-stop: an overnight first leg builds the next date without zero padding (2024-05-08 -> 2024-05-9).
    overnight = next(f for f in data.db["flights"].values() if "+1" in f["scheduled_arrival_time_est"])
    pairs = json.loads(
        env.execute(
            "search_onestop_flight", {"origin": overnight["origin"], "destination": "JFK", "date": "2024-05-20"}
        ).content
    )
    for a, b in pairs:
        assert a["date"] == "2024-05-20"
        assert b["date"] == ("2024-05-21" if "+1" in a["scheduled_arrival_time_est"] else "2024-05-20")
        assert b["scheduled_departure_time_est"] >= a["scheduled_arrival_time_est"]
    user = next(
        u for u in data.db["users"].values() if not any(k.startswith("certificate_32213") for k in u["payment_methods"])
    )
    uid = user["user_id"]
    msgs = [env.execute("send_certificate", {"user_id": uid, "amount": a}).content for a in (150, 150.0, "20", 5)]
    assert msgs[0] == f"Certificate certificate_3221322 added to user {uid} with amount 150."
    assert msgs[1] == f"Certificate certificate_3221323 added to user {uid} with amount 150.0."
    assert msgs[3] == "Error: Too many certificates"
    certs = env.db.tables["users"][uid]["payment_methods"]
    assert certs["certificate_3221324"]["amount"] == 20.0 and isinstance(certs["certificate_3221322"]["amount"], float)
    # Certificates can never pay for an update; zero-price baggage update adds no payment.
    res = next(r for r in data.db["reservations"].values() if r["user_id"] == uid)
    card = next((k for k, v in user["payment_methods"].items() if v["source"] == "credit_card"), None)
    out = env.execute(
        "update_reservation_baggages",
        {
            "reservation_id": res["reservation_id"],
            "total_baggages": 0,
            "nonfree_baggages": 0,
            "payment_id": "certificate_3221322",
        },
    )
    assert out.content == "Error: Certificate cannot be used to update reservation"
    if card is not None:
        out = env.execute(
            "update_reservation_baggages",
            {"reservation_id": res["reservation_id"], "total_baggages": 7, "nonfree_baggages": 0, "payment_id": card},
        )
        after = json.loads(out.content)
        assert after["payment_history"] == res["payment_history"] and after["total_baggages"] == 7
    bad = env.execute(
        "update_reservation_passengers", {"reservation_id": res["reservation_id"], "passengers": [{"first_name": "A"}]}
    )
    assert bad.content.startswith("Error: 2 validation errors for Passenger")
    cancel = json.loads(env.execute("cancel_reservation", {"reservation_id": res["reservation_id"]}).content)
    assert (
        cancel["status"] == "cancelled"
        and cancel["payment_history"][-1]["amount"] == -res["payment_history"][-1]["amount"]
    )


# ------------------------------------------------------------------------------------------- arena


def test_oracle_and_do_nothing_agents(tau2_dir):
    for domain in ("tau2-retail", "tau2-airline"):
        arena = make_arena(domain, data_dir=tau2_dir)
        assert isinstance(arena, Arena)
        tasks = arena.load_tasks()
        oracle = [drive(arena, t, oracle_turns(t.data["task"]), ["I need help.", "###STOP###"]) for t in tasks]
        idle = [drive(arena, t, [Completion(text="Sorry, I cannot help.")], ["Hello", "###STOP###"]) for t in tasks]
        s_oracle = asyncio.run(arena.score(oracle))
        s_idle = asyncio.run(arena.score(idle))
        for t, so, si in zip(tasks, s_oracle, s_idle, strict=True):
            assert so.info["termination_reason"] == "user_stop"
            assert so.info["components"]["DB"] == 1.0, (domain, t.task_id)
            assert so.reward == 1.0 and so.success, (domain, t.task_id, so.info)
            if domain == "tau2-retail" and t.data["task"]["evaluation_criteria"].get("nl_assertions"):
                assert "DB-only" in so.info["note"]
            changes = replay_gold(domain, t.task_id, tau2_dir).changed
            if changes:
                assert si.reward == 0.0 and si.info["components"]["DB"] == 0.0, (domain, t.task_id)
            else:
                assert si.info["components"]["DB"] == 1.0
        assert sum(s.reward == 0 for s in s_idle) > len(tasks) / 2


def _demo():
    return make_arena("tau2-demo")


def test_episode_protocol_and_prompts():
    arena = _demo()
    task = arena.task("0")
    ep = arena.new_episode(task, 0)
    assert ep.messages == [{"role": "policy", "content": GREETING}]
    assert arena.next_side(ep) == "simulator"
    up = arena.prompt_for(ep, "simulator")
    assert up.messages[0]["role"] == "system" and "<scenario>" in up.messages[0]["content"]
    assert "Ada Moreno" in up.messages[0]["content"] and "Known info:" in up.messages[0]["content"]
    assert up.messages[1] == {"role": "user", "content": GREETING}
    assert up.prompt.endswith("Customer:") and up.tools is None
    arena.apply(
        ep,
        "simulator",
        Completion(text="Customer: I want to cancel order #W1000001."),
        "Customer: I want to cancel order #W1000001.",
    )
    assert ep.messages[-1]["content"] == "I want to cancel order #W1000001."
    assert arena.next_side(ep) == "policy"
    pp = arena.prompt_for(ep, "policy")
    assert len(pp.tools) == 16 and pp.tools[0]["type"] == "function"
    assert pp.messages[0]["content"].startswith("<instructions>") and "<policy>" in pp.messages[0]["content"]
    assert pp.prompt.endswith("Agent:") and '"name": "respond"' in pp.prompt
    arena.apply(
        ep,
        "policy",
        *(lambda c: (c, c.text))(
            call("find_user_id_by_name_zip", {"first_name": "Ada", "last_name": "Moreno", "zip": "94110"})
        ),
    )
    assert ep.messages[-1] == {
        "role": "tool",
        "content": "ada_moreno_1001",
        "tool_call_id": "c0",
        "name": "find_user_id_by_name_zip",
        "error": False,
    }
    assert arena.next_side(ep) == "policy"  # the agent goes again after a tool result
    pp = arena.prompt_for(ep, "policy")
    assert pp.messages[-2]["tool_calls"][0]["function"]["name"] == "find_user_id_by_name_zip"
    assert pp.messages[-1]["role"] == "tool" and "Tool result: ada_moreno_1001" in pp.prompt
    # The simulator never sees tool calls or results.
    assert all("ada_moreno_1001" not in m["content"] for m in arena.prompt_for(ep, "simulator").messages[1:])
    # Text-protocol action from a local model, with a code fence and trailing text.
    text = '```json\n{"name": "cancel_pending_order", "arguments": {"order_id": "#W1000001", "reason": "no longer needed"}}\n```\nDone.'
    arena.apply(ep, "policy", Completion(text=text), text)
    assert ep.messages[-1]["error"] is False and '"status": "cancelled"' in ep.messages[-1]["content"]
    arena.apply(
        ep,
        "policy",
        Completion(text='{"name": "respond", "content": "Cancelled."}'),
        '{"name": "respond", "content": "Cancelled."}',
    )
    assert ep.messages[-1] == {"role": "policy", "content": "Cancelled."}
    assert arena.next_side(ep) == "simulator"
    arena.apply(ep, "simulator", Completion(text="Thanks! ###STOP###"), "Thanks! ###STOP###")
    assert ep.done and ep.status == "user_stop" and arena.next_side(ep) is None
    assert ep.state["steps"] == 7  # user, agent, env, agent, env, agent, user
    (score,) = asyncio.run(arena.score([ep]))
    assert score.reward == 1.0 and score.success
    json.dumps(ep.state), json.dumps(ep.messages)  # the record is serialisable
    # Compact prompts stay small for local models.
    small = make_arena("tau2-demo", compact=True, policy_chars=400)
    assert len(small.prompt_for(ep, "policy").prompt) < len(pp.prompt)
    assert "(policy shortened)" in small.policy_text()


def test_malformed_calls_are_tool_errors_counted_to_max_errors():
    arena = make_arena("tau2-demo", max_errors=4)
    bad = [
        Completion(text='{"name": "get_order_details", "arguments": {"order_id": "#W1000001"'),  # truncated -> repaired
        Completion(text='{"name": "get_order_details" "arguments": }'),  # bad JSON
        Completion(text='{"name": "launch_rocket", "arguments": {}}'),  # unknown tool
        Completion(text='{"name": "find_user_id_by_email", "arguments": {"email": 42}}'),  # wrong type
        Completion(text="", tool_calls=[{"name": "get_user_details", "arguments": "{not json", "id": "x"}]),
    ]
    ep = drive(arena, arena.task("0"), bad, ["Hi, I need help."] * 10)
    tools = [m for m in ep.messages if m["role"] == "tool"]
    assert tools[0]["error"] is False  # a call cut at max_tokens is closed and read
    assert tools[1]["error"] and "could not parse" in tools[1]["content"]
    assert tools[2]["content"] == "Error: Tool 'launch_rocket' not found."
    assert tools[3]["error"] and "'int' object has no attribute 'lower'" in tools[3]["content"]
    assert tools[4]["error"] and "not valid JSON" in tools[4]["content"]
    assert ep.done and ep.status == "too_many_errors" and ep.state["errors"] == 4
    (score,) = asyncio.run(arena.score([ep]))
    assert score.reward == 0.0 and score.success is False and score.info["termination_reason"] == "too_many_errors"


def test_limits_max_steps_overrides_stop_and_native_text_is_message():
    arena = make_arena("tau2-demo", max_steps=3, tool_protocol="native")
    ep = drive(arena, arena.task("4"), [Completion(text='{"looks": "like json"}')], ["Hi", "###STOP###"])
    # user(1), agent(2), user stop on step 3 -> recorded as max_steps (limits are checked after the stop).
    assert ep.messages[2] == {"role": "policy", "content": '{"looks": "like json"}'}
    assert ep.status == "max_steps" and ep.state["stop_signal"] == "###STOP###"
    (score,) = asyncio.run(arena.score([ep]))
    assert score.reward == 0.0
    capped = make_arena("tau2-demo", max_turns=1)
    ep = drive(capped, capped.task("4"), [], ["Hi"])
    assert ep.status == "max_turns" and ep.turns("simulator") == 1


def test_nl_judge_and_communicate(write_scripted):
    good = write_scripted(
        [(json.dumps({"results": [{"expectedOutcome": "x", "reasoning": "ok", "metExpectation": True}]}), 1.0)]
    )
    bad = write_scripted([('```json\n{"results": [{"metExpectation": "false"}]}\n```', 1.0)], name="bad.json")
    junk = write_scripted([("I cannot judge this.", 1.0)], name="junk.json")
    outs = {}
    for label, spec in (("good", good), ("bad", bad), ("junk", junk), ("none", None)):
        arena = make_arena("tau2-demo", judge=get_model(spec) if spec else None)
        t = arena.task("4")
        ep = drive(arena, t, oracle_turns(t.data["task"]), ["Please cancel #W1000005.", "###STOP###"])
        outs[label] = asyncio.run(arena.score([ep]))[0]
    assert outs["good"].reward == 1.0 and outs["good"].info["nl_judged"] is True
    assert outs["bad"].reward == 0.0 and outs["bad"].info["components"]["NL_ASSERTION"] == 0.0
    assert outs["junk"].reward is None and "judge_error" in outs["junk"].info
    assert outs["none"].reward == 1.0 and "DB-only" in outs["none"].info["note"]
    arena = _demo()
    t = arena.task("6")  # COMMUNICATE: the price must appear in an agent message (commas removed)
    said = drive(arena, t, oracle_turns(t.data["task"]), ["How much is the white lamp?", "###STOP###"])
    silent = drive(arena, t, [Completion(text="It is affordable.")], ["How much is the white lamp?", "###STOP###"])
    s_said, s_silent = asyncio.run(arena.score([said, silent]))
    assert (s_said.reward, s_silent.reward) == (1.0, 0.0)


def test_infra_error_episode_is_not_scored():
    arena = _demo()
    ep = arena.new_episode(arena.task("0"), 0)
    ep.done, ep.status = True, "infra_error"
    (score,) = asyncio.run(arena.score([ep]))
    assert score.reward is None and score.info["infra_error"]


# ------------------------------------------------------------------------------------------- protocol, pass^k, data


@pytest.mark.parametrize(
    ("text", "name", "args", "content"),
    [
        ('{"name": "get_user_details", "arguments": {"user_id": "a_1"}}', "get_user_details", {"user_id": "a_1"}, None),
        (
            "Sure: {'name': 'get_user_details', 'arguments': {'user_id': 'a_1'},} thanks",
            "get_user_details",
            {"user_id": "a_1"},
            None,
        ),
        ('{"tool": "calculate", "args": "{\\"expression\\": \\"1+1\\"}"}', "calculate", {"expression": "1+1"}, None),
        ('{"name": "respond", "content": "Hello {friend}"}', "respond", None, "Hello {friend}"),
        ("How can I help you?", "respond", None, "How can I help you?"),
        ('{"name": "list_all_product_types"}', "list_all_product_types", {}, None),
    ],
)
def test_parse_action(text, name, args, content):
    a = parse_action(text)
    assert a.error is None and a.name == name and a.arguments == args and a.content == content


def test_parse_action_errors():
    assert parse_action('{"arguments": {}}').error
    assert parse_action('{"name": "respond"}').error
    assert parse_action("{{{").error


def test_pass_hat_k_hand_values():
    trials = {"a": [True, True, False, True], "b": [False, False, True, None], "c": [True, True, True, True]}
    # a: c=3,n=4; b: c=1,n=3 (infra error excluded); c: c=4,n=4.
    assert pass_hat_k(trials, 1) == pytest.approx((3 / 4 + 1 / 3 + 1) / 3)
    assert pass_hat_k(trials, 2) == pytest.approx((math.comb(3, 2) / math.comb(4, 2) + 0 + 1) / 3)
    assert pass_hat_k(trials, 3) == pytest.approx((1 / 4 + 0 + 1) / 3)
    with pytest.raises(ConfigError, match="fewer than k=4"):
        pass_hat_k(trials, 4)
    with pytest.raises(ConfigError):
        pass_hat_k(trials, 0)


def test_data_dir_resolution(tau2_dir, tmp_path, monkeypatch):
    monkeypatch.delenv("COLLAPSE_PROBE_TAU2_DATA", raising=False)
    with pytest.raises(ConfigError, match="--tau2-data"):
        make_arena("tau2-retail")
    with pytest.raises(ConfigError, match="unknown tau2 domain"):
        make_arena("tau2-bank")
    with pytest.raises(ConfigError, match="unknown option"):
        make_arena("tau2-demo", max_stepz=3)
    official = tmp_path / "repo" / "data" / "tau2" / "domains"
    official.mkdir(parents=True)
    (official / "airline").symlink_to(tau2_dir / "airline")
    assert resolve_domain_dir("airline", tmp_path / "repo") == official / "airline"
    monkeypatch.setenv("COLLAPSE_PROBE_TAU2_DATA", str(tau2_dir))
    arena = make_arena("tau2-retail")
    assert len(arena.load_tasks(split="train")) == 74 and len(arena.load_tasks(split="test")) == 40
    assert [t.task_id for t in arena.load_tasks(5, seed=1)] == [t.task_id for t in arena.load_tasks(5, seed=1)]
    with pytest.raises(ConfigError, match="no split 'dev'"):
        arena.load_tasks(split="dev")
    assert "simulation" in arena.data.guidelines.lower()
    broken = tmp_path / "broken" / "retail"
    broken.mkdir(parents=True)
    (broken / "tasks.json").write_text("[]")
    (broken / "db.json").write_text(json.dumps({"products": {}, "users": {}, "orders": {}, "extra": {}}))
    with pytest.raises(ConfigError, match="unexpected: extra"):
        load_domain("retail", tmp_path / "broken")


def test_demo_domain_ships_and_oracle_wins():
    arena = _demo()
    tasks = arena.load_tasks()
    assert len(tasks) >= 5 and {"train", "test"} <= set(arena.splits)
    for t in tasks:
        assert all(replay_gold("demo", t.task_id).action_ok)
    eps = [drive(arena, t, oracle_turns(t.data["task"]), ["Hello", "###STOP###"]) for t in tasks]
    assert all(s.reward == 1.0 for s in asyncio.run(arena.score(eps)))
