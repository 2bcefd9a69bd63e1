"""Inline SVG charts written by hand: no plotting library, no network resource, one string each."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from html import escape

PALETTE = ["#e6550d", "#7b3fc4", "#0f9d8a", "#d6336c", "#8c6d1f", "#3b6fb6", "#b8860b", "#5f9ea0"]
"""Selector colours, in order; coverage is COVERAGE_COLOR."""
COVERAGE_COLOR = "#1357d6"
ORACLE_COLOR = "#555555"
MARGIN = {"left": 56, "right": 170, "top": 30, "bottom": 44}


@dataclass
class Series:
    """One line (or bar group member) with an optional confidence band."""

    name: str
    xs: list[float]
    ys: list[float]
    color: str
    lo: list[float] | None = None
    hi: list[float] | None = None
    dashed: bool = False


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """Round tick values covering [lo, hi]."""
    if hi <= lo:
        hi = lo + 1.0
    raw = (hi - lo) / count
    step = 10 ** math.floor(math.log10(raw))
    step *= next(m for m in (1, 2, 2.5, 5, 10) if raw <= m * step)
    start = math.floor(lo / step) * step
    return [round(start + i * step, 10) for i in range(int(math.ceil((hi - start) / step)) + 1)]


class Frame:
    """Maps data to pixels for one chart and draws its axes."""

    def __init__(self, width: int, height: int, x_range: tuple[float, float], y_ticks: list[float]):
        self.w, self.h = width, height
        self.x0, self.x1 = x_range if x_range[1] > x_range[0] else (x_range[0] - 0.5, x_range[0] + 0.5)
        self.y_ticks = y_ticks
        self.y0, self.y1 = y_ticks[0], y_ticks[-1]

    def px(self, x: float) -> float:
        span = self.w - MARGIN["left"] - MARGIN["right"]
        return MARGIN["left"] + (x - self.x0) / (self.x1 - self.x0) * span

    def py(self, y: float) -> float:
        span = self.h - MARGIN["top"] - MARGIN["bottom"]
        return self.h - MARGIN["bottom"] - (y - self.y0) / (self.y1 - self.y0) * span

    def axes(self, x_ticks: list[tuple[float, str]], x_label: str, y_label: str) -> list[str]:
        out = []
        left, right, bottom = MARGIN["left"], self.w - MARGIN["right"], self.h - MARGIN["bottom"]
        for t in self.y_ticks:
            y = self.py(t)
            out.append(f'<line x1="{left}" x2="{right}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e3e3e3"/>')
            out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{t:g}</text>')
        for x, label in x_ticks:
            out.append(f'<text x="{self.px(x):.1f}" y="{bottom + 16}" text-anchor="middle">{escape(label)}</text>')
        out.append(f'<line x1="{left}" x2="{right}" y1="{bottom}" y2="{bottom}" stroke="#888"/>')
        out.append(f'<text x="{(left + right) / 2:.0f}" y="{self.h - 8}" text-anchor="middle">{escape(x_label)}</text>')
        out.append(
            f'<text transform="translate(14 {(MARGIN["top"] + bottom) / 2:.0f}) rotate(-90)" '
            f'text-anchor="middle">{escape(y_label)}</text>'
        )
        return out


def _svg(width: int, height: int, title: str, body: list[str]) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'font-family="sans-serif" font-size="11" role="img" aria-label="{escape(title)}">'
        f'<text x="{MARGIN["left"]}" y="18" font-size="13" font-weight="bold">{escape(title)}</text>'
        + "".join(body)
        + "</svg>"
    )


def _legend(series: list[Series], width: int) -> list[str]:
    out, x = [], width - MARGIN["right"] + 14
    for i, s in enumerate(series):
        y = MARGIN["top"] + 8 + 18 * i
        dash = ' stroke-dasharray="5 3"' if s.dashed else ""
        out.append(f'<line x1="{x}" x2="{x + 22}" y1="{y}" y2="{y}" stroke="{s.color}" stroke-width="3"{dash}/>')
        out.append(f'<text x="{x + 28}" y="{y + 4}">{escape(s.name)}</text>')
    return out


def line_chart(title: str, series: list[Series], x_ticks: list[tuple[float, str]], x_label: str, y_label: str,
               y_range: tuple[float, float] | None = None, width: int = 760, height: int = 340) -> str:  # fmt: skip
    """Lines with markers and shaded bands; x values are already transformed (e.g. log2 k)."""
    xs = [x for s in series for x in s.xs] or [0.0]
    ys = [y for s in series for y in (s.lo or []) + (s.hi or []) + s.ys] or [0.0]
    lo, hi = y_range or (min(0.0, min(ys)), max(ys))
    frame = Frame(width, height, (min(xs), max(xs)), nice_ticks(lo, hi))
    body = frame.axes(x_ticks, x_label, y_label)
    for s in series:
        if s.lo is not None and s.hi is not None and s.xs:
            upper = [f"{frame.px(x):.1f},{frame.py(y):.1f}" for x, y in zip(s.xs, s.hi, strict=True)]
            lower = [f"{frame.px(x):.1f},{frame.py(y):.1f}" for x, y in zip(s.xs, s.lo, strict=True)][::-1]
            body.append(f'<polygon points="{" ".join(upper + lower)}" fill="{s.color}" fill-opacity="0.15"/>')
    for s in series:
        points = " ".join(f"{frame.px(x):.1f},{frame.py(y):.1f}" for x, y in zip(s.xs, s.ys, strict=True))
        dash = ' stroke-dasharray="6 4" stroke-width="1.5"' if s.dashed else ' stroke-width="3"'
        body.append(f'<polyline points="{points}" fill="none" stroke="{s.color}"{dash}/>')
        for x, y in zip(s.xs, s.ys, strict=True):
            body.append(f'<circle cx="{frame.px(x):.1f}" cy="{frame.py(y):.1f}" r="3.5" fill="{s.color}"/>')
    return _svg(width, height, title, body + _legend(series, width))


def bar_chart(title: str, groups: list[str], series: list[Series], x_label: str, y_label: str,
              width: int = 760, height: int = 300, ref: tuple[float, str] | None = None) -> str:  # fmt: skip
    """Grouped bars: one group per label, one bar per series (``ys`` aligned with ``groups``); ``ref``: a dashed level."""
    values = [y for s in series for y in s.ys] + ([ref[0]] if ref else []) or [0.0]
    frame = Frame(width, height, (-0.5, max(len(groups), 1) - 0.5), nice_ticks(min(0.0, min(values)), max(values)))
    body = frame.axes([(i, g) for i, g in enumerate(groups)], x_label, y_label)
    slot = (frame.px(1) - frame.px(0)) * 0.8 if len(groups) > 1 else (width - MARGIN["left"] - MARGIN["right"]) * 0.5
    bar = slot / max(len(series), 1)
    zero = frame.py(0.0)
    for j, s in enumerate(series):
        for i, y in enumerate(s.ys):
            x = frame.px(i) - slot / 2 + j * bar
            top, bottom = min(frame.py(y), zero), max(frame.py(y), zero)
            body.append(
                f'<rect x="{x:.1f}" y="{top:.1f}" width="{bar * 0.9:.1f}" height="{max(bottom - top, 0.5):.1f}" '
                f'fill="{s.color}"><title>{escape(s.name)} {escape(groups[i])}: {y:.2f}</title></rect>'
            )
    if ref:
        y, left, right = frame.py(ref[0]), MARGIN["left"], width - MARGIN["right"]
        body.append(f'<line x1="{left}" x2="{right}" y1="{y:.1f}" y2="{y:.1f}" stroke="#333" stroke-dasharray="4 3"/>')
        body.append(f'<text x="{right - 4}" y="{y - 4:.1f}" text-anchor="end">{escape(ref[1])}</text>')
    return _svg(width, height, title, body + _legend(series, width))


def heatmap(title: str, rows: list[tuple[str, str]], colors: dict[str, str], legend: dict[str, str],
            max_width: int = 760) -> str:  # fmt: skip
    """One row per (label, codes) with a coloured cell per code (the task-by-rollout pass map)."""
    cols = max((len(codes) for _, codes in rows), default=1)
    label_w = 150
    cell = max(3.0, min(18.0, (max_width - label_w - 20) / max(cols, 1)))
    row_h = max(3.0, min(16.0, cell))
    height = int(40 + row_h * len(rows) + 30)
    body = []
    for r, (label, codes) in enumerate(rows):
        y = 30 + r * row_h
        if row_h >= 9:
            body.append(f'<text x="{label_w - 6}" y="{y + row_h - 3:.1f}" text-anchor="end">{escape(label)}</text>')
        # One rect per run of equal cells: 400 tasks × 256 rollouts stays a few hundred KB, not 10 MB.
        for code, run in itertools.groupby(enumerate(codes), key=lambda ic: ic[1]):
            columns = [c for c, _ in run]
            body.append(
                f'<rect x="{label_w + columns[0] * cell:.1f}" y="{y:.1f}" width="{len(columns) * cell - 1:.1f}" '
                f'height="{row_h - 1:.1f}" fill="{colors.get(code, "#ffffff")}"/>'
            )
    x = label_w
    for code, name in legend.items():
        body.append(f'<rect x="{x}" y="{height - 20}" width="12" height="12" fill="{colors[code]}" stroke="#999"/>')
        body.append(f'<text x="{x + 16}" y="{height - 10}">{escape(name)}</text>')
        x += 26 + 7 * len(name)
    width = int(max(label_w + cols * cell + 20, x + 20))
    svg = _svg(width, height, title, body)
    return svg.replace(f'x="{MARGIN["left"]}" y="18"', f'x="{label_w}" y="18"', 1)
