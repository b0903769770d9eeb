"""``collapse-probe gate``: pass/fail a candidate policy from a cross-play run, for CI.

Exit codes: 0 pass, 1 fail, 2 could not judge (no results, missing or unreadable cells, too many
infrastructure failures, an undefined statistic, an interval that contains the threshold under the
default rule, bad options).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from collapse_probe.cli._flags import add_model_options, config_fields, model_values

CONFIG = "collapse_probe._gate:GateConfig"
"""The gate's options: every field of :class:`~collapse_probe._gate.GateConfig` is a flag."""


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "gate",
        help="pass/fail a policy on a cross-play run (exit 0 pass, 1 fail, 2 could not judge)",
        description="Judge a candidate policy from a cross-play run directory: transfer ratio, regression "
        "against a baseline policy (paired by task) and infrastructure failures. By default a check passes "
        "when its whole 90 % interval over tasks clears the threshold, fails when the interval lies beyond it, "
        "and otherwise could not judge (--decision). Prints a markdown summary for a pull-request comment. "
        "Exit 0 pass, 1 fail, 2 could not judge.",
    )
    p.add_argument("run_dir", metavar="DIR", help="cross-play run directory (or its results.json)")
    add_model_options(p, CONFIG, required=("policy",))
    p.add_argument("--junit", default=None, metavar="FILE", help="write JUnit XML here")
    p.add_argument("--markdown", default=None, metavar="FILE", help="write the markdown summary here")
    p.add_argument("--json", default=None, metavar="FILE", help="write the verdict as JSON here")


def check_outputs(args: argparse.Namespace) -> None:
    """Refuse a report path that is the gate's input, a system or run folder's, or an existing entry that
    is not a regular file (a report from an earlier run is rewritten); one line naming the flag."""
    from collapse_probe._output import check_output_path
    from collapse_probe.errors import ConfigError

    src = Path(args.run_dir)
    source = (src / "results.json" if src.is_dir() else src).resolve()
    for flag in ("--junit", "--markdown", "--json"):
        path = getattr(args, flag[2:])
        if path and Path(path).resolve() == source:
            raise ConfigError(
                f"{flag} {path}: would overwrite the results the gate reads; write the gate's output elsewhere"
            )
        if path:
            check_output_path(path, flag, replace=True)


def run(args: argparse.Namespace) -> int:
    import json

    from collapse_probe._gate import EXIT_CANNOT_JUDGE, gate_run_dir
    from collapse_probe.errors import ConfigError
    from collapse_probe.report.gate_text import junit_xml, markdown

    try:
        check_outputs(args)
        options = model_values(args, config_fields(CONFIG, exclude=("policy",)))
        results = gate_run_dir(args.run_dir, args.policy, **options)
        md = markdown(results)
    except ConfigError as exc:
        print(f"collapse-probe gate: error: {exc}", file=sys.stderr)
        return EXIT_CANNOT_JUDGE
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
        ("--markdown", args.markdown, md),
        ("--junit", args.junit, junit_xml(results) if args.junit else ""),
        ("--json", args.json, json.dumps(results.to_json(), indent=2) + "\n" if args.json else ""),
    ):
        if path:
            try:
                Path(path).parent.mkdir(parents=True, exist_ok=True)
                Path(path).write_text(text, encoding="utf-8")
            except OSError as exc:
                print(
                    f"collapse-probe gate: error: {flag} {path}: cannot write ({exc.strerror or exc})", file=sys.stderr
                )
                return EXIT_CANNOT_JUDGE
    return results.exit_code
