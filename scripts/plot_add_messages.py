#!/usr/bin/env python3
"""Plots add_messages cost against history size (BENCHMARKS.md, workload 2)
for `Messages`, `Vec<Message>` and LangGraph, as a dependency-free SVG.

Input: the results.json written by benches/langgraph/bench.py (LangGraph's
times and ours, read from criterion). Log-log axes, one line per
implementation, appends solid and updates by id dashed.

Usage: python3 scripts/plot_add_messages.py [results.json] [out.svg]
Defaults: benches/langgraph/results.json -> docs/add_messages.svg
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from xml.sax.saxutils import escape

REPO = Path(__file__).resolve().parent.parent
SIZES = [100, 1_000, 10_000, 100_000]

W, H = 820, 470
LEFT, RIGHT, TOP, BOTTOM = 80, 240, 50, 60
SERIES = [
    # (label, key template, colour)
    ("Messages (ours)", "ours:{group}/Messages/{n}", "#1b7837"),
    ("Vec<Message> (ours)", "ours:{group}/Vec/{n}", "#2166ac"),
    ("LangGraph add_messages", "langgraph:{group}/{n}", "#b2182b"),
]
GROUPS = [("add_messages_append", "append 1", ""), ("add_messages_update", "update 1 by id", "6,4")]


def value(results, key):
    source, name = key.split(":", 1)
    table = results.get("ours" if source == "ours" else "langgraph", {})
    v = table.get(name)
    return float(v) if isinstance(v, (int, float)) and v > 0 else None


def fmt_time(ns):
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if ns >= scale:
            return f"{ns / scale:g} {unit}"
    return f"{ns:g} ns"


def main():
    src = Path(sys.argv[1]) if len(sys.argv) > 1 else REPO / "benches/langgraph/results.json"
    out = Path(sys.argv[2]) if len(sys.argv) > 2 else REPO / "docs/add_messages.svg"
    results = json.loads(src.read_text())

    points = {}
    for label, template, colour in SERIES:
        for group, _, _ in GROUPS:
            pts = []
            for n in SIZES:
                v = value(results, template.format(group=group, n=n))
                if v is not None:
                    pts.append((n, v))
            points[(label, group)] = pts
    all_values = [v for pts in points.values() for _, v in pts]
    if not all_values:
        sys.exit(f"no data in {src}")
    y_lo = 10 ** math.floor(math.log10(min(all_values) * 0.7))
    y_hi = 10 ** math.ceil(math.log10(max(all_values) * 1.3))
    x_lo, x_hi = SIZES[0], SIZES[-1]
    pw, ph = W - LEFT - RIGHT, H - TOP - BOTTOM

    def x(n):
        return LEFT + pw * (math.log10(n) - math.log10(x_lo)) / (math.log10(x_hi) - math.log10(x_lo))

    def y(v):
        return TOP + ph * (1 - (math.log10(v) - math.log10(y_lo)) / (math.log10(y_hi) - math.log10(y_lo)))

    svg = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
        f'viewBox="0 0 {W} {H}" font-family="Helvetica, Arial, sans-serif" font-size="12">',
        f'<rect width="{W}" height="{H}" fill="white"/>',
        f'<text x="{LEFT + pw / 2}" y="24" text-anchor="middle" font-size="15" font-weight="bold">'
        "add_messages: time per call against history length</text>",
    ]
    # Grid and axes.
    decade = y_lo
    while decade <= y_hi * 1.0001:
        yy = y(decade)
        svg.append(f'<line x1="{LEFT}" y1="{yy:.1f}" x2="{LEFT + pw}" y2="{yy:.1f}" stroke="#ddd"/>')
        svg.append(f'<text x="{LEFT - 8}" y="{yy + 4:.1f}" text-anchor="end">{fmt_time(decade)}</text>')
        decade *= 10
    for n in SIZES:
        xx = x(n)
        svg.append(f'<line x1="{xx:.1f}" y1="{TOP}" x2="{xx:.1f}" y2="{TOP + ph}" stroke="#ddd"/>')
        svg.append(f'<text x="{xx:.1f}" y="{TOP + ph + 18}" text-anchor="middle">{n:,}</text>')
    svg.append(f'<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" fill="none" stroke="#333"/>')
    svg.append(
        f'<text x="{LEFT + pw / 2}" y="{H - 18}" text-anchor="middle">messages in the history (log)</text>'
    )
    svg.append(
        f'<text x="18" y="{TOP + ph / 2}" text-anchor="middle" '
        f'transform="rotate(-90 18 {TOP + ph / 2})">time per call (log)</text>'
    )
    # Lines.
    for label, _, colour in SERIES:
        for group, _, dash in GROUPS:
            pts = points[(label, group)]
            if not pts:
                continue
            path = " ".join(f"{x(n):.1f},{y(v):.1f}" for n, v in pts)
            dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
            svg.append(
                f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2.2"{dash_attr}/>'
            )
            for n, v in pts:
                svg.append(f'<circle cx="{x(n):.1f}" cy="{y(v):.1f}" r="3.2" fill="{colour}"/>')
    # Legend.
    lx, ly = LEFT + pw + 16, TOP + 10
    for i, (label, _, colour) in enumerate(SERIES):
        yy = ly + i * 22
        svg.append(f'<line x1="{lx}" y1="{yy}" x2="{lx + 26}" y2="{yy}" stroke="{colour}" stroke-width="3"/>')
        svg.append(f'<text x="{lx + 32}" y="{yy + 4}">{escape(label)}</text>')
    yy = ly + len(SERIES) * 22 + 12
    for group, name, dash in GROUPS:
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        svg.append(f'<line x1="{lx}" y1="{yy}" x2="{lx + 26}" y2="{yy}" stroke="#555" stroke-width="2"{dash_attr}/>')
        svg.append(f'<text x="{lx + 32}" y="{yy + 4}">{escape(name)}</text>')
        yy += 22
    machine = results.get("machine", {})
    note = f"LangGraph {machine.get('langgraph', '?')}, Python {machine.get('python', '?')}"
    svg.append(f'<text x="{lx}" y="{yy + 12}" font-size="10" fill="#555">{escape(note)}</text>')
    svg.append("</svg>")

    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(svg) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
