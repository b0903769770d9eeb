"""Self-contained HTML reports: plotly figures with plotly.js inlined once, plus small tables.

The same figure functions feed these reports and the Streamlit dashboard (one plotting module,
two front ends): report pages call :func:`write_html_report` with the figures the dashboard shows.
A page embeds the smallest plotly.js bundle that draws all its figures: the cartesian bundle
shipped in ``collapse_probe/data/plotly`` (1.5 MB) when every trace is one of its types, else the
full bundle of the plotly package (4.8 MB). Either way the page needs no network.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from collapse_probe.results import ResultsModel

M = TypeVar("M", bound=ResultsModel)

Section = tuple[str, Any]
"""``(heading, content)`` where content is a plotly figure, an HTML string, a :class:`Sentence`, or a
table ``{"columns": [...], "rows": [[...], ...]}``."""


class Sentence(str):
    """A section that is one sentence of plain text, in place of a figure with nothing to draw
    (escaped into a paragraph of the report; the dashboard shows it as a note)."""

    __slots__ = ()


def report_results(model: type[M], results: Any, path: str | Path, name: str = "results.json") -> M:
    """The results a report reads, parsed through their model before anything is drawn.

    Args:
        model: the results model of the report's run kind.
        results: the typed results, or the JSON object the run wrote (parsed strictly, as a reader of
            the file would).
        path: the report being written; the results file named in a problem is ``name`` beside it.
        name: the results file of the run (``compare.json`` and ``sweep.json`` for the lab's).

    Raises:
        ConfigError: one line naming the results file and the field that does not hold what its
            model declares (not a traceback from inside a figure).
    """
    from pydantic import ValidationError

    from collapse_probe.errors import ConfigError
    from collapse_probe.results import describe_error

    if isinstance(results, model):
        return results
    where = str(Path(path).with_name(name))
    if not isinstance(results, Mapping):
        raise ConfigError(f"{where}: expected a JSON object, got {type(results).__name__}")
    try:
        return model.parse(dict(results))
    except ValidationError as exc:
        raise ConfigError(describe_error(exc, model, where)) from None


def table_html(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A plain HTML table; every cell is escaped. A value cell (:func:`is_value_text`: ``0.569 ± 0.254``,
    ``[0.019, 0.498]``) gets ``class="num"``, which never wraps: a number broken over lines reads as two;
    a cell with a word longer than :data:`LONG_WORD` gets ``class="long"``, which may break inside it."""
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in columns)
    body = "".join("<tr>" + "".join(_cell(_fmt(v)) for v in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


VALUE_CHARS = 28
"""The longest cell kept on one line as a value (two intervals side by side still wrap)."""


def is_value_text(text: str) -> bool:
    """Whether a table cell is a value (a number, an interval, ``mean ± half-width``, a count ``3/4``):
    short, and no letter in it other than ``n/a`` and an exponent's ``e``."""
    letters = [c for c in text.replace("n/a", "").replace("e-", "").replace("e+", "") if c.isalpha()]
    return bool(text) and len(text) <= VALUE_CHARS and not letters


LONG_WORD = 24
"""A cell with a word longer than this (a model spec, a state id) may break inside it: a table cell
grows to its longest word, and one spec would push the table past the page."""


def _cell(text: str) -> str:
    cls = "num" if is_value_text(text) else "long" if any(len(w) > LONG_WORD for w in text.split()) else ""
    return f'<td class="{cls}">{html.escape(text)}</td>' if cls else f"<td>{html.escape(text)}</td>"


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


FIGURE_CONFIG = {"displaylogo": False, "responsive": True}
"""plotly's config of report figures: no link to plotly's site (a report is read offline)."""

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
    """Say why a figure has nothing (or less) to see: ``text`` wrapped, left-aligned just above the
    plot area, where it cannot cover data, a reference line or the axes; the top margin grows to
    hold it under the title."""
    from collapse_probe.report._layout import NOTE_CHARS, n_lines, wrap

    w = wrap(text, NOTE_CHARS)
    fig.add_annotation(text=w, showarrow=False, x=0, xanchor="left", xref="paper", y=1, yanchor="bottom", yref="paper",
                       yshift=6, align="left", font={"size": 13, "color": "#666"})  # fmt: skip
    fig.update_layout(margin={"t": max(fig.layout.margin.t or 0, 90 + 20 * n_lines(w))})
    return fig


CARTESIAN_TRACES = frozenset(
    {"bar", "box", "contour", "heatmap", "histogram", "histogram2d", "histogram2dcontour", "image", "pie", "scatter",
     "scatterternary", "violin"}
)  # fmt: skip
"""Trace types of the shipped cartesian bundle (its README lists them)."""
CARTESIAN_BUNDLE = "plotly-cartesian.min.js"
CARTESIAN_VERSION = "4.1.1"
"""plotly.js version of the shipped bundle; another major version of plotly.py's own falls back to the full one."""


def plotlyjs_for(figures: Sequence[Any]) -> tuple[str, str]:
    """``(name, source)`` of the smallest plotly.js that draws every figure of ``figures``, offline.

    The cartesian bundle when every trace is one of :data:`CARTESIAN_TRACES` and plotly.py draws with
    the same major plotly.js version, else plotly.py's full bundle.
    """
    from importlib import resources

    from plotly.offline import get_plotlyjs, get_plotlyjs_version

    types = {str(getattr(t, "type", None) or "scatter") for f in figures for t in f.data}
    same_major = get_plotlyjs_version().split(".")[0] == CARTESIAN_VERSION.split(".")[0]
    if types <= CARTESIAN_TRACES and same_major:
        bundle = resources.files("collapse_probe") / "data" / "plotly" / CARTESIAN_BUNDLE
        if bundle.is_file():
            return "cartesian", bundle.read_text(encoding="utf-8")
    return "full", get_plotlyjs()


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
    figures = [c for _, c in sections if hasattr(c, "to_html")]
    parts = []
    bundle = ""
    marker = "<!--collapse-probe:plotlyjs-->"
    if figures:
        name, source = plotlyjs_for(figures)
        source = source.replace("</script", "<\\/script")  # a string in the code must not end the element
        bundle = f'<script type="text/javascript" data-plotlyjs="{name}">{source}</script>'
        parts.append(marker)  # the library goes in after the scrub: it is plotly's code, not run data
    for heading, content in sections:
        parts.append(f"<section><h2>{html.escape(heading)}</h2>")
        if hasattr(content, "to_html"):
            parts.append(pio.to_html(content, full_html=False, include_plotlyjs=False, config=FIGURE_CONFIG))
        elif isinstance(content, Sentence):
            parts.append(f'<p class="sentence">{html.escape(content)}</p>')
        elif isinstance(content, dict) and "columns" in content:
            parts.append('<div class="scroll">' + table_html(content["columns"], content["rows"]) + "</div>")
        else:
            parts.append(str(content))
        parts.append("</section>")
    doc = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 1100px; padding: 0 1rem; color: #222; }}
h1, h2, .subtitle, td, th, p, pre {{ overflow-wrap: break-word; }}
h1 {{ margin-bottom: 0.2rem; font-size: 1.6rem; }} .subtitle {{ color: #555; margin-bottom: 1.5rem; }}
.scroll {{ overflow-x: auto; }}
table {{ border-collapse: collapse; margin: 0.5rem 0; font-size: 0.85rem; }}
td, th {{ border: 1px solid #ddd; padding: 4px 5px; text-align: left; vertical-align: top; }} th {{ background: #f4f4f4; }}
td.num {{ white-space: nowrap; }} td.long {{ overflow-wrap: anywhere; }}
section {{ margin-bottom: 2rem; }}
</style></head><body>
<h1>{html.escape(title)}</h1><div class="subtitle">{html.escape(subtitle)}</div>
{"".join(parts)}
<footer style="color:#888;font-size:0.8rem">collapse-probe report</footer>
</body></html>
"""
    from collapse_probe.core._secrets import scrub

    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    # a spec's URL credentials, a key a reply quoted: never in a report (the run's data is scrubbed; the
    # embedded plotly.js is inserted afterwards, since scrubbing URL-like strings in its code breaks it)
    # a record may keep a lone surrogate a model or a file gave ("\ud800": JSON, not UTF-8 text); the page
    # shows U+FFFD there rather than failing to be written
    p.write_text(scrub(doc).replace(marker, bundle, 1), encoding="utf-8", errors="replace")
    return p
