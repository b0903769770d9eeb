"""What a person sees, measured in the browser: text boxes that overlap or are clipped, console errors.

:func:`text_problems` runs one script in the page (through Playwright) that collects every visible
text box: each SVG ``<text>`` of a plotly figure as the quadrilateral its local bounding box maps to
on screen (rotated tick labels stay rotated, so two neighbouring labels at -35° are not taken for
overlapping by their axis-aligned boxes), and each run of HTML text as the rectangles of its line
boxes. Two boxes of one figure, or two HTML boxes, that share more than :data:`OVERLAP_PX2` square
pixels overlap; a box that reaches outside its figure, outside an ancestor that hides overflow (the
ellipsis of a cut run name) or off the page's left edge is clipped. A scrolling container is not
clipping: its content can be scrolled to.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

OVERLAP_PX2 = 4.0
"""Intersections smaller than this (square pixels) are anti-aliasing, not overlap."""
CLIP_PX = 1.5
"""How far (pixels) a box may cross its container's edge before it counts as clipped."""

_SCRIPT = r"""
([overlapPx2, clipPx]) => {
  const visible = (el) => {
    for (let e = el; e && e.nodeType === 1; e = e.parentElement) {
      const s = getComputedStyle(e);
      if (s.display === 'none' || s.visibility === 'hidden' || parseFloat(s.opacity) === 0) return false;
    }
    return true;
  };
  // text for screen readers only (a "skip to content" link): clipped to a pixel on purpose
  const srOnly = (el) => {
    for (let e = el; e && e.nodeType === 1; e = e.parentElement) {
      const s = getComputedStyle(e);
      if (s.display === 'contents') continue;  // draws no box of its own
      const r = e.getBoundingClientRect();
      const placed = s.position === 'absolute' || s.position === 'fixed';
      if ((placed && (r.width <= 2 || r.height <= 2)) || (s.clip && s.clip !== 'auto') || s.clipPath.startsWith('inset(50%'))
        return true;
    }
    return false;
  };
  const quadOfSvgText = (el) => {
    let b;
    try { b = el.getBBox(); } catch (e) { return null; }
    if (!b || b.width < 0.5 || b.height < 0.5) return null;
    const m = el.getScreenCTM();
    if (!m) return null;
    const pt = (x, y) => [m.a * x + m.c * y + m.e + window.scrollX, m.b * x + m.d * y + m.f + window.scrollY];
    return [pt(b.x, b.y), pt(b.x + b.width, b.y), pt(b.x + b.width, b.y + b.height), pt(b.x, b.y + b.height)];
  };
  const rectQuad = (r) => [[r.left + scrollX, r.top + scrollY], [r.right + scrollX, r.top + scrollY],
                           [r.right + scrollX, r.bottom + scrollY], [r.left + scrollX, r.bottom + scrollY]];
  // Sutherland-Hodgman clipping of convex polygon a by convex polygon b (both counter/clockwise alike)
  const area = (p) => { let s = 0; for (let i = 0; i < p.length; i++) { const [x1, y1] = p[i], [x2, y2] = p[(i + 1) % p.length]; s += x1 * y2 - x2 * y1; } return s / 2; };
  const orient = (p) => area(p) < 0 ? p.slice().reverse() : p;
  const clip = (subject, clipper) => {
    let out = orient(subject); const c = orient(clipper);
    for (let i = 0; i < c.length && out.length; i++) {
      const [ax, ay] = c[i], [bx, by] = c[(i + 1) % c.length];
      const inside = ([x, y]) => (bx - ax) * (y - ay) - (by - ay) * (x - ax) >= 0;
      const cross = ([px, py], [qx, qy]) => {
        const a1 = by - ay, b1 = ax - bx, c1 = a1 * ax + b1 * ay;
        const a2 = qy - py, b2 = px - qx, c2 = a2 * px + b2 * py;
        const d = a1 * b2 - a2 * b1;
        return d === 0 ? [px, py] : [(b2 * c1 - b1 * c2) / d, (a1 * c2 - a2 * c1) / d];
      };
      const input = out; out = [];
      for (let j = 0; j < input.length; j++) {
        const p = input[j], q = input[(j + 1) % input.length];
        if (inside(q)) { if (!inside(p)) out.push(cross(p, q)); out.push(q); }
        else if (inside(p)) out.push(cross(p, q));
      }
    }
    return out;
  };
  const bounds = (q) => {
    const xs = q.map(p => p[0]), ys = q.map(p => p[1]);
    return [Math.min(...xs), Math.min(...ys), Math.max(...xs), Math.max(...ys)];
  };
  const boxes = [];
  // plotly figures: every <text> of each figure's SVG layers
  document.querySelectorAll('.js-plotly-plot').forEach((plot, fi) => {
    const frame = plot.querySelector('.main-svg');
    if (!frame) return;
    const fr = frame.getBoundingClientRect();
    plot.querySelectorAll('svg.main-svg text').forEach((t) => {
      if (!t.textContent.trim() || !visible(t) || t.closest('.hoverlayer')) return;
      const q = quadOfSvgText(t);
      if (!q) return;
      boxes.push({group: 'figure ' + fi, text: t.textContent.trim(), quad: q,
                  frame: [fr.left + scrollX, fr.top + scrollY, fr.right + scrollX, fr.bottom + scrollY]});
    });
  });
  // HTML text: the line boxes of each text node outside the figures
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const el = n.parentElement;
    if (!el || !n.textContent.trim() || el.closest('svg, script, style, noscript, canvas, [aria-hidden="true"]')) continue;
    if (!visible(el) || srOnly(el)) continue;
    const range = document.createRange();
    range.selectNodeContents(n);
    const rects = Array.from(range.getClientRects()).filter(r => r.width >= 0.5 && r.height >= 0.5);
    if (!rects.length) continue;
    let clippedBy = null;
    const ellipsis = (e) => { const s = getComputedStyle(e); return s.textOverflow === 'ellipsis' && e.scrollWidth > e.clientWidth + 1; };
    for (let a = el; a && a !== document.body && a.nodeType === 1; a = a.parentElement) {
      if (ellipsis(a)) { clippedBy = 'text cut with an ellipsis'; break; }
      const s = getComputedStyle(a);
      // inside a scrolling container the text can be scrolled to: what holds the container is not clipping it
      if (['auto', 'scroll'].includes(s.overflowX) || ['auto', 'scroll'].includes(s.overflowY)) break;
      const hides = (v) => v === 'hidden' || v === 'clip';
      if (hides(s.overflowX) || hides(s.overflowY)) {
        const r = a.getBoundingClientRect();
        for (const t of rects) {
          if ((hides(s.overflowX) && (t.left < r.left - clipPx || t.right > r.right + clipPx)) ||
              (hides(s.overflowY) && (t.top < r.top - clipPx || t.bottom > r.bottom + clipPx))) {
            clippedBy = 'hidden overflow of <' + a.tagName.toLowerCase() + (a.className && typeof a.className === 'string' ? '.' + a.className.split(' ')[0] : '') + '>';
            break;
          }
        }
        if (clippedBy) break;
      }
    }
    let scrolls = false;
    for (let a = el; a && a !== document.body && a.nodeType === 1; a = a.parentElement) {
      const s = getComputedStyle(a);
      if (['auto', 'scroll'].includes(s.overflowX)) { scrolls = true; break; }
    }
    const pageWidth = document.documentElement.clientWidth;
    for (const r of rects) {
      boxes.push({group: 'html', text: n.textContent.trim(), quad: rectQuad(r), clippedBy,
                  offLeft: r.left + scrollX < -clipPx, offRight: !scrolls && r.right > pageWidth + clipPx});
    }
  }
  const problems = [];
  const short = (s) => s.length > 60 ? s.slice(0, 57) + '...' : s;
  for (const b of boxes) {
    if (b.frame) {
      const [x0, y0, x1, y1] = bounds(b.quad), [fx0, fy0, fx1, fy1] = b.frame;
      if (x0 < fx0 - clipPx || y0 < fy0 - clipPx || x1 > fx1 + clipPx || y1 > fy1 + clipPx)
        problems.push({kind: 'clipped', where: b.group, text: short(b.text), detail: 'outside its figure'});
    } else if (b.clippedBy || b.offLeft || b.offRight) {
      problems.push({kind: 'clipped', where: b.group, text: short(b.text),
                     detail: b.clippedBy || (b.offLeft ? 'off the left edge of the page' : 'past the right edge of the page')});
    }
  }
  const seen = new Set();
  for (let i = 0; i < boxes.length; i++) {
    const bi = bounds(boxes[i].quad);
    for (let j = i + 1; j < boxes.length; j++) {
      if (boxes[i].group !== boxes[j].group) continue;
      const bj = bounds(boxes[j].quad);
      if (bi[2] <= bj[0] || bj[2] <= bi[0] || bi[3] <= bj[1] || bj[3] <= bi[1]) continue;
      const inter = clip(boxes[i].quad, boxes[j].quad);
      const a = inter.length >= 3 ? Math.abs(area(inter)) : 0;
      if (a <= overlapPx2) continue;
      // one text drawn twice in the same place (a widget's measuring copy) is not two texts colliding
      if (boxes[i].text === boxes[j].text) {
        const ai = Math.abs(area(boxes[i].quad)), aj = Math.abs(area(boxes[j].quad));
        if (a >= 0.9 * Math.min(ai, aj)) continue;
      }
      const key = boxes[i].text + '\u0000' + boxes[j].text;
      if (seen.has(key)) continue;
      seen.add(key);
      problems.push({kind: 'overlap', where: boxes[i].group, text: short(boxes[i].text) + '  <->  ' + short(boxes[j].text),
                     detail: Math.round(a) + ' px²'});
    }
  }
  return {problems, n_boxes: boxes.length};
}
"""


def measure_text(page: Any) -> dict[str, Any]:
    """``{"problems": [...], "n_boxes": N}`` of the page as it is drawn now (see the module docstring)."""
    return page.evaluate(_SCRIPT, [OVERLAP_PX2, CLIP_PX])


def text_problems_of(found: dict[str, Any]) -> list[str]:
    """One line per overlapping pair or clipped text box of a :func:`measure_text` result."""
    return [f"{p['kind']} ({p['where']}, {p['detail']}): {p['text']}" for p in found["problems"]]


def text_problems(page: Any) -> list[str]:
    """One line per overlapping pair or clipped text box of the page (empty: every text is readable)."""
    return text_problems_of(measure_text(page))


def collect_console_errors(page: Any) -> list[str]:
    """Attach to ``page`` before it loads: the list fills with its console errors and uncaught exceptions."""
    errors: list[str] = []
    page.on("console", lambda m: errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
    return errors


def report_lines(name: str, problems: Iterable[str]) -> str:
    lines = list(problems)
    return f"{name}: {len(lines)} problem(s)\n  " + "\n  ".join(lines)


def show_whole_app(page: Any, width: int = 1400, limit: int = 20000) -> None:
    """Make the viewport as tall as a Streamlit app's content, which scrolls inside the page rather
    than with it: every element is then drawn (and measured, and in the screenshot) at once. Charts
    draw as they come into view and make the content taller, so this repeats until it stops growing."""
    script = (
        "() => Math.max(...Array.from(document.querySelectorAll('[data-testid=\"stMain\"], section.main, body'))"
        ".map(e => e.scrollHeight))"
    )
    for _ in range(8):
        height = min(int(page.evaluate(script)) + 40, limit)
        if height <= page.viewport_size["height"]:
            break
        page.set_viewport_size({"width": width, "height": height})
        page.wait_for_timeout(1200)
