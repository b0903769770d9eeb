"""τ2-bench retail and airline: a customer-service agent with tools against a user simulator.

Own implementation of both domains (database, every agent tool, evaluation) from the behavioural
specification; the official data is read from a directory (``data_dir``, ``--tau2-data`` or
``$COLLAPSE_PROBE_TAU2_DATA``), never shipped. A small self-written retail-like ``demo`` domain
ships under ``collapse_probe/data/tau2-demo`` so the arena runs anywhere.

Public entry points: :func:`make_arena` (the :class:`~collapse_probe.benchmarks.Arena`),
:func:`replay_gold` (gold actions on a fresh environment), :func:`pass_hat_k`.
"""

from collapse_probe.benchmarks.tau2._arena import GREETING, STOP_SIGNALS, Tau2Arena, make_arena
from collapse_probe.benchmarks.tau2._data import (
    DOMAIN_KINDS,
    ENV_VAR,
    DomainData,
    load_domain,
    normalize_domain,
    render_user_scenario,
    resolve_domain_dir,
)
from collapse_probe.benchmarks.tau2._db import Database, canonical_airline, canonical_retail
from collapse_probe.benchmarks.tau2._evaluate import (
    Environment,
    GoldReplay,
    action_score,
    communicate_score,
    gold_environment,
    initial_environment,
    pass_hat_k,
    replay_gold,
    replay_tool_calls,
)
from collapse_probe.benchmarks.tau2._plugin import AIRLINE, DEMO, RETAIL, Tau2Options
from collapse_probe.benchmarks.tau2._protocol import PROTOCOL_TEXT, ParsedAction, format_action, parse_action
from collapse_probe.benchmarks.tau2._tools import Toolkit, ToolResult, ToolSpec
from collapse_probe.benchmarks.tau2.airline import AirlineTools
from collapse_probe.benchmarks.tau2.retail import RetailTools

__all__ = [
    "AIRLINE",
    "DEMO",
    "RETAIL",
    "Tau2Options",
    "DOMAIN_KINDS",
    "ENV_VAR",
    "GREETING",
    "PROTOCOL_TEXT",
    "STOP_SIGNALS",
    "AirlineTools",
    "Database",
    "DomainData",
    "Environment",
    "GoldReplay",
    "ParsedAction",
    "RetailTools",
    "Tau2Arena",
    "ToolResult",
    "ToolSpec",
    "Toolkit",
    "action_score",
    "canonical_airline",
    "canonical_retail",
    "communicate_score",
    "format_action",
    "gold_environment",
    "initial_environment",
    "load_domain",
    "make_arena",
    "normalize_domain",
    "parse_action",
    "pass_hat_k",
    "render_user_scenario",
    "replay_gold",
    "replay_tool_calls",
    "resolve_domain_dir",
]
