"""CooperBench: two coding agents implement two features of one repository; their patches are merged.

Own docker-free re-implementation of the reference procedure (discovery, pair enumeration, patch
cleaning, merge with union fallback, per-feature tests; see :mod:`._evaluate`). The official data
is read from a directory (``--cooperbench-data`` or ``$COLLAPSE_PROBE_COOPERBENCH_DATA``), never
shipped; a self-written set of small pure-Python tasks ships as ``cooperbench-demo``.

Public entry points: :func:`evaluate_pair`, :func:`evaluate_solo`, :func:`run_patch_test`,
:func:`enumerate_pairs`, :func:`make_arena`.
"""

from collapse_probe.benchmarks.cooperbench._arena import (
    SUBMIT,
    CooperBenchArena,
    extract_messages,
    make_arena,
    make_demo_arena,
)
from collapse_probe.benchmarks.cooperbench._data import (
    DEMO_NAME,
    ENV_VAR,
    CooperTask,
    Feature,
    PairRef,
    demo_dir,
    discover_tasks,
    enumerate_pairs,
    load_subset,
    load_task,
    resolve_data_dir,
    subset_names,
)
from collapse_probe.benchmarks.cooperbench._evaluate import (
    REPOS_ENV,
    BaseRepo,
    EvaluationError,
    FeatureResult,
    MergeOutcome,
    PairResult,
    base_repo,
    evaluate_pair,
    evaluate_solo,
    find_base_tree,
    gold_pair_table,
    parse_pytest,
    run_patch_test,
    verify_base,
)
from collapse_probe.benchmarks.cooperbench._gold import apply_and_submit_command, gold_agent_script, write_gold_agent
from collapse_probe.benchmarks.cooperbench._patch import clean_patch, drop_test_sections, sanitize
from collapse_probe.benchmarks.cooperbench._plugin import BENCHMARK, DEMO, CooperBenchOptions
from collapse_probe.benchmarks.cooperbench._sandbox import Limits, network_isolation, run_command

__all__ = [
    "BENCHMARK",
    "DEMO",
    "CooperBenchOptions",
    "SUBMIT",
    "CooperBenchArena",
    "extract_messages",
    "make_arena",
    "make_demo_arena",
    "DEMO_NAME",
    "ENV_VAR",
    "REPOS_ENV",
    "BaseRepo",
    "CooperTask",
    "EvaluationError",
    "Feature",
    "FeatureResult",
    "Limits",
    "MergeOutcome",
    "PairRef",
    "PairResult",
    "base_repo",
    "clean_patch",
    "demo_dir",
    "discover_tasks",
    "drop_test_sections",
    "enumerate_pairs",
    "evaluate_pair",
    "evaluate_solo",
    "find_base_tree",
    "gold_pair_table",
    "load_subset",
    "load_task",
    "network_isolation",
    "parse_pytest",
    "resolve_data_dir",
    "run_command",
    "run_patch_test",
    "sanitize",
    "subset_names",
    "verify_base",
    "apply_and_submit_command",
    "gold_agent_script",
    "write_gold_agent",
]
