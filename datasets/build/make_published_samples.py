"""Write the small published-format samples shipped in ``collapse_probe/data/published/`` (all text written
for this project; the field layout follows each framework's source, cited in the readers' docstrings).

Every sample holds 3 customer-service tasks with 4 trials each; the simulated user's opening reply is
drawn from a known distribution per task (seeded), so ``collapse-probe audit --from SAMPLE`` has shared-prefix
states to measure. The two τ2 voice files are one agent under two user simulators: the second simulator
draws from narrower distributions (it says the same thing more often).

    python datasets/build/make_published_samples.py [--out DIR]   # rewrites the files; the output is deterministic
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parents[2] / "collapse_probe" / "data" / "published"
"""The shipped dataset's directory in the source tree (``--out`` writes elsewhere)."""
GREETING = "Hi! How can I help you today?"
TRIALS = 4
TASKS: dict[str, dict[str, Any]] = {
    "0": {
        "scenario": "You ordered a blue jacket (order #W1001) that arrived torn. You want a refund to your card.",
        "openings": [("Hi, the jacket I ordered arrived torn and I'd like a refund.", 0.5),
                     ("My order W1001 came damaged. Can I get my money back?", 0.3),
                     ("I need to return a jacket, it has a hole in it.", 0.2)],
        "follow": "It's order W1001, and please refund it to my card.",
        "tool": ("get_order_details", {"order_id": "#W1001"}),
        "result": '{"order_id": "#W1001", "status": "delivered", "items": ["blue jacket"]}',
        "answer": "I can refund the jacket to your card. Shall I go ahead?",
        "reward": {"refund": 1.0},
    },
    "1": {
        "scenario": "You want to change the shipping address of order #W2002 to 12 Oak Street before it ships.",
        "openings": [("Hello, I need to change the address on my order.", 0.6),
                     ("Can you update where order W2002 is being shipped?", 0.4)],
        "follow": "The new address is 12 Oak Street.",
        "tool": ("get_order_details", {"order_id": "#W2002"}),
        "result": '{"order_id": "#W2002", "status": "pending"}',
        "answer": "I have updated the address to 12 Oak Street.",
        "reward": {"address": 1.0},
    },
    "2": {
        "scenario": "You were charged twice for order #W3003 and want one charge reversed.",
        "openings": [("I was charged twice for the same order.", 0.4),
                     ("There are two charges on my card for order W3003.", 0.35),
                     ("Why did you bill me two times?", 0.25)],
        "follow": "Yes, order W3003, both charges were on Monday.",
        "tool": ("get_order_details", {"order_id": "#W3003"}),
        "result": '{"order_id": "#W3003", "payments": 2}',
        "answer": "I see the duplicate charge and have reversed one of them.",
        "reward": {"duplicate": 0.0},
    },
}  # fmt: skip
"""Task id -> the user's scenario, the distribution of its opening reply, the rest of a scripted exchange."""
NARROW = {"0": 0, "1": 0, "2": 0}
"""The second voice simulator's favourite opening per task (drawn with probability 0.85)."""


def _draw(rng: random.Random, task: dict[str, Any], narrow: bool, tid: str) -> str:
    texts = [t for t, _ in task["openings"]]
    if narrow:
        return texts[NARROW[tid]] if rng.random() < 0.85 else rng.choice(texts)
    return rng.choices(texts, weights=[w for _, w in task["openings"]])[0]


def _success(opening: str, task: dict[str, Any]) -> float:
    # the agent finds the order at once when the opening names it, else it needs the follow-up: both succeed
    # on the tasks it can do, and never on the duplicate charge (it may not reverse payments)
    return 0.0 if "duplicate" in task["reward"] else 1.0


# --- τ2 voice: messages null, turns in ticks -------------------------------------------------------------
def _speak(ticks: list[dict[str, Any]], start: int, side: str, text: str, utterance: str) -> int:
    """Spread ``text`` over ticks from ``start``, two words a tick; returns the first tick after it."""
    words = text.split(" ")
    k = start
    for i in range(0, len(words), 2):
        piece = " ".join(words[i : i + 2]) + (" " if i + 2 < len(words) else "")
        tick = _tick(ticks, k)
        tick[f"{side}_chunk"] = {"role": "assistant" if side == "agent" else "user", "content": piece,
                                 "is_audio": True, "utterance_ids": [utterance], "chunk_id": i // 2,
                                 "contains_speech": True, "timestamp": f"2026-01-01T00:00:{k // 20:02d}"}  # fmt: skip
        if side == "user":  # the agent side's transcript of what it heard (proportional, lower-cased)
            tick["user_transcript"] = piece.lower().replace(",", "")
        k += 1
    return k


def _tick(ticks: list[dict[str, Any]], k: int) -> dict[str, Any]:
    while len(ticks) <= k:
        ticks.append({"tick_id": len(ticks), "timestamp": f"2026-01-01T00:00:{len(ticks) // 20:02d}",
                      "agent_chunk": None, "user_chunk": None, "agent_tool_calls": [], "user_tool_calls": [],
                      "agent_tool_results": [], "user_tool_results": [], "user_transcript": None,
                      "tick_duration_seconds": 0.05})  # fmt: skip
    return ticks[k]


def _voice_simulation(tid: str, trial: int, rng: random.Random, narrow: bool) -> dict[str, Any]:
    task = TASKS[tid]
    ticks: list[dict[str, Any]] = []
    k = _speak(ticks, 0, "agent", GREETING, "a0")
    opening = _draw(rng, task, narrow, tid)
    k = _speak(ticks, k + 3, "user", opening, "u0")
    name, args = task["tool"]
    tick = _tick(ticks, k + 2)
    tick["agent_tool_calls"] = [
        {"id": f"call_{tid}_{trial}", "name": name, "arguments": args, "requestor": "assistant"}
    ]
    tick["agent_tool_results"] = [{"id": f"call_{tid}_{trial}", "role": "tool", "content": task["result"],
                                   "requestor": "assistant", "error": False}]  # fmt: skip
    k = _speak(ticks, k + 3, "agent", "Could you confirm the order number?", "a1")
    if trial % 2 == 1:  # the user starts answering before the agent has finished (an interruption)
        k -= 1
    k = _speak(ticks, k + 2, "user", task["follow"], "u1")
    k = _speak(ticks, k + 3, "agent", task["answer"], "a2")
    _speak(ticks, k + 3, "user", "Thanks, that's all.", "u2")
    reward = _success(opening, task)
    return {"id": f"voice-{tid}-{trial}", "task_id": tid, "trial": trial, "timestamp": "2026-01-01T00:00:00",
            "start_time": "2026-01-01T00:00:00", "end_time": "2026-01-01T00:01:00", "duration": 60.0,
            "termination_reason": "user_stop", "reward_info": {"reward": reward}, "messages": None,
            "ticks": ticks, "mode": "full_duplex", "seed": 1000 + trial}  # fmt: skip


def _tau2_voice(user_llm: str, narrow: bool, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    tasks = [{"id": tid, "user_scenario": {"persona": None, "instructions": {
        "domain": "retail", "reason_for_call": t["scenario"], "known_info": None, "unknown_info": None,
        "task_instructions": "Speak naturally; end the call once your problem is solved."}}} for tid, t in TASKS.items()]  # fmt: skip
    return {
        "timestamp": "2026-01-01T00:00:00",
        "info": {
            "git_commit": "sample",
            "num_trials": TRIALS,
            "max_steps": 2400,
            "max_errors": 10,
            "user_info": {
                "implementation": "user_simulator_streaming",
                "llm": user_llm,
                "llm_args": {"temperature": 1.0},
            },
            "agent_info": {
                "implementation": "audio_native_agent",
                "llm": "voice-agent-1",
                "llm_args": {"temperature": 0.0},
            },
            "environment_info": {"domain_name": "retail"},
            "seed": seed,
        },  # fmt: skip
        "tasks": tasks,
        "simulations": [_voice_simulation(tid, n, rng, narrow) for tid in TASKS for n in range(TRIALS)],
    }


# --- verifiers traces.jsonl: the user-sim environment (an untrainable user, a trainable assistant) ------------
def _node(parent: int | None, role: str, content: str | None, sampled: bool = False, **extra: Any) -> dict[str, Any]:
    return {"parent": parent, "message": {"role": role, "content": content, **extra}, "sampled": sampled,
            "timestamp": 1767225600.0}  # fmt: skip


def _chain(messages: list[tuple[str, str | None, bool, dict[str, Any]]]) -> list[dict[str, Any]]:
    return [_node(i - 1 if i else None, r, c, s, **x) for i, (r, c, s, x) in enumerate(messages)]


def _verifiers_episode(tid: str, trial: int, rng: random.Random) -> dict[str, Any]:
    task = TASKS[tid]
    opening = _draw(rng, task, False, tid)
    name, args = task["tool"]
    call = {"id": f"call_{tid}_{trial}", "name": name, "arguments": json.dumps(args)}
    persona = f"You are role-playing a USER talking to an AI assistant. Your situation:\n\n{task['scenario']}"
    user_nodes = _chain([
        ("system", persona, False, {}), ("user", GREETING, False, {}), ("assistant", opening, True, {}),
        ("user", "Could you confirm the order number?", False, {}), ("assistant", task["follow"], True, {}),
        ("user", task["answer"], False, {}), ("assistant", "###DONE###", True, {}),
    ])  # fmt: skip
    assistant_nodes = _chain([
        ("system", "You are a retail support agent.", False, {}), ("user", opening, False, {}),
        ("assistant", None, True, {"tool_calls": [call]}),
        ("tool", task["result"], False, {"tool_call_id": call["id"], "name": name}),
        ("assistant", "Could you confirm the order number?", True, {}), ("user", task["follow"], False, {}),
        ("assistant", task["answer"], True, {}),
    ])  # fmt: skip
    data = {"idx": int(tid), "prompt": task["scenario"], "answer": json.dumps(task["reward"])}
    trace_task = {"type": "Task", "data": data, "key": f"retail-{tid}", "hash": f"h{tid}"}
    reward = _success(opening, task)

    def trace(
        name_: str, trainable: bool, model: str, nodes: list[dict[str, Any]], rewards: dict[str, Any]
    ) -> dict[str, Any]:
        return {"version": 1, "id": f"{name_}-{tid}-{trial}", "verifiers": {"version": "1.0.0"}, "task": trace_task,
                "agent": {"config": {"model": model}, "name": name_, "trainable": trainable},
                "nodes": nodes, "calls": [{"node": i, "model": model} for i, n in enumerate(nodes) if n["sampled"]],
                "rewards": rewards, "metrics": {}, "info": {}, "ok": True, "errors": []}  # fmt: skip

    return {"id": f"ep-{tid}-{trial}", "env": {"id": "user-sim+retail-sample"}, "task": trace_task,
            "group": {"id": f"g-{tid}"}, "ok": True, "errors": [],
            "traces": [trace("assistant", True, "agent-model-1", assistant_nodes, {"resolved": {"score": reward, "weight": 1.0}}),
                       trace("user", False, "user-sim-model-1", user_nodes, {})]}  # fmt: skip


# --- verifiers results.jsonl (legacy): prompt / completion, the environment's user turns -----------------------
def _legacy_row(tid: str, trial: int, rng: random.Random) -> dict[str, Any]:
    task = TASKS[tid]
    opening = _draw(rng, task, False, tid)
    name, args = task["tool"]
    call = json.dumps(
        {"id": f"call_{tid}_{trial}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
    )
    prompt = [{"role": "system", "content": "You are a retail support agent."},
              {"role": "user", "content": f"Customer scenario: {task['scenario']}"}]  # fmt: skip
    completion = [{"role": "assistant", "content": GREETING}, {"role": "user", "content": opening},
                  {"role": "assistant", "content": "", "tool_calls": [call]},
                  {"role": "tool", "content": task["result"], "tool_call_id": f"call_{tid}_{trial}"},
                  {"role": "assistant", "content": task["answer"]}]  # fmt: skip
    return {"example_id": int(tid), "prompt": prompt, "completion": completion, "answer": "", "task": "default",
            "info": {"order": task["tool"][1]["order_id"]}, "reward": _success(opening, task), "error": None,
            "timing": {"generation_ms": 1200.0, "scoring_ms": 5.0, "total_ms": 1205.0}, "is_completed": True,
            "is_truncated": False, "stop_condition": "no_tools", "metrics": {}}  # fmt: skip


# --- NeMo-Gym rollouts.jsonl: Responses-API input / output items --------------------------------------------
def _msg(role: str, text: str) -> dict[str, Any]:
    kind = "output_text" if role == "assistant" else "input_text"
    return {"type": "message", "role": role, "content": [{"type": kind, "text": text, "annotations": []}]}


def _gym_row(tid: str, trial: int, rng: random.Random) -> dict[str, Any]:
    task = TASKS[tid]
    first = f"I'm calling about this: {task['scenario']}"
    reply = _draw(rng, task, False, tid)
    name, args = task["tool"]
    output = [
        {"id": f"rs_{tid}{trial}", "type": "reasoning", "summary": [{"type": "summary_text", "text": "Look up the order."}]},
        {"type": "function_call", "call_id": f"call_{tid}_{trial}", "name": name, "arguments": json.dumps(args),
         "id": f"fc_{tid}{trial}", "status": "completed"},
        {"type": "function_call_output", "call_id": f"call_{tid}_{trial}", "output": task["result"]},
        {**_msg("assistant", "I found your order. What exactly went wrong?"), "id": f"msg_{tid}{trial}a", "status": "completed"},
        _msg("user", reply),
        {**_msg("assistant", task["answer"]), "id": f"msg_{tid}{trial}b", "status": "completed"},
    ]  # fmt: skip
    return {
        "responses_create_params": {
            "input": [
                {"type": "message", "role": "system", "content": "You are a retail support agent."},
                {"type": "message", "role": "user", "content": first},
            ],
            "tools": [{"type": "function", "name": name, "parameters": {"type": "object"}}],
            "temperature": 1.0,
        },  # fmt: skip
        "response": {
            "id": f"resp_{tid}{trial}",
            "object": "response",
            "model": "agent-model-1",
            "status": "completed",
            "error": None,
            "output": output,
            "usage": {"input_tokens": 300, "output_tokens": 60},
        },  # fmt: skip
        "reward": _success(reply, task),
        "_ng_task_index": int(tid),
        "_ng_rollout_index": trial,
        "agent_ref": {"type": "responses_api_agents", "name": "retail_simple_agent"},
    }


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help=f"directory to write the samples to (default {OUT})")
    out = parser.parse_args(argv).out
    out.mkdir(parents=True, exist_ok=True)
    (out / "verifiers-legacy").mkdir(exist_ok=True)
    for name, llm, narrow, seed in (("tau2-voice-sim-a.json", "user-sim-model-1", False, 11),
                                    ("tau2-voice-sim-b.json", "user-sim-model-2", True, 12)):  # fmt: skip
        data = _tau2_voice(llm, narrow, seed)
        for sim in data["simulations"]:  # a silent tick keeps its id and time only (the reader needs no more)
            sim["ticks"] = [{k: v for k, v in t.items() if v or k == "tick_id"} for t in sim["ticks"]]
        (out / name).write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    rng = random.Random(21)
    _jsonl(out / "verifiers-traces.jsonl", [_verifiers_episode(t, n, rng) for t in TASKS for n in range(TRIALS)])
    rng = random.Random(22)
    _jsonl(out / "verifiers-legacy" / "results.jsonl", [_legacy_row(t, n, rng) for t in TASKS for n in range(TRIALS)])
    (out / "verifiers-legacy" / "metadata.json").write_text(json.dumps(
        {"env_id": "retail-sample", "model": "agent-model-1", "num_examples": len(TASKS),
         "rollouts_per_example": TRIALS, "sampling_args": {"temperature": 1.0}}, indent=1) + "\n", encoding="utf-8")  # fmt: skip
    rng = random.Random(23)
    _jsonl(out / "nemo-gym-rollouts.jsonl", [_gym_row(t, n, rng) for t in TASKS for n in range(TRIALS)])


if __name__ == "__main__":
    main()
