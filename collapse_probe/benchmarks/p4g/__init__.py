"""Persuasion for Good (Wang et al., 2019): a persuader asks a donor to give to Save the Children.

The persuader is the policy; the persuadee (donor) is the simulator, conditioned on a donor
persona with the P4G survey fields (Big-Five, moral foundations, Schwartz values, decision style,
demographics). The donor can give any part of their $2 task payment and states it as
``[DONATE $N]``. Reward = min(donation / 2, 1) from the donor's *last* ``[DONATE $N]``; when the
conversation ends without one, a closing elicitation turn asks the donor for the amount. A donor
who still names no amount has given nothing (reward 0, ``donation_stated: false`` in the info).

One *turn* (``max_turns``) is one persuader message followed by one persuadee reply.
"""

from __future__ import annotations

import csv
import json
import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, TypedDict

from pydantic import Field, JsonValue

from collapse_probe.benchmarks._base import Episode, EpisodeMessage, ProbeSpec, Score, Side, Task, TurnPrompt
from collapse_probe.benchmarks._plugin import Benchmark, BenchmarkOptions, BuildContext
from collapse_probe.benchmarks.p4g._text import (
    MAX_DONATION,
    HumanDialogue,
    Persona,
    _money,
    p4g_label,
    parse_donation,
)
from collapse_probe.benchmarks.p4g._text import spoken_donation as spoken_donation
from collapse_probe.core._resources import datasets_dir
from collapse_probe.core.limits import MAX_TURNS
from collapse_probe.errors import ConfigError
from collapse_probe.models import Completion

DEFAULT_MAX_TURNS = 3
PERSUADER, PERSUADEE = "Persuader", "Persuadee"
OPENINGS = (
    "Hi! How are you doing today? Have you heard of the charity Save the Children?",
    "Hello there! Would you be willing to donate some of your task payment to Save the Children?",
    "Hey, how's it going? Do you ever donate to charities that help kids?",
    "Hi! I'm collecting donations for Save the Children, which helps children in developing countries. Could you spare part of your $2?",
)
"""Fixed human-style persuader openings of the audit's probe states, used when no policy writes one."""
DONATION_GRID = (0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0)
"""The closed answer set at the elicitation state: donations on a $0.25 grid from $0 to $2."""
ELICITATION = (
    "Before we finish: how much of your $2 task payment would you like to donate to Save the Children? "
    "Please answer with [DONATE $N], for example [DONATE $0.50] or [DONATE $0]."
)

BIG_FIVE = ("extrovert", "agreeable", "conscientious", "neurotic", "open")
MORAL = ("care", "fairness", "loyalty", "authority", "purity")
SCHWARTZ = (
    "freedom",
    "conform",
    "tradition",
    "benevolence",
    "universalism",
    "self_direction",
    "stimulation",
    "hedonism",
    "achievement",
    "power",
    "security",
)
DECISION = ("rational", "intuitive")
DEMOGRAPHICS = ("age", "sex", "race", "edu", "marital", "employment", "income", "religion", "ideology")
SCORE_FIELDS = BIG_FIVE + MORAL + SCHWARTZ + DECISION
PERSONA_FIELDS = SCORE_FIELDS + DEMOGRAPHICS


def donor_stance(text: str, context: str | None = None) -> Any:
    """The decision a donor reply states, read from free text: ``"donate:$X"`` (an amount in a tag, in
    figures or in words), ``"donate"`` (a commitment without an amount), ``"refuse"`` (including a $0
    donation), ``"undecided"``, a question (``KeyFamily("question")``: never the same meaning as a decision, but two
    questions join only by distance), or ``None`` when the reply states no decision (small talk).

    Unlike :func:`p4g_label`, which reads what the *reward* reads
    (only a ``[DONATE $N]`` tag counts), this reads what the reply *means*: "Okay, count me in for a
    dollar" and "[DONATE $1]" both state ``donate:$1``. The semantic partition uses it as a constraint
    on sentence-embedding clusters (:class:`~collapse_probe.metrics.partitioners.EmbeddingPartitioner`):
    replies stating the same decision share a class and replies stating different decisions never do,
    which is what a general-purpose sentence encoder gets wrong ("I'll donate $1" and "I'd rather not
    donate" are closer than most paraphrases).

    The stance (donate / refuse / no decision) is read by a model fitted to people's annotated dialogue
    acts when the ``embed`` extra is installed, by rules otherwise
    (:class:`~collapse_probe.benchmarks.p4g.stance.StanceReader`; measured on held-out annotated
    dialogues by ``python benchmarks/stance_accuracy.py``, see ``docs/stance-reader.md``). A reply of
    several sentences states its strongest decision. ``context``, the persuader's last message, settles
    what a bare "No." means: a refusal after talk of giving, an answer after "Have you heard of Save the
    Children?" (without it, a refusal). For many replies at once use
    :func:`~collapse_probe.benchmarks.p4g.stance.stance_keys` (one encoder batch).

    Example:
        >>> [donor_stance(t) for t in ("Sure, I'll donate $1.", "I'll pass.", "Maybe later.", "Who runs it?")]
        ['donate:$1', 'refuse', 'undecided', KeyFamily(name='question')]
    """
    from collapse_probe.benchmarks.p4g.stance import default_stance_reader

    return default_stance_reader()(text, context)


def donation_answers() -> list[tuple[str, str]]:
    """The closed answer set at the elicitation state: ``[DONATE $0]`` … ``[DONATE $2]`` on the
    :data:`DONATION_GRID`, each with its decision class (prefix-free: the closing bracket ends each)."""
    choices = [f"[DONATE {_money(a)}]" for a in DONATION_GRID]
    return [(c, p4g_label(c)) for c in choices]


def donation_reward(donation: float | None) -> float:
    """min(donation / 2, 1); no stated donation counts as $0."""
    if donation is None:
        return 0.0
    return min(max(donation, 0.0) / MAX_DONATION, 1.0)


# ----------------------------------------------------------------------------------------------- personas


def default_datasets_dir() -> Path:
    """The shipped datasets, ``collapse_probe/data`` (``$COLLAPSE_PROBE_DATASETS`` overrides)."""
    return datasets_dir()


def load_personas(path: str | Path | None = None) -> list[Persona]:
    """Load a persona file (JSONL, one object per line with ``persona_id`` and the survey fields).

    Raises:
        ConfigError: the file is missing, a line is not JSON, or a field is missing or malformed.
    """
    p = Path(path) if path is not None else default_datasets_dir() / "p4g" / "personas.jsonl"
    personas = []
    for i, line in enumerate(_persona_text(p).splitlines(), start=1):
        if not line.strip():
            continue
        obj = _persona_line(p, i, line)
        _check_persona(p, i, obj)
        personas.append(obj)
    if not personas:
        raise ConfigError(f"{p}: no personas in the file")
    return personas


def _persona_text(p: Path) -> str:
    """The persona file's text.

    Raises:
        ConfigError: the file is missing, unreadable or not UTF-8.
    """
    from collapse_probe.core._files import FileProblem, MissingFile, read_bytes

    try:
        raw = read_bytes(p, expected="a JSONL persona file")
    except MissingFile:
        raise ConfigError(f"persona file {str(p)!r} does not exist") from None
    except FileProblem as exc:
        raise ConfigError(f"persona file {exc}") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{p}: not UTF-8 text (byte {exc.start}); expected a UTF-8 JSONL persona file") from None


def _persona_line(p: Path, i: int, line: str) -> Persona:
    """Line ``i`` of the persona file as a JSON object with a ``persona_id`` and every persona field.

    Raises:
        ConfigError: naming the file and the line.
    """
    from collapse_probe.core._files import lone_surrogate_at

    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{p}: line {i} is not valid JSON ({exc.msg})") from None
    except RecursionError:
        raise ConfigError(f"{p}: line {i} is JSON nested too deeply") from None
    except ValueError:  # an integer too long to convert
        raise ConfigError(f"{p}: line {i} holds an integer too long to convert") from None
    at = lone_surrogate_at(obj)
    if at is not None:
        raise ConfigError(f"{p}: line {i}: {at or 'the line'} holds a lone surrogate (\\ud800-\\udfff), not text")
    if not isinstance(obj, dict):
        raise ConfigError(f"{p}: line {i}: expected a JSON object")
    if "persona_id" not in obj:
        raise ConfigError(f"{p}: line {i}: missing field 'persona_id'")
    for f in PERSONA_FIELDS:
        if f not in obj:
            raise ConfigError(f"{p}: line {i} (persona {obj['persona_id']!r}): missing field {f!r}")
    return obj


def _check_persona(p: Path, i: int, obj: Persona) -> None:
    """Refuse a persona whose survey scores are not numbers or whose demographics are of the wrong type.

    Raises:
        ConfigError: naming the file, the line, the persona and the field.
    """
    for f in SCORE_FIELDS:
        v = obj[f]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise ConfigError(f"{p}: line {i} (persona {obj['persona_id']!r}): field {f!r} must be a number, got {v!r}")
    for f in DEMOGRAPHICS:
        v = obj[f]
        if f == "age":
            ok = v is None or (not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(v))
            want = "a number or null"
        elif f == "income":
            ok = v is None or isinstance(v, (str, int, float)) and not isinstance(v, bool)
            want = "a string, a number or null"
        else:
            ok = v is None or isinstance(v, str)
            want = "a string or null"
        if not ok:
            raise ConfigError(f"{p}: line {i} (persona {obj['persona_id']!r}): field {f!r} must be {want}, got {v!r}")


def load_official_p4g(directory: str | Path) -> tuple[list[Persona], list[HumanDialogue]]:
    """Read the official ``full_info.csv`` and ``full_dialog.csv``: persuadee personas and dialogues.

    Consecutive sentences of one speaker in ``full_dialog.csv`` are joined into one turn.

    Raises:
        ConfigError: a file or a required column is missing.
    """
    d = Path(directory)
    info_p, dialog_p = d / "full_info.csv", d / "full_dialog.csv"
    for p in (info_p, dialog_p):
        if not p.is_file():
            raise ConfigError(
                f"official P4G file {str(p)!r} does not exist (expected full_info.csv and full_dialog.csv in {d})"
            )
    personas: dict[str, Persona] = {}
    with open(info_p, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        need = {"B2", "B3", "B4", "B6"} | {f"{k}.x" for k in PERSONA_FIELDS}
        missing = need - set(reader.fieldnames or [])
        if missing:
            raise ConfigError(f"{info_p}: missing columns {sorted(missing)}")
        for row in reader:
            if row["B4"].strip() != "1":
                continue
            persona: Persona = {"persona_id": f"{row['B2']}:{row['B3']}", "dialogue_id": row["B2"]}
            for k in PERSONA_FIELDS:
                raw = row[f"{k}.x"].strip()
                if k in SCORE_FIELDS or k in ("age", "income"):
                    persona[k] = float(raw) if raw not in ("", "NA") else None
                else:
                    persona[k] = raw or None
            try:
                persona["donation"] = min(float(row["B6"]), MAX_DONATION)
            except ValueError:
                persona["donation"] = None
            personas[row["B2"]] = persona
    by_dialog: dict[str, list[tuple[str, str]]] = {}
    with open(dialog_p, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        missing = {"Unit", "Turn", "B4", "B2"} - set(reader.fieldnames or [])
        if missing:
            raise ConfigError(f"{dialog_p}: missing columns {sorted(missing)}")
        for row in reader:
            speaker = "policy" if row["B4"].strip() == "0" else "simulator"
            turns = by_dialog.setdefault(row["B2"], [])
            text = row["Unit"].strip()
            if turns and turns[-1][0] == speaker:
                turns[-1] = (speaker, f"{turns[-1][1]} {text}")
            else:
                turns.append((speaker, text))
    dialogues = [
        HumanDialogue(did, turns, personas.get(did, {}), _number(personas.get(did, {}).get("donation")))
        for did, turns in by_dialog.items()
    ]
    return [p for p in personas.values() if all(p.get(k) is not None for k in SCORE_FIELDS)], dialogues


def _level(v: float, hi: float) -> str:
    frac = (v - 1) / (hi - 1)
    return (
        "very low"
        if frac < 0.2
        else "low"
        if frac < 0.4
        else "moderate"
        if frac < 0.6
        else "high"
        if frac < 0.8
        else "very high"
    )


def _number(v: JsonValue) -> float | None:
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _score(p: Persona, field: str) -> float:
    """A survey score of ``p`` (a number in a checked persona)."""
    v = p[field]
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TypeError(f"persona field {field!r} must be a number, got {v!r}")
    return v


def _lowered(v: JsonValue) -> str | None:
    """A demographic text in lower case (``None`` when empty or not given)."""
    return v.lower() or None if isinstance(v, str) else None


def describe_persona(p: Persona) -> str:
    """A short second-person description of a donor persona for the simulator's role prompt."""
    age = _number(p.get("age"))
    demo = ", ".join(
        str(x)
        for x in (
            f"{int(age)} years old" if age else None,
            _lowered(p.get("sex")),
            _lowered(p.get("marital")),
            _lowered(p.get("employment")),
            _lowered(p.get("edu")),
            p.get("religion"),
            _lowered(p.get("ideology")),
        )
        if x
    )
    traits = ", ".join(
        f"{_level(_score(p, k), 5)} {k}" for k in ("extrovert", "agreeable", "conscientious", "neurotic", "open")
    )
    values = sorted(SCHWARTZ, key=lambda k: -_score(p, k))[:3]
    moral = max(MORAL, key=lambda k: _score(p, k))
    style = "rational" if _score(p, "rational") >= _score(p, "intuitive") else "intuitive"
    return (
        f"You are {demo}. Personality: {traits}. You value {', '.join(v.replace('_', '-') for v in values)} most, "
        f"your strongest moral concern is {moral}, and you decide in {'an' if style == 'intuitive' else 'a'} {style} way."
    )


# ----------------------------------------------------------------------------------------------- arena


@dataclass
class P4GArena:
    """The P4G arena. Tasks are donor personas.

    Args:
        personas: persona dicts (default: the shipped ``collapse_probe/data/p4g/personas.jsonl``).
        max_turns: persuader+persuadee rounds before the elicitation turn.
        elicit: ask for the amount when no ``[DONATE $N]`` was stated.
        max_tokens: per-turn token budget of both sides.
    """

    personas: list[Persona] | None = None
    max_turns: int = 3
    """Persuader+persuadee rounds (``None``: :data:`DEFAULT_MAX_TURNS`)."""
    elicit: bool = True
    max_tokens: int = 64
    name: str = "p4g"
    reward_range: ClassVar[tuple[float, float]] = (0.0, 1.0)
    """min(donation / 2, 1) lies in [0, 1] (see :func:`~collapse_probe.benchmarks.declared_reward_range`)."""

    def __post_init__(self) -> None:
        if self.max_turns is None:
            self.max_turns = DEFAULT_MAX_TURNS
        if self.max_turns < 1:
            raise ConfigError(f"--max-turns must be >= 1, got {self.max_turns}")
        if self.personas is None:
            self.personas = load_personas()

    # --- tasks
    def load_tasks(self, n: int | None = None, split: str | None = None, seed: int = 0) -> list[Task]:
        assert self.personas is not None
        order = list(range(len(self.personas)))
        random.Random(seed).shuffle(order)
        if n is not None:
            if n < 1:
                raise ConfigError(f"--tasks must be >= 1, got {n}")
            if n > len(order):
                raise ConfigError(f"--tasks {n} exceeds the {len(order)} personas available")
            order = order[:n]
        return [Task(str(self.personas[i]["persona_id"]), {"persona": self.personas[i]}, split) for i in order]

    def new_episode(self, task: Task, seed: int) -> Episode:
        return Episode(task=task, seed=seed, state={"rounds": 0, "elicited": False})

    def load_human_dialogues(self, directory: str | Path) -> tuple[list[HumanDialogue], list[HumanDialogue]]:
        """The audit hook ``load_human_dialogues``: the official dialogues in ``directory`` and those of
        them with annotated sentence acts (``[]`` without ``annotated_dialog.csv``)."""
        from collapse_probe.benchmarks.p4g.stance import load_annotated_dialogues

        _, dialogues = load_official_p4g(directory)
        return dialogues, load_annotated_dialogues(directory, dialogues)

    def human_dialogue_usable(self, dialogue: HumanDialogue) -> bool:
        """The audit hook ``human_dialogue_usable``: a complete persuadee survey and at least 2 turns."""
        persona = dialogue.persuadee
        return bool(persona) and all(persona.get(k) is not None for k in SCORE_FIELDS) and len(dialogue.turns) >= 2

    def episode_from_dialogue(self, dialogue: HumanDialogue, n_turns: int, task: Task | None = None) -> Episode:
        """An episode holding the first ``n_turns`` human turns (a probe state for audits)."""
        task = task or Task(dialogue.dialogue_id, {"persona": dialogue.persuadee}, "human")
        ep = self.new_episode(task, 0)
        for speaker, text in dialogue.turns[:n_turns]:
            ep.messages.append({"role": speaker, "content": text})
        ep.state["rounds"] = ep.turns("simulator")
        return ep

    # --- turn taking
    def next_side(self, episode: Episode) -> Side | None:
        if episode.done:
            return None
        last = episode.messages[-1]["role"] if episode.messages else None
        if last in (None, "simulator"):
            if episode.state["rounds"] < self.max_turns:
                return "policy"
            if self.elicit and not episode.state["elicited"] and self.stated_donation(episode) is None:
                episode.state["elicited"] = True
                episode.messages.append({"role": "policy", "content": ELICITATION, "meta": {"elicitation": True}})
                return "simulator"
            episode.done = True
            episode.status = "done" if self.stated_donation(episode) is not None else "no_donation_stated"
            return None
        return "simulator"

    def apply(self, episode: Episode, side: Side, completion: Completion, text: str) -> None:
        episode.messages.append({"role": side, "content": _clean_turn(text)})
        if side == "simulator":
            episode.state["rounds"] += 1

    # --- prompts
    def persuader_system(self) -> str:
        return (
            "You are the Persuader. You work for the charity Save the Children and are chatting online with "
            "another crowd worker (the Persuadee). Your goal is to persuade them to donate part of their $2 task "
            "payment to Save the Children, which helps children in developing countries with health, education "
            "and safety. Be friendly and brief: one or two sentences per message."
        )

    def persuadee_system(self, persona: Persona) -> str:
        # The persona comes last: every donor prompt then opens with the same instructions, which a
        # local backend prefills once for the whole batch.
        return (
            "You are the Persuadee, a crowd worker chatting online. You were paid $2 for this task and may "
            "donate any part of it ($0 to $2) to Save the Children, or nothing. Answer in one or two sentences, "
            f"as yourself. When you decide how much to donate, say it as [DONATE $N]. {describe_persona(persona)}"
        )

    def prompt_for(self, episode: Episode, side: Side) -> TurnPrompt:
        persona = episode.task.data["persona"]
        system = self.persuader_system() if side == "policy" else self.persuadee_system(persona)
        opener = "(The Persuadee has joined the chat. Start the conversation.)"
        return TurnPrompt.chat(system, episode, side, (PERSUADER, PERSUADEE), opener, self.max_tokens)

    # --- reward
    def stated_donation(self, episode: Episode) -> float | None:
        """The donor's last stated donation in the conversation, or ``None``."""
        for m in reversed(episode.messages):
            if m["role"] == "simulator":
                d = parse_donation(m["content"])
                if d is not None:
                    return d
        return None

    # --- audit hooks (see collapse_probe.benchmarks._base.AuditHooks)
    fallback_partition: str = "label"
    """Partition of an audit without the embedding extra: the donation decision the reward reads."""

    def probe_states(self, tasks: Sequence[Task], openings: Mapping[str, str] | None = None) -> list[ProbeSpec]:
        """Per persona: the reply to a persuader's opening, and the donation decision.

        Args:
            tasks: donor personas.
            openings: task id -> the persuader's opening (e.g. written by a policy); default, and for a
                task it does not name: the fixed human-style :data:`OPENINGS`, one per persona in turn.
        """
        specs = []
        for i, task in enumerate(tasks):
            opening = (openings or {}).get(task.task_id) or OPENINGS[i % len(OPENINGS)]
            first: list[EpisodeMessage] = [{"role": "policy", "content": opening}]
            specs.append(ProbeSpec(task, "opening", first))
            elicit = first + [{"role": "policy", "content": ELICITATION, "meta": {"elicitation": True}}]
            specs.append(ProbeSpec(task, "elicitation", elicit, asks_decision=True))
        return specs

    def episode_at(self, task: Task, messages: Sequence[EpisodeMessage]) -> Episode:
        """The audit hook ``episode_at``: the episode whose conversation so far is ``messages``, with the
        turn-taking state :meth:`next_side` keeps (persuasion rounds answered, whether the donation
        question was asked) rebuilt from them, so the reward view reads a probe or on-policy state as
        the rollout that reached it would."""
        ep = self.new_episode(task, 0)
        ep.messages = [m.copy() for m in messages]
        ep.state["rounds"] = ep.turns("simulator")
        ep.state["elicited"] = any((m.get("meta") or {}).get("elicitation") for m in messages)
        return ep

    def decision_label(self, text: str) -> str:
        """The decision the reward reads: ``donate:$X`` from a tag, ``refuse`` or ``undecided``."""
        return p4g_label(text)

    reward_view_note: str = (
        "classes: the reward min($N/2, 1) of the donor's [DONATE $N] (no tag at the donation question = $0 = 0; an "
        "earlier tag still pays); states: the donation question and the last round, where the reply fixes the reward"
    )
    """What the audit's reward view measures on P4G (see :meth:`reward_class`)."""

    def reward_class(self, episode: Episode, text: str) -> str | None:
        """The reward this reply leads to, where the reply fixes it; ``None`` at earlier turns.

        The reward reads only the donor's last ``[DONATE $N]`` tag, so two replies pay the same when
        they leave the same last tag: "No thanks", "Let me think" and a question all pay 0 at the
        donation question, and ``[DONATE $2]`` and ``[DONATE $5]`` both pay 1. The reply fixes the
        reward at the closing donation question (the conversation ends after it; no tag there is
        $0) and at the last persuasion round (a tag ends the conversation; without one an earlier
        tag still pays, and with none at all the donation question follows: the class ``"no donation
        stated yet"``). At earlier turns any tag can still be replaced, so the reward does not read
        the reply there (``None``).

        Example:
            >>> arena = P4GArena(personas=[{"persona_id": "p"}])
            >>> ep = arena.new_episode(Task("p", {"persona": {}}), 0)
            >>> ep.messages = [{"role": "policy", "content": ELICITATION, "meta": {"elicitation": True}}]
            >>> [arena.reward_class(ep, t) for t in ("No thanks.", "Maybe later?", "Sure [DONATE $1]")]
            ['reward 0', 'reward 0', 'reward 0.5']
        """
        msgs = episode.messages
        asked = bool(msgs) and bool((msgs[-1].get("meta") or {}).get("elicitation"))
        rounds = episode.state.get("rounds", episode.turns("simulator"))
        last_round = (
            bool(msgs)
            and msgs[-1]["role"] == "policy"
            and not episode.state.get("elicited")
            and rounds + 1 >= self.max_turns
        )
        if not (asked or last_round):
            return None
        donation = parse_donation(text)
        if donation is None:
            donation = self.stated_donation(episode)
        if donation is None and not asked:
            return "no donation stated yet"
        return f"reward {donation_reward(donation):g}"

    @property
    def meaning_key(self) -> Any:
        """What a reply decides, read from free text (:func:`donor_stance`): the process-wide
        :class:`~collapse_probe.benchmarks.p4g.stance.StanceReader`, a callable ``text -> key`` whose
        ``keys(texts, embeddings)`` reads many replies and reuses the partition's embeddings, and whose
        ``describe()`` says which reader it is."""
        from collapse_probe.benchmarks.p4g.stance import default_stance_reader

        return default_stance_reader()

    def closed_answers(self) -> list[tuple[str, str]]:
        """The donation tags ``[DONATE $0]`` … ``[DONATE $2]`` on a $0.25 grid and their decision class."""
        return donation_answers()

    async def score(self, episodes: Sequence[Episode]) -> list[Score]:
        out = []
        for ep in episodes:
            donation = self.stated_donation(ep)
            capped = None if donation is None else min(donation, MAX_DONATION)
            out.append(
                Score(
                    reward=donation_reward(donation),
                    success=donation is not None and donation > 0,
                    info={
                        "donation": capped,
                        "donation_stated": donation is not None,
                        "elicited": bool(ep.state.get("elicited")),
                    },
                )
            )
        return out


def _clean_turn(text: str) -> str:
    """One turn's text: strip whitespace and a leading speaker tag the model may repeat."""
    t = (text or "").strip()
    for tag in (f"{PERSUADER}:", f"{PERSUADEE}:"):
        if t.startswith(tag):
            t = t[len(tag) :].strip()
    return t


# ------------------------------------------------------------------------------------------------ registration


class P4GOptions(BenchmarkOptions):
    """The options of ``--benchmark p4g``."""

    max_turns: int | None = Field(
        None, ge=1, le=MAX_TURNS, description="persuader+persuadee exchanges before the elicitation turn (default 3)"
    )
    personas: str | None = Field(None, description="P4G persona file (JSONL; default: the shipped personas)")


def _resolve(options: P4GOptions, context: BuildContext) -> P4GOptions:
    return options.model_copy(update={"max_turns": options.max_turns or DEFAULT_MAX_TURNS})


class _ArenaArguments(TypedDict, total=False):
    """The :class:`P4GArena` arguments the options set."""

    personas: list[Persona]
    max_turns: int
    max_tokens: int


def _build(options: P4GOptions, context: BuildContext) -> P4GArena:
    kwargs: _ArenaArguments = {"max_turns": options.max_turns or DEFAULT_MAX_TURNS}
    if options.max_tokens is not None:
        kwargs["max_tokens"] = options.max_tokens
    if options.personas:
        kwargs["personas"] = load_personas(options.personas)
    return P4GArena(**kwargs)


BENCHMARK = Benchmark(
    "p4g",
    P4GOptions,
    build=_build,
    data=("personas",),
    resolve=_resolve,
    description="Persuasion for Good: a persuader asks a donor persona for a donation",
    factory=P4GArena,
    labeller=p4g_label,
)
"""The P4G benchmark as the registry finds it."""
