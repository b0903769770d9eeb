"""``collapse-probe gate``: pass/fail a candidate policy from a cross-play run, for CI.

Exit codes (:data:`EXIT_CODES`): 0 pass, 1 fail, 2 usage error (a bad or missing option, no threshold,
a run directory that does not exist or holds no cross-play run, a policy the run does not have, a
report path that may not be written), 3 could not judge (an unfinished or unreadable run, missing or
unscored cells, too many infrastructure failures, an undefined statistic, an interval that contains
the threshold under the default rule).

Reports (``--json``, ``--junit``, ``--markdown``) are new files, or a report of an earlier gate that is
rewritten in place (CI reruns): the file must be recognisably the gate's (the verdict's schema, the
JUnit suite name, the Markdown report's marker comment), a regular file with one link, of this user;
anything else is refused and left as it is (:func:`collapse_probe.core._output.write_report`).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path

from collapse_probe.cli._flags import add_model_options, config_fields, model_values
from collapse_probe.core._output import Ours
from collapse_probe.errors import ConfigError

CONFIG = "collapse_probe.pipelines.gate:GateConfig"
"""The gate's options: every field of :class:`~collapse_probe.pipelines.gate.GateConfig` is a flag."""

EXIT_USAGE = 2
EXIT_CODES = "0 pass, 1 fail, 2 usage error (bad options, no threshold, no such run or policy), 3 could not judge"
THRESHOLD_FLAGS = "--min-transfer X, --min-transfer-each X, or --baseline-policy P with --max-drop X"

MARKDOWN_MARKER = "<!-- collapse-probe gate report -->"
"""The first line of a ``--markdown`` report: how a later gate knows the file is one it may rewrite."""
JUNIT_SUITES = "collapse-probe gate"
"""The ``name`` of a ``--junit`` report's ``testsuites`` element."""


def _is_json_verdict(data: bytes) -> bool:
    from collapse_probe.results._gate import GATE_SCHEMA

    obj = json.loads(data)
    return isinstance(obj, dict) and obj.get("schema") == GATE_SCHEMA and isinstance(obj.get("checks"), list)


_JUNIT_HEAD = re.compile(rf'\A(<\?xml[^>]{{0,200}}\?>\s*)?<testsuites name="{re.escape(JUNIT_SUITES)}"')


def _is_junit(data: bytes) -> bool:
    return _JUNIT_HEAD.match(data[:4096].decode("utf-8")) is not None


def _is_markdown(data: bytes) -> bool:
    first = data[:4096].decode("utf-8").split("\n", 1)[0].rstrip("\r")
    # before the marker, a report began with its heading
    return first == MARKDOWN_MARKER or first.startswith("### collapse-probe gate: ")


OURS = {
    "--json": Ours("a gate JSON verdict (schema collapse-probe/gate/v1)", _is_json_verdict),
    "--junit": Ours(f'a gate JUnit report (testsuites name "{JUNIT_SUITES}")', _is_junit),
    "--markdown": Ours(f"a gate Markdown report (first line {MARKDOWN_MARKER})", _is_markdown),
}
"""How each report flag recognises the report an earlier gate wrote there."""


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "gate",
        help="pass/fail a policy on a cross-play run (exit 0 pass, 1 fail, 2 usage error, 3 could not judge)",
        description="Judge a candidate policy from a cross-play run directory: transfer ratio, regression "
        "against a baseline policy (paired by task) and infrastructure failures. By default a check passes "
        "when its whole 90 % interval over tasks clears the threshold, fails when the interval lies beyond it, "
        "and otherwise could not judge (--decision). At least one threshold is required "
        f"({THRESHOLD_FLAGS}). Prints a markdown summary for a pull-request comment. Reports (--json, --junit, "
        "--markdown) are new files or a report of an earlier gate, rewritten; any other file is refused. "
        f"Exit codes: {EXIT_CODES}.",
    )
    p.add_argument("run_dir", metavar="DIR", help="cross-play run directory (or its results.json)")
    add_model_options(p, CONFIG, required=("policy",))
    p.add_argument(
        "--junit", default=None, metavar="FILE", help="write JUnit XML here (a new file or an earlier gate's)"
    )
    p.add_argument("--markdown", default=None, metavar="FILE",
                   help="write the markdown summary here (a new file or an earlier gate's)")  # fmt: skip
    p.add_argument(
        "--json", default=None, metavar="FILE", help="write the verdict as JSON here (a new file or an earlier gate's)"
    )


def check_outputs(args: argparse.Namespace) -> None:
    """Refuse a report path that is the gate's input, given to two flags, a system or run folder's, or an
    existing entry that is not a report an earlier gate wrote there (see the module docstring); one line
    naming the flag and the path."""
    from collapse_probe.core._output import check_output_path

    src = Path(args.run_dir)
    source = (src / "results.json" if src.is_dir() else src).resolve()
    seen: dict[str, str] = {}
    for flag in ("--junit", "--markdown", "--json"):
        path = getattr(args, flag[2:])
        if not path:
            continue
        if Path(path).resolve() == source:
            raise ConfigError(
                f"{flag} {path}: would overwrite the results the gate reads; write the gate's output elsewhere"
            )
        key = os.path.abspath(path)
        if key in seen:
            raise ConfigError(f"{flag} {path}: is also the path of {seen[key]}; give each report its own file")
        seen[key] = flag
        check_output_path(path, flag, replace=OURS[flag])


def check_thresholds(options: Mapping[str, object]) -> None:
    """A gate with no threshold would pass any policy: refuse it, naming the flags."""
    if all(options.get(k) is None for k in ("min_transfer", "min_transfer_each", "max_drop")):
        raise ConfigError(
            f"no threshold given: pass {THRESHOLD_FLAGS} (without one the gate checks nothing about the policy)"
        )


def load_run(run_dir: str, policies: list[str | None]) -> dict[str, object] | None:
    """The run's results, checked to be the ones asked for; ``None`` where the run cannot be judged
    (unfinished, unreadable: the gate's ``results`` check says why, exit 3).

    Raises:
        ConfigError: the path does not exist, holds no cross-play run, or the run has no such policy
            (usage errors, exit 2).
    """
    from collapse_probe.core._output import _json_object
    from collapse_probe.pipelines.crossplay import SCHEMA
    from collapse_probe.results import load

    p = Path(run_dir)
    if not os.path.lexists(p):
        raise ConfigError(
            f"DIR {run_dir}: does not exist; expected a cross-play run directory (collapse-probe crossplay --out) "
            "or its results.json"
        )
    res = p / "results.json" if p.is_dir() else p
    if not os.path.lexists(res):
        cfg = _json_object(p / "config.json") or {}
        if cfg.get("kind") == "crossplay":
            return None  # a cross-play still running or stopped before its results: could not judge
        held = f"holds a {cfg['kind']} run" if isinstance(cfg.get("kind"), str) else "holds no collapse-probe run"
        raise ConfigError(
            f"DIR {run_dir}: {held} and no results.json; expected a cross-play run directory (collapse-probe crossplay --out)"
        )
    try:
        data: dict[str, object] = load(p, kind="crossplay").to_json()
    except ConfigError:
        obj = _json_object(res)
        schema = obj.get("schema") if obj is not None else None
        if isinstance(schema, str) and schema != SCHEMA:
            raise ConfigError(
                f"DIR {run_dir}: {res} holds results of schema {schema!r}, not a cross-play run's ({SCHEMA}); "
                "give a cross-play run directory"
            ) from None
        return None
    listed = data.get("policies")
    have = [str(x) for x in listed] if isinstance(listed, list) else []
    for flag, policy in zip(("--policy", "--baseline-policy"), policies, strict=False):
        if policy is not None and policy not in have:
            raise ConfigError(f"{flag} {policy!r}: not a policy of the run {run_dir} (its policies: {', '.join(have)})")
    return data


def run(args: argparse.Namespace) -> int:
    from collapse_probe.core._output import write_report
    from collapse_probe.pipelines.gate import EXIT_CANNOT_JUDGE, GateConfig, evaluate_gate, gate_run_dir
    from collapse_probe.report.gate_text import junit_xml, markdown

    try:
        options = model_values(args, config_fields(CONFIG, exclude=("policy",)))
        GateConfig(policy=args.policy, **options)  # each option's own check first, naming the flag
        check_thresholds(options)
        check_outputs(args)
        data = load_run(args.run_dir, [args.policy, options.get("baseline_policy")])
    except ConfigError as exc:
        print(f"collapse-probe gate: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        results = (
            gate_run_dir(args.run_dir, args.policy, **options)
            if data is None
            else evaluate_gate(data, args.policy, **options)
        )
        md = markdown(results)
    except ConfigError as exc:  # an option the config refuses: the caller's error
        print(f"collapse-probe gate: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:  # a malformed result the checks did not foresee: could not judge, never "fail"
        print(
            f"collapse-probe gate: error: could not judge {args.run_dir}: {type(exc).__name__}: {exc}", file=sys.stderr
        )
        return EXIT_CANNOT_JUDGE
    print(md)
    errors = [c for c in results.checks if c.status == "error"]
    if errors:  # the reason on stderr too, where a CI log shows it beside the exit status
        print(f"collapse-probe gate: could not judge: {errors[0].name}: {errors[0].message}", file=sys.stderr)
    for flag, path, text in (
        ("--markdown", args.markdown, f"{MARKDOWN_MARKER}\n{md}" if args.markdown else ""),
        ("--junit", args.junit, junit_xml(results) if args.junit else ""),
        ("--json", args.json, json.dumps(results.to_json(), indent=2) + "\n" if args.json else ""),
    ):
        if path:
            try:
                write_report(path, text, OURS[flag], flag)
            except ConfigError as exc:
                print(f"collapse-probe gate: error: {exc}", file=sys.stderr)
                return EXIT_USAGE
    return results.exit_code
