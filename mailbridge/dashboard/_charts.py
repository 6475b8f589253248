"""Pictures drawn on the server as SVG (no JavaScript, no chart library to ship): a
horizontal bar chart (poll results), the two arms of an A/B test with their 95 %
intervals, and an automation's graph (top to bottom), a run's path highlighted.

Every label goes through :func:`markupsafe.escape`; the SVG is then marked safe."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import networkx as nx
from markupsafe import Markup, escape

FONT = "font-family='system-ui,sans-serif' font-size='13'"


def _pct(value: float) -> str:
    return f"{value * 100:.1f} %"


def bar_chart(bars: Sequence[tuple[str, int]], *, width: int = 560) -> Markup:
    """One bar per (label, count), longest bar for the largest count."""
    row, label_width = 30, 180
    height = row * max(1, len(bars)) + 10
    top = max((count for _label, count in bars), default=0) or 1
    total = sum(count for _label, count in bars)
    parts = [
        f"<svg xmlns='http://www.w3.org/2000/svg' class='chart' role='img' width='{width}' "
        f"height='{height}' viewBox='0 0 {width} {height}' {FONT}>"
    ]
    span = width - label_width - 90
    for index, (label, count) in enumerate(bars):
        y = 5 + index * row
        length = max(2, round(span * count / top)) if count else 2
        share = f" ({_pct(count / total)})" if total else ""
        parts.append(
            f"<text x='0' y='{y + 18}'>{escape(label[:28])}</text>"
            f"<rect x='{label_width}' y='{y + 4}' width='{length}' height='20' rx='3' "
            f"fill='#4f46e5'><title>{escape(label)}: {count}</title></rect>"
            f"<text x='{label_width + length + 6}' y='{y + 18}'>{count}{share}</text>"
        )
    parts.append("</svg>")
    return Markup("".join(parts))


def wilson_interval(successes: int, trials: int, z: float = 1.96) -> tuple[float, float]:
    """The 95 % Wilson score interval of a rate (sound near 0 and with few trials)."""
    if trials <= 0:
        return 0.0, 0.0
    p = successes / trials
    centre = p + z * z / (2 * trials)
    spread = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials))
    denominator = 1 + z * z / trials
    return max(0.0, (centre - spread) / denominator), min(1.0, (centre + spread) / denominator)


def ab_chart(result: Mapping[str, Any], *, width: int = 560) -> Markup:
    """Both arms' rates as bars with their 95 % intervals as whiskers; the winner filled."""
    arms = [result.get("a") or {}, result.get("b") or {}]
    intervals = [
        wilson_interval(int(arm.get("conversions", 0)), int(arm.get("sent", 0))) for arm in arms
    ]
    top = max([float(arm.get("rate", 0)) for arm in arms] + [high for _low, high in intervals])
    scale_top = max(top * 1.15, 0.01)
    label_width, height, span = 70, 130, width - 70 - 150
    parts = [
        f"<svg xmlns='http://www.w3.org/2000/svg' class='chart ab-chart' role='img' "
        f"width='{width}' height='{height}' viewBox='0 0 {width} {height}' {FONT}>"
    ]
    for index, (arm, (low, high)) in enumerate(zip(arms, intervals, strict=True)):
        variant = str(arm.get("variant", "AB"[index]))
        rate = float(arm.get("rate", 0))
        y = 15 + index * 55
        length = max(2, round(span * rate / scale_top))
        won = variant == result.get("winner")
        fill = "#16a34a" if won else "#94a3b8"
        x_low = label_width + round(span * low / scale_top)
        x_high = label_width + round(span * high / scale_top)
        parts.append(
            f"<text x='0' y='{y + 20}' font-weight='600'>{escape(variant)}"
            f"{' ✓' if won else ''}</text>"
            f"<rect class='arm' data-variant='{escape(variant)}' x='{label_width}' y='{y}' "
            f"width='{length}' height='30' rx='3' fill='{fill}'>"
            f"<title>{escape(variant)}: {_pct(rate)}, 95 % interval {_pct(low)} to {_pct(high)}"
            f"</title></rect>"
            f"<line x1='{x_low}' x2='{x_high}' y1='{y + 15}' y2='{y + 15}' stroke='#0f172a'/>"
            f"<line x1='{x_low}' x2='{x_low}' y1='{y + 8}' y2='{y + 22}' stroke='#0f172a'/>"
            f"<line x1='{x_high}' x2='{x_high}' y1='{y + 8}' y2='{y + 22}' stroke='#0f172a'/>"
            f"<text x='{label_width + span + 10}' y='{y + 13}'>{_pct(rate)}</text>"
            f"<text x='{label_width + span + 10}' y='{y + 28}' fill='#64748b' font-size='11'>"
            f"{int(arm.get('conversions', 0))} of {int(arm.get('sent', 0))}</text>"
        )
    parts.append("</svg>")
    return Markup("".join(parts))


def _layers(keys: Sequence[str], edges: Iterable[tuple[str, str]]) -> dict[str, int]:
    """Each step's column: its longest distance from a step nothing leads to."""
    graph: nx.DiGraph[str] = nx.DiGraph()
    graph.add_nodes_from(keys)
    graph.add_edges_from(edges)
    if not nx.is_directed_acyclic_graph(graph):
        return {key: index for index, key in enumerate(keys)}
    depth: dict[str, int] = {}
    for key in nx.topological_sort(graph):
        depth[key] = max((depth[source] + 1 for source in graph.predecessors(key)), default=0)
    return depth


def graph_svg(
    steps: Sequence[Mapping[str, Any]],
    connections: Sequence[Mapping[str, Any]],
    path: Sequence[str] = (),
) -> Markup:
    """The automation drawn top to bottom (a row for each depth from the trigger, the
    branches of a row side by side); the steps and connections of ``path`` (the step keys
    a run went through, in order) highlighted."""
    keys = [str(step.get("key")) for step in steps]
    edges = [
        (str(c.get("from")), str(c.get("to")))
        for c in connections
        if c.get("from") in keys and c.get("to") in keys
    ]
    depth = _layers(keys, edges)
    rows: dict[int, list[str]] = {}
    for key in keys:
        rows.setdefault(depth.get(key, 0), []).append(key)
    box_w, box_h, gap_x, gap_y = 200, 54, 40, 46
    widest = max((len(members) for members in rows.values()), default=1)
    width = 40 + widest * (box_w + gap_x) - gap_x
    height = 40 + (max(rows, default=0) + 1) * (box_h + gap_y) - gap_y
    place: dict[str, tuple[int, int]] = {}
    for row, members in rows.items():
        span = len(members) * (box_w + gap_x) - gap_x
        left = (width - span) // 2
        for column, key in enumerate(members):
            place[key] = (left + column * (box_w + gap_x), 20 + row * (box_h + gap_y))
    visited = set(path)
    walked = set(itertools.pairwise(path))
    parts = [
        f"<svg xmlns='http://www.w3.org/2000/svg' class='graph' role='img' width='{width}' "
        f"height='{height}' viewBox='0 0 {width} {height}' {FONT}>"
        "<defs><marker id='arrow' viewBox='0 0 10 10' refX='10' refY='5' markerWidth='7' "
        "markerHeight='7' orient='auto'><path d='M0,0 L10,5 L0,10 z' fill='#64748b'/></marker>"
        "<marker id='arrow-on' viewBox='0 0 10 10' refX='10' refY='5' markerWidth='7' "
        "markerHeight='7' orient='auto'><path d='M0,0 L10,5 L0,10 z' fill='#16a34a'/></marker>"
        "</defs>"
    ]
    for connection in connections:
        source, target = str(connection.get("from")), str(connection.get("to"))
        if source not in place or target not in place:
            continue
        (x1, y1), (x2, y2) = place[source], place[target]
        on = (source, target) in walked
        start = (x1 + box_w // 2, y1 + box_h)
        end = (x2 + box_w // 2, y2)
        if y2 <= y1:  # a connection back up: from the side
            start, end = (x1 + box_w, y1 + box_h // 2), (x2 + box_w, y2 + box_h // 2)
        mid_y = (start[1] + end[1]) // 2
        kind = str(connection.get("type", "default"))
        parts.append(
            f"<path class='edge{' on' if on else ''}' d='M{start[0]},{start[1]} "
            f"C{start[0]},{mid_y} {end[0]},{mid_y} {end[0]},{end[1]}' fill='none' "
            f"stroke='{'#16a34a' if on else '#94a3b8'}' stroke-width='{3 if on else 1.5}' "
            f"marker-end='url(#{'arrow-on' if on else 'arrow'})'/>"
        )
        if kind != "default":
            parts.append(
                f"<text x='{(start[0] + end[0]) // 2 + 8}' y='{mid_y + 4}' font-size='11' "
                f"fill='#475569'>{escape(kind.replace('_', ' '))}</text>"
            )
    for step in steps:
        key = str(step.get("key"))
        x, y = place[key]
        on = key in visited
        parts.append(
            f"<g class='step{' on' if on else ''}' data-key='{escape(key)}'>"
            f"<rect x='{x}' y='{y}' width='{box_w}' height='{box_h}' rx='8' "
            f"fill='{'#dcfce7' if on else '#f8fafc'}' "
            f"stroke='{'#16a34a' if on else '#cbd5e1'}' stroke-width='{2 if on else 1}'/>"
            f"<text x='{x + 12}' y='{y + 22}' font-weight='600'>{escape(key[:24])}</text>"
            f"<text x='{x + 12}' y='{y + 41}' fill='#475569' font-size='12'>"
            f"{escape(str(step.get('type', '')).replace('_', ' ')[:26])}</text></g>"
        )
    parts.append("</svg>")
    return Markup("".join(parts))
