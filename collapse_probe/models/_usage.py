"""Token and cost accounting of model calls, and the spend budget that stops a run.

Every backend that calls a provider reports each answered call to the process-wide
:data:`LEDGER` (:func:`record_usage`) with the token counts *the server reported*; local and
scripted backends report what they know through the response cache wrapper (requests and generated
tokens; their cost is 0, since nothing is billed). A pipeline opens a :class:`RunUsage` on its run
directory (:func:`start_run_usage`) and puts :meth:`RunUsage.summary` into ``results.json`` as
``usage``: model spec -> ``{requests, input_tokens, output_tokens, cost_usd}``. A resumed run adds
its spend to what ``usage.json`` in the run directory recorded before, so the totals are the run's,
not the last process's. Cached samples cost nothing and are not counted.

Cost is tokens times the price per million tokens from a price table: the shipped
``collapse_probe/data/prices.toml`` (providers' list prices, dated there), overridden entry by
entry by ``--price-table FILE`` or ``$COLLAPSE_PROBE_PRICE_TABLE``. A model without a price has
``cost_usd: null`` (unknown, not free). Calls answered through a provider's batch API are charged
at the table's ``batch_discount`` (OpenAI, Anthropic and Gemini: half price).

Budgets: ``--cost-limit USD`` and ``--token-limit N`` (input + output tokens, all models of the run)
are checked before each provider call; once the run's spend reaches a limit the next call raises
:class:`BudgetExceeded`. It derives from ``BaseException`` so that no per-request error handler
turns it into an infrastructure failure: it unwinds the whole run like Ctrl-C, units already
recorded stay recorded, units in flight or not started stay unstarted, and the same command with a
higher limit resumes the run. Calls already in flight when the limit is reached still finish and
are counted, so a run may overshoot a limit by at most its concurrency's worth of calls.
"""

from __future__ import annotations

import math
import os
import re
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TypedDict

from collapse_probe.errors import ConfigError

USAGE_FILE = "usage.json"
"""Spend of a run so far, in its run directory (rewritten as calls are answered and at the end)."""

FREE_PREFIXES = ("local/", "hf/", "vllm/", "scripted:")
"""Backends that run on the user's own hardware: their calls cost 0 USD."""

FAMILY = {
    "openai": "openai",
    "azure": "openai",
    "anthropic": "anthropic",
    "bedrock": "anthropic",
    "vertex-anthropic": "anthropic",
    "google": "google",
    "vertex": "google",
}
"""Spec prefix -> price-table section holding the model's list price when the prefix's own section
(e.g. ``[bedrock]``) has no entry: the same model costs the same through a cloud's endpoint."""


class UsageRecord(TypedDict):
    """A model spec's spend as ``usage.json`` and ``results.json`` hold it (:meth:`Usage.to_dict`)."""

    requests: int
    input_tokens: int
    output_tokens: int
    cost_usd: float | None


@dataclass
class Usage:
    """Spend of one model spec: calls answered, tokens the server reported, and their cost."""

    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = 0.0
    """``None`` once any call of this spec had no known price."""

    def add(self, other: Usage) -> None:
        self.requests += other.requests
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        if self.cost_usd is None or other.cost_usd is None:
            self.cost_usd = None
        else:
            self.cost_usd += other.cost_usd

    def minus(self, before: Usage | None) -> Usage:
        """The spend since ``before`` (an earlier snapshot of the same spec)."""
        if before is None:
            return Usage(**asdict(self))
        cost = None if self.cost_usd is None else self.cost_usd - (before.cost_usd or 0.0)
        return Usage(
            self.requests - before.requests,
            self.input_tokens - before.input_tokens,
            self.output_tokens - before.output_tokens,
            cost,
        )

    def to_dict(self) -> UsageRecord:
        cost = None if self.cost_usd is None else round(self.cost_usd, 10)  # float noise off, nano-dollars kept
        return UsageRecord(
            requests=self.requests, input_tokens=self.input_tokens, output_tokens=self.output_tokens, cost_usd=cost
        )

    @classmethod
    def from_dict(cls, d: UsageRecord) -> Usage:
        """The spend :meth:`to_dict` wrote (a replica's report, a run's ``usage.json`` entry)."""
        cost = d.get("cost_usd")
        return cls(
            int(d.get("requests") or 0),
            int(d.get("input_tokens") or 0),
            int(d.get("output_tokens") or 0),
            None if cost is None else float(cost),
        )


class BudgetExceeded(BaseException):  # noqa: N818 - named for what it says, like KeyboardInterrupt
    """The run reached ``--cost-limit`` or ``--token-limit``; raised before the next provider call.

    A ``BaseException`` on purpose (see the module docstring): it must stop the run, not fail one request.
    """


# ------------------------------------------------------------------------------------------- prices


@dataclass(frozen=True)
class Price:
    """USD per million tokens."""

    input: float
    output: float
    batch_discount: float = 1.0
    """Factor applied to calls answered through the provider's batch API."""


def _read_toml(path: Path, where: str) -> dict[str, object]:
    import tomllib

    from collapse_probe.core._files import FileProblem, MissingFile, read_bytes

    try:
        raw = read_bytes(path, max_bytes=16 << 20, expected="a TOML price table")
    except MissingFile:
        raise ConfigError(f"{where}: no such file {str(path)!r}") from None
    except FileProblem as exc:
        raise ConfigError(f"{where}: {exc}") from None
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:  # TOMLDecodeError, or a number too long to convert
        raise ConfigError(f"{where}: {path} is not valid TOML ({str(exc)[:200]})") from None
    except RecursionError:
        raise ConfigError(f"{where}: {path} is TOML nested too deeply") from None


def _parse_prices(
    data: Mapping[str, object], where: str, discounts: Mapping[str, object] | None = None
) -> dict[str, dict[str, Price]]:
    table: dict[str, dict[str, Price]] = {}
    own = data.get("batch_discount") or {}
    if not isinstance(own, Mapping):
        raise ConfigError(f"{where}: batch_discount must be a table of provider = factor in (0, 1], got {own!r}")
    default_discount = {**(discounts or {}), **own}
    for section, models in data.items():
        if section == "batch_discount" or section == "meta":
            continue
        if not isinstance(models, Mapping):
            raise ConfigError(f"{where}: [{section}] must be a table of models, got {models!r}")
        disc = default_discount.get(section, 1.0)
        for name, entry in models.items():
            if not isinstance(entry, Mapping) or not {"input", "output"} <= set(entry):
                raise ConfigError(
                    f"{where}: [{section}] {name!r}: expected {{input = USD per 1M tokens, output = USD per 1M tokens}}"
                )
            try:
                price = Price(float(entry["input"]), float(entry["output"]), float(entry.get("batch_discount", disc)))
            except (TypeError, ValueError, OverflowError):
                raise ConfigError(
                    f"{where}: [{section}] {name!r}: prices must be numbers, got {dict(entry)!r}"
                ) from None
            finite = all(math.isfinite(x) for x in (price.input, price.output, price.batch_discount))
            if not finite or price.input < 0 or price.output < 0 or not 0 < price.batch_discount <= 1:
                raise ConfigError(
                    f"{where}: [{section}] {name!r}: prices must be finite numbers >= 0 and batch_discount in (0, 1], got {dict(entry)!r}"
                )
            table.setdefault(section, {})[str(name)] = price
    return table


SHIPPED_PRICES = Path(__file__).resolve().parent.parent / "data" / "prices.toml"


def load_price_table(path: str | Path | None = None) -> dict[str, dict[str, Price]]:
    """The shipped table, overridden entry by entry by ``path`` (or ``$COLLAPSE_PROBE_PRICE_TABLE``)."""
    shipped = _read_toml(SHIPPED_PRICES, "shipped price table")
    table = _parse_prices(shipped, str(SHIPPED_PRICES))
    override = path if path is not None else os.environ.get("COLLAPSE_PROBE_PRICE_TABLE") or None
    if override:
        where = "--price-table" if path is not None else "$COLLAPSE_PROBE_PRICE_TABLE"
        # an override's entries keep the provider's batch discount unless the file sets its own
        data = _read_toml(Path(override), where)
        discounts = shipped.get("batch_discount")
        discounts = discounts if isinstance(discounts, Mapping) else None
        for section, models in _parse_prices(data, str(override), discounts).items():
            table.setdefault(section, {}).update(models)
    return table


def _normalise(model: str) -> str:
    """Cloud spellings of a model down to its list name: ``us.anthropic.claude-x-v1:0`` -> ``claude-x``,
    ``claude-x@20251001`` -> ``claude-x``, ``models/gemini-x`` -> ``gemini-x``."""
    name = model.split("@", 1)[0].removeprefix("models/")
    if "anthropic." in name:
        name = name.split("anthropic.", 1)[1]
        name = name.rsplit("-v", 1)[0] if "-v" in name else name
    return name


_SNAPSHOT = re.compile(r"^-(\d{4}-\d{2}-\d{2}|\d{8}|\d{2}-\d{4}|latest|\d{3})$")
"""What may follow a listed name in a snapshot's name (``-2025-08-07``, ``-20251001``, ``-001``): a
longer name such as ``gpt-5-pro`` is another model, not a snapshot of ``gpt-5``."""


def find_price(table: Mapping[str, Mapping[str, Price]], spec: str, model: str) -> Price | None:
    """The price of ``model`` served by ``spec``'s backend: its own section first, then the provider
    family's; an exact name or else a dated snapshot of a listed name."""
    prefix = spec.split("/", 1)[0]
    name = _normalise(model)
    for section in dict.fromkeys([prefix, FAMILY.get(prefix, prefix)]):
        models = table.get(section) or {}
        if name in models:
            return models[name]
        dated = [m for m in models if name.startswith(m) and _SNAPSHOT.match(name[len(m) :])]
        if dated:
            return models[max(dated, key=len)]
    return None


# ------------------------------------------------------------------------------------------- ledger


class UsageLedger:
    """Process-wide spend per model spec, and the budget of the run in progress."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.by_spec: dict[str, Usage] = {}
        self.cost_limit: float | None = None
        self.token_limit: int | None = None
        self.price_table_path: str | None = None
        self._prices: dict[str, dict[str, Price]] | None = None
        self.run: RunUsage | None = None

    def configure(
        self, *, cost_limit: float | None = None, token_limit: int | None = None, price_table: str | None = None
    ) -> None:
        """Set the budget and price table (the CLI's ``--cost-limit``, ``--token-limit``, ``--price-table``)."""
        if cost_limit is not None and (cost_limit != cost_limit or cost_limit <= 0):
            raise ConfigError(f"--cost-limit: expected a positive number of USD, got {cost_limit}")
        if token_limit is not None and token_limit < 1:
            raise ConfigError(f"--token-limit: expected a positive number of tokens, got {token_limit}")
        self.cost_limit, self.token_limit = cost_limit, token_limit
        self.price_table_path = price_table
        self._prices = load_price_table(price_table)  # read now: a bad file is an error before any call

    def prices(self) -> dict[str, dict[str, Price]]:
        if self._prices is None:
            self._prices = load_price_table(self.price_table_path)
        return self._prices

    def cost(self, spec: str, model: str, input_tokens: int, output_tokens: int, batch: bool) -> float | None:
        if spec.startswith(FREE_PREFIXES):
            return 0.0
        price = find_price(self.prices(), spec, model)
        if price is None:
            return None
        usd = (input_tokens * price.input + output_tokens * price.output) / 1e6
        return usd * price.batch_discount if batch else usd

    def record(
        self,
        spec: str,
        *,
        model: str,
        input_tokens: int | None,
        output_tokens: int | None,
        requests: int = 1,
        batch: bool = False,
    ) -> None:
        """Count ``requests`` answered calls of ``spec`` with the token counts the server reported."""
        inp, out = int(input_tokens or 0), int(output_tokens or 0)
        usage = Usage(requests, inp, out, self.cost(spec, model, inp, out, batch))
        with self._lock:
            self.by_spec.setdefault(spec, Usage()).add(usage)
            run = self.run
        if run is not None:
            run.touch()

    def merge(self, spec: str, usage: Usage) -> None:
        """Add spend counted in another process (a Ray replica's own ledger) to this one."""
        with self._lock:
            self.by_spec.setdefault(spec, Usage()).add(usage)
            run = self.run
        if run is not None:
            run.touch()

    def snapshot(self) -> dict[str, Usage]:
        with self._lock:
            return {k: Usage(**asdict(v)) for k, v in self.by_spec.items()}

    def check_budget(self, spec: str = "") -> None:
        """Raise :class:`BudgetExceeded` when the run in progress has reached a limit."""
        if self.cost_limit is None and self.token_limit is None:
            return
        totals = self.run.summary() if self.run is not None else {k: v.to_dict() for k, v in self.snapshot().items()}
        tokens = sum(u["input_tokens"] + u["output_tokens"] for u in totals.values())
        if self.token_limit is not None and tokens >= self.token_limit:
            self._stop(f"token limit {self.token_limit} reached ({tokens} tokens used)")
        if self.cost_limit is not None:
            unknown = sorted(k for k, u in totals.items() if u["cost_usd"] is None)
            if unknown:
                self._stop(
                    f"--cost-limit cannot be enforced: no price for {', '.join(unknown)}; add it to a price table "
                    "(--price-table FILE, see collapse_probe/data/prices.toml) or use --token-limit"
                )
            cost = sum(u["cost_usd"] or 0.0 for u in totals.values())
            if cost >= self.cost_limit:
                self._stop(f"cost limit ${self.cost_limit:g} reached (${cost:.4f} spent)")

    def _stop(self, why: str) -> None:
        if self.run is not None:
            self.run.save()
        raise BudgetExceeded(why)


LEDGER = UsageLedger()
"""The process-wide ledger every backend reports to."""


def record_usage(
    spec: str,
    *,
    model: str,
    input_tokens: int | None,
    output_tokens: int | None,
    requests: int = 1,
    batch: bool = False,
) -> None:
    """Report answered calls to :data:`LEDGER` (see :meth:`UsageLedger.record`)."""
    LEDGER.record(
        spec, model=model, input_tokens=input_tokens, output_tokens=output_tokens, requests=requests, batch=batch
    )


def check_budget(spec: str = "") -> None:
    """Raise :class:`BudgetExceeded` if the run in progress has reached ``--cost-limit`` / ``--token-limit``."""
    LEDGER.check_budget(spec)


class RunUsage:
    """Spend of one run: what ``usage.json`` recorded before (a resumed run) plus this process's calls
    since :func:`start_run_usage`."""

    SAVE_EVERY_S = 2.0

    def __init__(self, out: str | Path | None, ledger: UsageLedger) -> None:
        self.path = Path(out) / USAGE_FILE if out is not None else None
        self.ledger = ledger
        self.before = ledger.snapshot()
        # usage.json is replaced atomically, so a kill never tears it: a file that does not read is
        # corrupt or edited, and is refused; treating it as zero would let --cost-limit count from zero
        self.prior: dict[str, Usage] = read_usage_file(self.path) if self.path is not None else {}
        self._last_save = 0.0

    def summary(self) -> dict[str, UsageRecord]:
        """Model spec -> ``{requests, input_tokens, output_tokens, cost_usd}`` of the whole run."""
        now = self.ledger.snapshot()
        out: dict[str, Usage] = {k: Usage(**asdict(v)) for k, v in self.prior.items()}
        for spec, usage in now.items():
            delta = usage.minus(self.before.get(spec))
            if delta.requests == 0 and delta.input_tokens == 0 and delta.output_tokens == 0:
                continue
            out.setdefault(spec, Usage()).add(delta)
        return {k: out[k].to_dict() for k in sorted(out)}

    def touch(self) -> None:
        if self.path is not None and time.monotonic() - self._last_save >= self.SAVE_EVERY_S:
            self.save()

    def save(self) -> dict[str, UsageRecord]:
        """Write ``usage.json`` (atomically) and return the summary."""
        summary = self.summary()
        if self.path is not None and self.path.parent.exists():
            from collapse_probe.core._jsonl import flush_config, write_json_atomic

            flush_config(self.path.parent)  # spend never sits in a directory without its configuration
            write_json_atomic(self.path, {"usage": summary})
        self._last_save = time.monotonic()
        return summary

    def finish(self) -> dict[str, UsageRecord]:
        """Save and detach from the ledger; return the summary for ``results.json``."""
        summary = self.save()
        if self.ledger.run is self:
            self.ledger.run = None
        return summary


MAX_USAGE_BYTES = 16 << 20
"""A ``usage.json`` holds one small entry per model spec; a larger file is not one."""


def read_usage_file(path: str | Path) -> dict[str, Usage]:
    """The spend recorded in a run's ``usage.json`` (``{}`` when there is none), checked entry by entry.

    Raises:
        ConfigError: the file is not a regular file inside the run directory, not UTF-8 JSON, not
            ``{"usage": {SPEC: {requests, input_tokens, output_tokens, cost_usd}}}``, or an entry holds
            a field that is not a whole number >= 0 (``cost_usd``: a finite number >= 0 or null); the
            message names the file, the entry and the field. Never a silent reset to zero: a
            ``--cost-limit`` would then count from zero.
    """
    from collapse_probe.core._files import MissingFile, parse_json, read_bytes

    p = Path(path)
    try:
        raw = read_bytes(p, max_bytes=MAX_USAGE_BYTES, follow_symlinks=False, expected="the run's spend (usage.json)")
    except MissingFile:
        return {}
    fix = "; the run's spend so far cannot be read, so a --cost-limit could not count it: fix or remove the file"
    data = parse_json(raw, p, expected="the run's spend (usage.json)")
    if not isinstance(data, dict) or not isinstance(data.get("usage", {}), dict):
        raise ConfigError(f'{p}: expected {{"usage": {{model spec: spend}}}}, got {_short(data)}{fix}')
    out: dict[str, Usage] = {}
    for spec, entry in (data.get("usage") or {}).items():
        where = f"{p}: entry {spec!r}"
        if not isinstance(entry, dict):
            raise ConfigError(
                f"{where}: expected {{requests, input_tokens, output_tokens, cost_usd}}, got {_short(entry)}{fix}"
            )
        counts = []
        for field in ("requests", "input_tokens", "output_tokens"):
            v = entry.get(field, 0)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ConfigError(f"{where}: field {field!r}: expected a whole number >= 0, got {_short(v)}{fix}")
            counts.append(v)
        cost = entry.get("cost_usd", 0.0)
        if cost is not None and (
            isinstance(cost, bool) or not isinstance(cost, int | float) or not math.isfinite(cost) or cost < 0
        ):
            raise ConfigError(
                f"{where}: field 'cost_usd': expected a number of USD >= 0 or null, got {_short(cost)}{fix}"
            )
        out[str(spec)] = Usage(counts[0], counts[1], counts[2], None if cost is None else float(cost))
    return out


def _short(value: Any) -> str:
    import reprlib

    return reprlib.repr(value)


def start_run_usage(out: str | Path | None) -> RunUsage:
    """Start accounting a run whose directory is ``out`` (``None``: no run directory)."""
    run = RunUsage(out, LEDGER)
    LEDGER.run = run
    return run


def record_local_results(spec: str, completions: Iterable[Any], requests: int) -> None:
    """Count calls of a backend that does not report usage itself: generated tokens where the
    completions carry them (local models), input tokens unknown (0)."""
    tokens = sum(int(getattr(c, "n_tokens", None) or 0) for c in completions)
    LEDGER.record(spec, model=spec, input_tokens=0, output_tokens=tokens, requests=requests)


class MeteredModel:
    """A backend that does not report usage itself, counted without the response cache (``--no-cache``):
    the budget is checked before each ``generate`` and its calls are recorded as by the cache wrapper."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.spec = inner.spec

    def __getattr__(self, name: str) -> Any:  # delegate backend extras (score_choices, fingerprint, ...)
        return getattr(self.inner, name)

    async def generate(self, requests: Any) -> Any:
        check_budget(self.spec)
        results = await self.inner.generate(requests)
        record_local_results(self.spec, (c for r in results for c in r.completions), len(requests))
        return results


def format_usage(usage: Mapping[str, UsageRecord], failures: int = 0, read_from: str | None = None) -> str:
    """Terminal lines of a ``usage`` block (one per model, then the total); ``failures`` is the number
    of units that ended in an infrastructure failure (an empty block then does not read "from the cache");
    ``read_from``: the replies were read from this file (``audit --from``), so an empty block means that
    no model was involved, not that a cache answered."""
    if not usage:
        if failures:
            return f"usage: no model call was answered, nothing spent ({failures} infrastructure failures)"
        if read_from is not None:
            return f"usage: no model called (the replies were read from {read_from})"
        return "usage: no model calls (all answers from the cache)"
    lines = ["usage (calls, input tokens, output tokens, cost):"]
    total_cost: float | None = 0.0
    for spec, u in usage.items():
        spent = u.get("cost_usd")
        cost = "cost unknown" if spent is None else f"${spent:.4f}"
        lines.append(f"  {spec}: {u['requests']} calls, {u['input_tokens']} in, {u['output_tokens']} out, {cost}")
        total_cost = None if total_cost is None or spent is None else total_cost + spent
    if len(usage) > 1:
        lines.append("  total cost: " + ("unknown" if total_cost is None else f"${total_cost:.4f}"))
    return "\n".join(lines)


def run_usage_text(out: str | Path, failures: int = 0, read_from: str | None = None) -> str | None:
    """The spend of run directory ``out`` (its ``usage.json``) as :func:`format_usage` lines, or why it
    cannot be shown; ``None`` when the run recorded none. ``read_from``: see :func:`format_usage`."""
    p = Path(out) / USAGE_FILE
    if not os.path.lexists(p):
        return None
    try:
        usage = {k: u.to_dict() for k, u in read_usage_file(p).items()}
    except ConfigError as exc:
        return f"usage: not shown: {exc}"
    return format_usage(usage, failures=failures, read_from=read_from)
