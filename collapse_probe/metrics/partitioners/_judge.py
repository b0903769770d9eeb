"""LLM-judge equivalence: :class:`JudgeEquivalencePartitioner` and its verdict parser."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from collapse_probe.errors import ConfigError, InfraError
from collapse_probe.metrics._text import normalize_text
from collapse_probe.metrics.partitioners._base import _check_texts

JUDGE_SYSTEM = (
    "You compare two replies written by the same person in a conversation. Answer YES if they mean "
    "the same thing (same decision, same stance, same information asked for or given), even if worded "
    "differently. Answer NO otherwise. Answer with one word: YES or NO."
)
JUDGE_TEMPLATE = 'Reply A: "{a}"\nReply B: "{b}"\nDo Reply A and Reply B mean the same thing? Answer YES or NO.'

_YES_NO = re.compile(r"\b(yes|no)\b", re.IGNORECASE)


def parse_yes_no(text: str) -> bool | None:
    """Parse a judge verdict: the first standalone "yes"/"no" word wins (markdown and case ignored).

    Returns:
        True for yes, False for no, ``None`` if neither word occurs (a parse failure).

    Example:
        >>> parse_yes_no("**Yes.** They agree"), parse_yes_no("No, A refuses"), parse_yes_no("unclear")
        (True, False, None)
    """
    m = _YES_NO.search(text or "")
    if m is None:
        return None
    return m.group(1).lower() == "yes"


class JudgeEquivalencePartitioner:
    """Clustering by bidirectional equivalence judged by an LLM, as in semantic entropy (Kuhn et al.,
    2023, "Semantic Uncertainty"; Farquhar et al., 2024): two replies share a class when the judge
    says A means B *and* B means A.

    Leader clustering: the first unassigned response becomes the representative of a new class and
    every other unassigned response is compared with it in both orders; those judged equivalent both
    ways join it; repeat. A response therefore joins the first earlier representative it is
    equivalent to, but it takes one round per class instead of one per response, and each round is
    *one* ``generate()`` call holding both questions of every pair of every state. Asking both orders
    cancels a judge's bias towards the answer in one position (small judges say YES to "A means B"
    far more often than to "B means A" when A is the longer reply).

    Responses equal after :func:`normalize_text` are joined without asking. The judge runs greedy
    (temperature 0) with a fixed seed, so through the response cache (``make_participant(spec).model``)
    a rerun asks nothing again. A verdict that is neither YES nor NO is a parse failure: counted in
    ``n_parse_failures_`` (raw answers kept in ``parse_failure_examples_``) and treated as NO, which
    can only split classes (ε̂ biased up, never faked down). A request the backend failed on, an empty
    answer, or a round where most answers are neither YES nor NO raises
    :class:`~collapse_probe.errors.InfraError`: the states are infrastructure failures (sampled again on
    resume), not measurements.

    Args:
        model: a :class:`~collapse_probe.models.ChatModel` or a model spec string.
        max_tokens: tokens allowed for a verdict.
        seed: sampling seed of the judge requests.
        bidirectional: ask both orders (``False``: only "does the response mean the representative").
        rubric: the definition of a meaning class added to the judge's instruction (the audit gives the
            customer-service rubric, :data:`~collapse_probe.metrics._disclosure.RUBRIC`, where no
            benchmark meaning key applies).

    Attributes:
        n_questions_: judge questions asked so far.
        n_rounds_: ``generate()`` calls made so far.
        n_parse_failures_: verdicts that were neither YES nor NO.
        parse_failure_examples_: up to 5 unparsed verdict texts.
    """

    name = "judge"
    by_meaning = True
    needs_model = True
    needs_benchmark = False
    arena_hooks: ClassVar[Mapping[str, str]] = {}

    def __init__(self, model: Any, max_tokens: int = 8, seed: int = 0, bidirectional: bool = True,
                 rubric: str | None = None) -> None:  # fmt: skip
        if rubric is not None and (not isinstance(rubric, str) or not rubric.strip()):
            raise ConfigError(f"rubric must be a non-empty string (the definition of a meaning class), got {rubric!r}")
        self.rubric = rubric
        self.model = model
        self.max_tokens = max_tokens
        self.seed = seed
        self.bidirectional = bidirectional
        self.n_questions_ = 0
        self.n_rounds_ = 0
        self.n_parse_failures_ = 0
        self.parse_failure_examples_: list[str] = []

    def _chat_model(self) -> Any:
        if isinstance(self.model, str):
            from collapse_probe.models import get_model

            self.model = get_model(self.model)
        if not hasattr(self.model, "generate"):
            raise ConfigError(f"model: expected a ChatModel or a model spec string, got {type(self.model).__name__}")
        return self.model

    def _request(self, a: str, b: str) -> Any:
        from collapse_probe.models import GenerationRequest, Message, SamplingParams

        system = JUDGE_SYSTEM if self.rubric is None else f"{JUDGE_SYSTEM}\n\n{self.rubric}"
        messages: tuple[Message, ...] = (
            {"role": "system", "content": system},
            {"role": "user", "content": JUDGE_TEMPLATE.format(a=a, b=b)},
        )
        return GenerationRequest(
            messages=messages, n=1, params=SamplingParams(temperature=0.0, max_tokens=self.max_tokens, seed=self.seed)
        )

    def partition(self, texts: Sequence[str]) -> list[int]:
        return self.partition_many([texts])[0]

    def partition_many(self, groups: Sequence[Sequence[str]]) -> list[list[int]]:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.apartition_many(groups))
        raise ConfigError(
            "JudgeEquivalencePartitioner.partition* called inside an event loop: use `await apartition_many`"
        )

    def _verdict(self, res: Any) -> bool:
        verdict = parse_yes_no(res.completions[0].text)
        if verdict is None:
            self.n_parse_failures_ += 1
            if len(self.parse_failure_examples_) < 5:
                self.parse_failure_examples_.append(res.completions[0].text[:200])
            return False
        return verdict

    async def apartition_many(self, groups: Sequence[Sequence[str]]) -> list[list[int]]:
        model = self._chat_model()
        groups = [_check_texts(g, f"groups[{i}]") for i, g in enumerate(groups)]
        norm = [[normalize_text(t) for t in g] for g in groups]
        labels: list[list[int | None]] = [[None] * len(g) for g in groups]
        n_classes = [0] * len(groups)
        orders = 2 if self.bidirectional else 1
        while True:
            questions, reqs = self._round(groups, norm, labels, n_classes)
            if not questions:
                if all(lab is not None for gl in labels for lab in gl):
                    break
                continue
            results = await model.generate(reqs)
            self.n_rounds_ += 1
            self.n_questions_ += len(reqs)
            _check_answers(model, results, len(reqs))
            for q, (gi, i, cls) in enumerate(questions):
                verdicts = [self._verdict(results[q * orders + k]) for k in range(orders)]
                if all(verdicts):
                    for j, t in enumerate(norm[gi]):
                        if labels[gi][j] is None and t == norm[gi][i]:
                            labels[gi][j] = cls
        return [[int(x) for x in gl] for gl in labels]  # type: ignore[arg-type]

    def _round(
        self,
        groups: Sequence[Sequence[str]],
        norm: list[list[str]],
        labels: list[list[int | None]],
        n_classes: list[int],
    ) -> tuple[list[tuple[int, int, int]], list[Any]]:
        """Open one class per group (its first unlabelled text leads it; equal texts join at once) and
        the questions that ask whether each other distinct unlabelled text says the same:
        ``(group, candidate index, class id)`` and their requests (both orders when bidirectional)."""
        questions: list[tuple[int, int, int]] = []
        reqs = []
        for gi, g in enumerate(groups):
            todo = [i for i, lab in enumerate(labels[gi]) if lab is None]
            if not todo:
                continue
            leader, rest = todo[0], todo[1:]
            cls = n_classes[gi]
            n_classes[gi] += 1
            labels[gi][leader] = cls
            asked: dict[str, int] = {}  # one question per distinct candidate text
            for i in rest:
                if norm[gi][i] == norm[gi][leader]:
                    labels[gi][i] = cls
                elif norm[gi][i] in asked:
                    continue
                else:
                    asked[norm[gi][i]] = i
                    questions.append((gi, i, cls))
                    reqs.append(self._request(g[leader], g[i]))
                    if self.bidirectional:
                        reqs.append(self._request(g[i], g[leader]))
        return questions, reqs


def _check_answers(model: Any, results: Sequence[Any], n_requests: int) -> None:
    """Refuse a round of the judge's answers that cannot be read as classes (a missing, failed, empty
    or mostly unparsed answer) as an infrastructure failure.

    Raises:
        InfraError: naming the judge and what went wrong.
    """
    if len(results) != n_requests:
        raise InfraError(
            f"judge {getattr(model, 'spec', model)!r} returned {len(results)} results for {n_requests} requests"
        )
    failed = [r.error for r in results if not r.ok or not r.completions]
    if failed:
        raise InfraError(
            f"judge {getattr(model, 'spec', model)!r} failed on {len(failed)} of {n_requests} "
            f"equivalence questions (first error: {failed[0]})"
        )
    blank = sum(1 for r in results if not r.completions[0].text.strip())
    if blank:  # an empty answer is the backend's failure, not a NO: the states are sampled again
        raise InfraError(f"judge {getattr(model, 'spec', model)!r} returned {blank} empty answers to "
                         f"{n_requests} equivalence questions")  # fmt: skip
    unparsed = sum(1 for r in results if parse_yes_no(r.completions[0].text) is None)
    if unparsed * 2 > n_requests:
        raise InfraError(f"judge {getattr(model, 'spec', model)!r} answered neither YES nor NO to {unparsed} "
                         f"of {n_requests} equivalence questions (e.g. {results[0].completions[0].text[:80]!r}): "
                         "its classes would be guesses; use a judge that follows the instruction")  # fmt: skip
