"""τ2-bench full-duplex (voice) simulations read from their ticks.

A voice simulation stores ``messages: null`` and its turns in ``ticks[]`` (``Tick`` of tau2-bench's
``src/tau2/data_model/message.py``): per tick (a slice of time, e.g. 50 ms) the agent's and the user's
chunk (``agent_chunk`` / ``user_chunk``, a message whose ``content`` is the text spoken in that tick,
``utterance_ids`` naming the utterances it belongs to), the tool calls each side made
(``agent_tool_calls`` / ``user_tool_calls``, ``{name, arguments}``) and their results
(``agent_tool_results`` / ``user_tool_results``), and ``user_transcript``, the agent side's transcript
of what it heard the user say. Audio itself is not serialized.

Turns are rebuilt as tau2-bench's own ``merge_message_chunks`` joins chunks: a side's consecutive chunk
texts concatenated, a space between chunks of different utterances. A side's turn lasts from its first
spoken chunk until the other side speaks while this side is silent (in that tick and the one before), or
until this side speaks again after a pause in which the other side spoke: speech that overlaps (an
interruption) does not cut the speaker's turn, a pause does not cut it while the other side stays silent,
and a backchannel ("mhm") is a turn of its own. Turns are ordered by the tick they start in (the agent first within
a tick, as ``Tick.get_all_messages`` orders them); a tool call ends its side's turn and is a message of
its own, followed by its results.

The simulator's words are its chunks' text (what it said). A simulation whose user chunks carry no text
but whose ticks carry ``user_transcript`` is read from the transcripts instead (what the agent heard);
each message records its source in ``meta["source"]``.
"""

from __future__ import annotations

from typing import Any

from collapse_probe.errors import ConfigError

_SIDES = (("policy", "agent"), ("simulator", "user"))
"""(neutral role, the tick fields' prefix) of the two speakers, in the order a tick lists them."""


def _chunk(tick: dict[str, object], field: str, where: str) -> tuple[str, frozenset[str]]:
    """The text a side spoke in a tick and the utterances it belongs to (``""`` for silence)."""
    chunk = tick.get(field)
    if chunk is None:
        return "", frozenset()
    if not isinstance(chunk, dict):
        raise ConfigError(f"{where}.{field}: expected a message object or null, got {type(chunk).__name__}")
    content = chunk.get("content")
    if content is not None and not isinstance(content, str):
        raise ConfigError(f"{where}.{field}.content: expected a string or null, got {type(content).__name__}")
    ids = chunk.get("utterance_ids")
    if ids is not None and not (isinstance(ids, list) and all(isinstance(u, str) for u in ids)):
        raise ConfigError(f"{where}.{field}.utterance_ids: expected a list of strings or null")
    return content or "", frozenset(ids or ())


def _list(tick: dict[str, object], field: str, where: str) -> list[Any]:
    value = tick.get(field)
    if value is None:
        return []
    if not isinstance(value, list):
        raise ConfigError(f"{where}.{field}: expected a list, got {type(value).__name__}")
    return value


class _Turns:
    """The messages being rebuilt from the ticks, with each side's open turn (``[role, text parts, last
    utterance ids, index in out, source]``), the last tick it spoke in and the tick its latest turn began in."""

    def __init__(self) -> None:
        self.out: list[Any] = []
        self.turns: dict[str, list[Any] | None] = {"policy": None, "simulator": None}
        self.last_spoke: dict[str, int] = {"policy": -2, "simulator": -2}
        self.started: dict[str, int] = {"policy": -1, "simulator": -1}  # the tick the side's latest turn began

    def close(self, role: str) -> None:
        from collapse_probe.integrations.interop._published import PublishedMessage

        turn = self.turns[role]
        if turn is not None:
            self.out[turn[3]] = PublishedMessage(role, "".join(turn[1]), (), {"source": turn[4]})
            self.turns[role] = None

    def speak(self, role: str, k: int, text: str, ids: frozenset[str], source: str) -> None:
        """``role`` spoke ``text`` (of utterances ``ids``) in tick ``k``: it opens, continues or ends a turn."""
        other = "simulator" if role == "policy" else "policy"
        last_spoke, started = self.last_spoke, self.started
        # the other side's turn ends once this side speaks while it is silent (in this tick and the
        # one before): speech over the other's (an interruption, a backchannel) leaves it open
        if last_spoke[other] < k - 1:
            self.close(other)
        # and this side's own open turn ended if the other spoke since it began and this side paused
        # (it speaks again after an interruption or a backchannel: a new turn)
        if last_spoke[other] >= started[role] and last_spoke[role] < k - 1:
            self.close(role)
        turn = self.turns[role]
        if turn is None:
            started[role] = k
            turn = [role, [], ids, len(self.out), "transcript" if role == "simulator" and source == "transcript"
                    else "chunks"]  # fmt: skip
            self.out.append(None)
            self.turns[role] = turn
        elif ids and turn[2] and ids.isdisjoint(turn[2]):
            turn[1].append(" ")  # a new utterance within the turn, spaced as tau2-bench merges them
        turn[1].append(text)
        turn[2] = ids or turn[2]
        last_spoke[role] = k


def _source(ticks: list[Any], where: str) -> str:
    """Checks each tick is an object; the source of the simulator's text: ``"chunks"`` when a user chunk
    carries text or no tick carries a transcript, else ``"transcript"``."""
    for k, tick in enumerate(ticks):
        if not isinstance(tick, dict):
            raise ConfigError(f"{where}: ticks[{k}]: expected a tick object, got {type(tick).__name__}")
    spoken = any(_chunk(t, "user_chunk", f"{where}: ticks[{k}]")[0].strip() for k, t in enumerate(ticks))
    return "chunks" if spoken or not any(isinstance(t.get("user_transcript"), str) and t["user_transcript"].strip()
                                         for t in ticks) else "transcript"  # fmt: skip


def _said(tick: dict[str, object], role: str, side: str, source: str, at: str) -> tuple[str, frozenset[str]]:
    """What a side said in a tick and its utterances (the simulator's from the transcript, when that is the source)."""
    if role == "simulator" and source == "transcript":
        raw = tick.get("user_transcript")
        if raw is not None and not isinstance(raw, str):
            raise ConfigError(f"{at}.user_transcript: expected a string or null, got {type(raw).__name__}")
        return raw or "", frozenset[str]()
    return _chunk(tick, f"{side}_chunk", at)


def _tool_calls(tick: dict[str, object], side: str, at: str) -> tuple[tuple[str, str], ...]:
    """A side's tool calls in a tick as ``(name, canonical arguments)``."""
    from collapse_probe.integrations.interop._published import canonical_arguments

    parsed = []
    for j, c in enumerate(_list(tick, f"{side}_tool_calls", at)):
        if not isinstance(c, dict) or not isinstance(c.get("name"), str) or not c["name"]:
            raise ConfigError(f"{at}.{side}_tool_calls[{j}]: expected a tool call {{name, arguments}}")
        parsed.append((c["name"], canonical_arguments(c.get("arguments", {}), f"{at}.{side}_tool_calls[{j}]")))
    return tuple(parsed)


def _tool_results(tick: dict[str, object], side: str, at: str) -> list[Any]:
    """A side's tool results in a tick as ``tool`` messages."""
    from collapse_probe.integrations.interop._published import PublishedMessage

    out = []
    for j, r in enumerate(_list(tick, f"{side}_tool_results", at)):
        content = r.get("content") if isinstance(r, dict) else None
        if not isinstance(r, dict) or (content is not None and not isinstance(content, str)):
            raise ConfigError(f"{at}.{side}_tool_results[{j}]: expected a tool message {{content}}")
        out.append(PublishedMessage("tool", content or ""))
    return out


def messages_from_ticks(ticks: list[Any], where: str) -> tuple[list[Any], str]:
    """The turns of a full-duplex simulation, rebuilt from its ticks, and the source of the simulator's
    text (``"chunks"`` or ``"transcript"``).

    Raises:
        ConfigError: a tick or one of its fields has the wrong shape (naming ``where``, the tick and the field).
    """
    from collapse_probe.integrations.interop._published import PublishedMessage

    source = _source(ticks, where)
    state = _Turns()
    for k, tick in enumerate(ticks):
        at = f"{where}: ticks[{k}]"
        for role, side in _SIDES:
            text, ids = _said(tick, role, side, source, at)
            if text:
                state.speak(role, k, text, ids, source)
            calls = _tool_calls(tick, side, at)
            if calls:
                state.close(role)
                state.out.append(PublishedMessage(role, "", calls))
            state.out.extend(_tool_results(tick, side, at))
    state.close("policy")
    state.close("simulator")
    return [m for m in state.out if m is not None], source
