"""The gate's verdict as people and CI read it: the headline, a pull-request summary in Markdown and
JUnit XML, all drawn from :class:`~collapse_probe.results.GateResults` (what ``gate --json`` writes),
so a saved verdict renders the same as a fresh one."""

from __future__ import annotations

from xml.etree import ElementTree as ET

from collapse_probe.results import GateCheck, GateResults
from collapse_probe.results._gate import STRICT_LEVEL, format_interval, format_number

__all__ = ["headline", "junit_xml", "markdown", "rule_text"]

_HEAD = {0: "✅ passed", 1: "❌ failed", 2: "⚠️ could not judge", 3: "⚠️ could not judge"}
_ICON = {"pass": "✅", "fail": "❌", "error": "⚠️"}


def rule_text(verdict: GateResults) -> str:
    """What the rule is, in one sentence."""
    if verdict.decision == "point":
        return "rule **point**: each point estimate against its threshold (the 95% CI is shown, not used)"
    if verdict.decision == "strict":
        return f"rule **strict**: the {verdict.level:.0%} CI bound must clear each threshold, anything else fails"
    return (
        f"rule **interval**: pass when the {verdict.level:.0%} CI (each end a one-sided "
        f"{1 - (1 - verdict.level) / 2:.1%} bound) clears every threshold, fail when it lies beyond one, "
        "otherwise could not judge (exit 3)"
    ).replace(".0%", "%")


def headline(verdict: GateResults) -> str:
    """The verdict line: outcome, and per threshold check its value, interval and the rule."""
    parts = []
    for c in verdict.checks:
        if c.threshold is None or c.rule is None:
            continue
        shown = c.interval if c.interval is not None else c.ci95
        lvl = c.level if c.interval is not None and c.level is not None else STRICT_LEVEL
        ci = f" ({lvl:.0%} CI {format_interval(shown)})" if shown is not None else ""
        word = {"pass": "clears", "fail": "misses", "error": "undecided at"}[c.status]
        parts.append(f"{c.name} {format_number(c.value) or 'n/a'}{ci} {word} {format_number(c.threshold)}")
    head = _HEAD[verdict.exit_code]
    return f"{head}: " + "; ".join(parts) + f" (rule: {verdict.decision})" if parts else head


def _ci_level(verdict: GateResults) -> float:
    return STRICT_LEVEL if verdict.decision == "point" else verdict.level


def markdown(verdict: GateResults) -> str:
    """A summary for a pull-request comment: the headline, one row per check (healthy infrastructure
    cells folded into one), and each held-out simulator's own transfer."""
    level = _ci_level(verdict)
    lines = [
        f"### collapse-probe gate: {headline(verdict)}",
        "",
        f"Candidate policy `{verdict.policy}`"
        + (f", baseline `{verdict.baseline_policy}`" if verdict.baseline_policy else "")
        + f"; {rule_text(verdict)}.",
        "",
        f"| check | result | value | {level:.0%} CI | threshold | detail |",
        "|---|---|---|---|---|---|",
    ]
    infra = [c for c in verdict.checks if c.name.startswith("infra:")]
    rows = list(verdict.checks)
    if infra and all(c.status == "pass" for c in infra):
        # one row for healthy cells keeps the comment short; JUnit keeps one case per cell
        worst = max(infra, key=lambda c: c.value or 0.0)
        summary = GateCheck(f"infra ({len(infra)} cells)", "pass", f"every cell within the limit; worst: {worst.message}",
                            value=worst.value, threshold=worst.threshold)  # fmt: skip
        rows = [c for c in rows if c not in infra]
        rows.insert(1 if rows and rows[0].name == "results" else 0, summary)
    for c in rows:
        shown = c.interval if c.interval is not None else c.ci95
        ci = format_interval(shown) if shown is not None else ""
        name = c.name.replace("|", "\\|")
        detail = c.message.replace("|", "\\|").replace("\n", " ")
        lines.append(
            f"| `{name}` | {_ICON[c.status]} {c.status} | {format_number(c.value)} | {ci} | "
            f"{format_number(c.threshold)} | {detail} |"
        )
    if verdict.per_simulator:
        lines += ["", f"Transfer per held-out simulator ({level:.0%} CI):", "",
                  "| held-out simulator | transfer | CI | tasks | required |", "|---|---|---|---|---|"]  # fmt: skip
        for row in verdict.per_simulator:
            shown = row.interval or row.ci95
            need = next((c for c in verdict.checks if c.name == f"transfer:{row.simulator}"), None)
            req = f"{_ICON[need.status]} >= {format_number(need.threshold)}" if need is not None else "not required"
            sim = row.simulator.replace("|", "\\|")
            lines.append(
                f"| `{sim}` | {format_number(row.value)} | {format_interval(shown) if shown else ''} | "
                f"{row.n_tasks} | {req} |"
            )
    return "\n".join(lines) + "\n"


def junit_xml(verdict: GateResults) -> str:
    """JUnit XML: one testcase per check; a failed check has a ``failure``, an unjudgeable one an ``error``."""
    checks = verdict.checks
    fails = sum(1 for c in checks if c.status == "fail")
    errors = sum(1 for c in checks if c.status == "error")
    counts = {"tests": str(len(checks)), "failures": str(fails), "errors": str(errors)}
    suites = ET.Element("testsuites", {"name": "collapse-probe gate", **counts})
    suite = ET.SubElement(suites, "testsuite", {"name": f"gate {verdict.policy}", **counts, "skipped": "0"})
    for c in checks:
        case = ET.SubElement(suite, "testcase", classname="collapse_probe.gate", name=c.name)
        if c.status == "fail":
            el = ET.SubElement(case, "failure", message=c.message, type="threshold")
            el.text = c.message
        elif c.status == "error":
            el = ET.SubElement(case, "error", message=c.message, type="could-not-judge")
            el.text = c.message
        out = ET.SubElement(case, "system-out")
        out.text = f"value={format_number(c.value)} ci95={c.ci95} threshold={format_number(c.threshold)}" + (
            f" rule={c.rule} interval={c.interval} level={c.level}" if c.rule else ""
        )
        if c.name == "transfer" and verdict.per_simulator:
            out.text += "".join(
                f"\nheld-out {r.simulator}: transfer={format_number(r.value)} ci95={r.ci95} interval={r.interval}"
                for r in verdict.per_simulator
            )
    ET.indent(suites)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"
