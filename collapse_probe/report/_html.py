"""Self-contained HTML reports: plotly figures with plotly.js inlined once, plus small tables.

The same figure functions feed these reports and the Streamlit dashboard (one plotting module,
two front ends): report pages call :func:`write_html_report` with the figures the dashboard shows.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path
from typing import Any

Section = tuple[str, Any]
"""``(heading, content)`` where content is a plotly figure, an HTML string, or a table
``{"columns": [...], "rows": [[...], ...]}``."""


def table_html(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A plain HTML table; every cell is escaped."""
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(_fmt(v))}</td>" for v in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return "" if v is None else str(v)


def _usage_section(run_dir: Path) -> list[Section]:
    """The "Model usage and cost" table of a report written into a run directory with a ``usage.json``
    (every pipeline that calls models keeps one; see :mod:`collapse_probe.models._usage`)."""
    from collapse_probe.errors import ConfigError
    from collapse_probe.models._usage import read_usage_file

    try:
        usage = read_usage_file(run_dir / "usage.json")
    except ConfigError:
        return []
    if not usage:
        return []
    rows = [[spec, u.requests, u.input_tokens, u.output_tokens, _usd(u.cost_usd)] for spec, u in usage.items()]
    columns = ["model", "calls", "input tokens", "output tokens", "cost (USD)"]
    return [("Model usage and cost", {"columns": columns, "rows": rows})]


def _usd(v: Any) -> str:
    return "unknown" if v is None else f"{float(v):.4f}"


TICK_FORMAT = ".3~g"
"""d3 format of numeric value axes: at most three significant digits, no trailing zeros (0.05, not
0.0500000000000007216)."""


def step_axis(fig: Any, steps: Sequence[Any], title: str = "training step") -> Any:
    """An x axis of whole steps: integer ticks only (no 1.2), about ten of them at most."""
    import math

    values = [s for s in steps if isinstance(s, int | float) and not isinstance(s, bool)]
    span = (max(values) - min(values)) if values else 0
    dtick = max(1, math.ceil(span / 10))
    fig.update_xaxes(title=title, tickmode="linear", tick0=0, dtick=dtick, tickformat="d")
    return fig


def note_figure(fig: Any, text: str) -> Any:
    """Write ``text`` across an empty or undefined figure, so it says why there is nothing to see."""
    fig.add_annotation(
        text=text, showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper", font={"size": 14, "color": "#666"}
    )
    return fig


def write_html_report(path: str | Path, title: str, sections: Sequence[Section], subtitle: str = "") -> Path:
    """Write a self-contained report (works offline: plotly.js is embedded, no CDN).

    Args:
        path: output file.
        title: page title.
        sections: ``(heading, content)`` pairs rendered in order.
        subtitle: a line under the title (e.g. the verdict).

    A report written into a run directory ends with the run's model usage and cost (``usage.json``).
    """
    import plotly.io as pio

    sections = [*sections, *_usage_section(Path(path).parent)]
    parts = []
    first_fig = True
    for heading, content in sections:
        parts.append(f"<section><h2>{html.escape(heading)}</h2>")
        if hasattr(content, "to_html"):
            parts.append(pio.to_html(content, full_html=False, include_plotlyjs=first_fig))
            first_fig = False
        elif isinstance(content, dict) and "columns" in content:
            parts.append(table_html(content["columns"], content["rows"]))
        else:
            parts.append(str(content))
        parts.append("</section>")
    doc = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 1100px; color: #222; }}
h1 {{ margin-bottom: 0.2rem; }} .subtitle {{ color: #555; margin-bottom: 1.5rem; }}
table {{ border-collapse: collapse; margin: 0.5rem 0; font-size: 0.9rem; }}
td, th {{ border: 1px solid #ddd; padding: 4px 8px; text-align: left; }} th {{ background: #f4f4f4; }}
section {{ margin-bottom: 2rem; }}
</style></head><body>
<h1>{html.escape(title)}</h1><div class="subtitle">{html.escape(subtitle)}</div>
{"".join(parts)}
<footer style="color:#888;font-size:0.8rem">collapse-probe report</footer>
</body></html>
"""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(doc, encoding="utf-8")
    return p
