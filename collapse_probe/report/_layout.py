"""Layout rules that keep figures readable for long names, many rows and big matrices.

Model specs run to 100 characters (``scripted:collapse_probe/data/scripted/p4g_donor_…``) and state
ids to more; drawn as axis labels they are rotated, cut and run into titles. Figures here label
with :func:`short_labels` (unique, at most :data:`LABEL_CHARS` characters) and show the full name
in the hover and in a :func:`label_table` under the figure; heights grow with the rows
(:func:`rows_height`); titles and notes are wrapped to the figure's width (:func:`wrap`) and placed
above the plot area, where they cannot cover data (:func:`titled`).
"""

from __future__ import annotations

import html
import os
import textwrap
from collections.abc import Sequence
from typing import Any, TypedDict


class Table(TypedDict):
    """A table a report or the dashboard shows: its column headings and its rows of cells (each written as text)."""

    columns: list[str]
    rows: list[list[Any]]


__all__ = [
    "LABEL_CHARS",
    "Table",
    "display_width",
    "empty_figure",
    "label_table",
    "pad",
    "rows_height",
    "short_labels",
    "titled",
    "wrap",
]

LABEL_CHARS = 24
"""The longest axis label drawn (about 150 px at plotly's 12 px font)."""
TITLE_CHARS = 60
"""Characters per title line: a 550 px wide figure (a half-width dashboard column) at plotly's 17 px title font."""
NOTE_CHARS = 75
"""Characters per line of a figure's note (13 px font) in the same width."""
LINE_PX = 22
"""Height of one wrapped title or note line."""


def _stem(name: str) -> str:
    """The part of a model spec that tells it apart: ``vs:scripted:dir/donor.json`` -> ``vs:donor``,
    ``openai-compatible/model@http://host:8000/v1`` -> ``model``."""
    prefix = ""
    for p in ("vs:", "persona:"):
        if name.startswith(p):
            prefix, name = prefix + p, name[len(p) :]
    if name.startswith("scripted:"):
        name = os.path.basename(name[len("scripted:") :]).removesuffix(".json")
    elif "/" in name:  # provider/model[@BASE_URL]: the model tells it apart
        name = name.split("@", 1)[0]
        if len(name) > LABEL_CHARS:
            name = name.rsplit("/", 1)[-1]
    return prefix + name


def _middle(name: str, chars: int) -> str:
    """``name`` cut in the middle to ``chars`` characters (both ends kept: they tell names apart)."""
    if len(name) <= chars:
        return name
    head = chars // 2
    tail = chars - 1 - head
    return name[:head] + "…" + (name[-tail:] if tail else "")


SEPARATORS = "_-/:. "
"""Where a shared prefix may be cut: after one of these, never inside a word."""


def _word_start(name: str, start: int, core: int) -> int:
    """Where a label cut from the left starts: ``start`` moved forward past the next separator in the
    shared prefix (``name[:core]``), so ``p4g_donor_rapport`` cut to 15 characters reads
    ``…donor_rapport``, not ``…g_donor_rapport``; ``start`` itself when no word of the prefix would be
    left (``…xxxxxxxxx-1`` keeps more of a name than ``…1``)."""
    if start <= 0 or name[start - 1] in SEPARATORS:
        return max(start, 0)
    for i in range(start, core - 1):
        if name[i] in SEPARATORS:
            return i + 1
    return start


def _common_affixes(names: Sequence[str]) -> tuple[int, int]:
    """Lengths of the prefix and suffix every name shares (none for a single name)."""
    if len(names) < 2:
        return 0, 0
    pre = len(os.path.commonprefix(list(names)))
    suf = len(os.path.commonprefix([n[::-1] for n in names]))
    shortest = min(len(n) for n in names)
    suf = min(suf, shortest - pre)
    return pre, max(suf, 0)


def short_labels(names: Sequence[str], chars: int = LABEL_CHARS) -> list[str]:
    """Unique labels of at most ``chars`` characters for ``names``, in order.

    Names that fit are kept. Otherwise model specs lose their directories and ``.json``; then the
    prefix and suffix all names share (``p4g_donor_`` … ``_v2``) go; what is still too long is cut in
    the middle. If two labels would still read alike, each becomes its position and its cut name
    (``#3 donor…v2``). The full names belong in the hover and in :func:`label_table`.

    >>> short_labels(["scripted:a/b/donor_calm.json", "scripted:a/b/donor_angry.json"])
    ['donor_calm', 'donor_angry']
    >>> short_labels(["policy-" + "x" * 40 + "-1", "policy-" + "x" * 40 + "-2"], chars=12)
    ['…xxxxxxxxx-1', '…xxxxxxxxx-2']
    >>> short_labels(["policy1_" + "y" * 40, "policy2_" + "y" * 40], chars=12)
    ['policy1…', 'policy2…']
    >>> short_labels(["scripted:p4g_donor_diverse", "scripted:p4g_donor_rapport"], chars=16)
    ['…donor_diverse', '…donor_rapport']
    """
    names = [str(n) for n in names]
    if all(len(n) <= chars for n in names) and len(set(names)) == len(names):
        return names
    stems = [_stem(n) for n in names]
    if all(len(s) <= chars for s in stems) and len(set(stems)) == len(stems):
        return stems
    pre, suf = _common_affixes(stems)
    cores = [s[pre : len(s) - suf] for s in stems]
    if all(cores) and len(set(cores)) == len(cores):
        # what tells the names apart, with as much of the shared start before it as fits
        out = []
        for s, c in zip(stems, cores, strict=True):
            end = pre + len(c)
            tail = "…" if suf else ""
            if end + len(tail) <= chars:
                out.append(s[:end] + tail)
            else:
                room = chars - len(tail) - 1
                out.append(
                    "…" + s[_word_start(s, end - room, pre) : end] + tail if room >= len(c) else _middle(c, chars)
                )
        if len(set(out)) == len(out):
            return out
    out = [_middle(s, chars) for s in stems]
    if len(set(out)) == len(out):
        return out
    width = len(str(len(names)))
    return [f"#{i + 1:0{width}d} " + _middle(s, chars - width - 2) for i, s in enumerate(stems)]


def label_table(names: Sequence[str], labels: Sequence[str], what: str) -> Table | None:
    """``{"columns", "rows"}`` mapping each short label to its full name (``None`` when none was shortened)."""
    pairs = [(lab, name) for lab, name in zip(labels, names, strict=True) if lab != name]
    if not pairs:
        return None
    return {"columns": ["label", what], "rows": [list(p) for p in pairs]}


def display_width(text: str) -> int:
    """Columns ``text`` takes in a terminal: a combining mark (the hat of ``ε̂``) takes none, a wide
    character two (``wcwidth``; an unprintable character counts as one)."""
    from wcwidth import wcswidth

    w = wcswidth(text)
    return w if w >= 0 else sum(max(wcswidth(c), 0) if c.isprintable() else 1 for c in text)


def pad(text: str, width: int, right: bool = False) -> str:
    """``text`` padded with spaces to ``width`` terminal columns (:func:`display_width`), left-aligned
    unless ``right``; ``str.ljust`` counts code points and shifts a column after every combining mark."""
    fill = " " * max(width - display_width(text), 0)
    return fill + text if right else text + fill


def wrap(text: str, chars: int = TITLE_CHARS) -> str:
    """``text`` escaped and wrapped to lines of at most ``chars`` characters joined by ``<br>`` (plotly
    draws a title or annotation as one line however wide the figure is)."""
    lines = textwrap.wrap(str(text), width=chars, break_long_words=True, break_on_hyphens=False) or [""]
    return "<br>".join(html.escape(line) for line in lines)


def n_lines(wrapped: str) -> int:
    return wrapped.count("<br>") + 1


def titled(fig: Any, title: str, note: str | None = None, *, top: int = 30, chars: int = TITLE_CHARS) -> Any:
    """Give ``fig`` a wrapped title and, under it, an optional wrapped note (grey, smaller, an annotation
    just above the plot area), both above the plot so neither covers data, a reference line or the
    axes; the top margin grows with their lines. ``top`` is room kept for a legend above the plot."""
    t = wrap(title, chars)
    margin = top + 16 + (LINE_PX + 4) * n_lines(t)
    # plotly anchors a multi-line title by its first line's baseline: each further line needs more padding
    fig.update_layout(title={"text": t, "x": 0, "xanchor": "left", "y": 1, "yanchor": "top", "yref": "container",
                             "pad": {"t": 12 + 10 * (n_lines(t) - 1), "l": 8}})  # fmt: skip
    if note:
        w = wrap(note, NOTE_CHARS)
        fig.add_annotation(text=w, showarrow=False, x=0, xanchor="left", xref="paper", y=1, yanchor="bottom",
                           yref="paper", yshift=6 + top, align="left", font={"size": 13, "color": "#666"})  # fmt: skip
        margin += 8 + 18 * n_lines(w)
    fig.update_layout(margin={"t": margin})
    return fig


def empty_figure(title: str, note: str) -> Any:
    """A figure with nothing to draw: its title and why, no axes (empty axes draw meaningless ticks)."""
    import plotly.graph_objects as go

    fig = go.Figure()
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    titled(fig, title, note, top=0)
    fig.update_layout(height=fig.layout.margin.t + 40, margin={"b": 20, "l": 20, "r": 20}, plot_bgcolor="rgba(0,0,0,0)")
    return fig


def rows_height(n_rows: int, per_row: int = 28, fixed: int = 220, minimum: int = 320) -> int:
    """A figure height that gives each of ``n_rows`` rows ``per_row`` pixels beside ``fixed`` for titles and axes."""
    return max(minimum, fixed + per_row * max(n_rows, 1))
