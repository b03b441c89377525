"""A query's part of the network as a picture (`argus explain NAME --svg FILE`): its
nodes in rows, the streams at the top and each node below the nodes it reads; a box per
node, coloured by kind, as wide as its state and as opaque as its share of the last
cycles' time; an edge from each parent to each child; the query under its top node. The
layout is ours (a longest-path layering), the output plain SVG, so that it needs
nothing to draw and opens anywhere.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from xml.sax.saxutils import escape, quoteattr

import psycopg

from .errors import UnknownQueryError
from . import network

COLOURS = {"stream": "#4e79a7", "select": "#59a14f", "join": "#e15759",
           "aggregate": "#f28e2b", "distinct": "#76b7b2", "setop": "#edc948",
           "window": "#b07aa1", "rerun": "#9c755f", "recursive": "#ff9da7"}
HEIGHT, GAP_X, GAP_Y, MARGIN = 44, 36, 70, 24


@dataclass(frozen=True)
class Box:
    node_id: int
    kind: str
    label: str
    rows: int
    ms: float | None  # per cycle, over the last cycles
    level: int
    order: int
    title: str  # what it computes (shown on hover)

    @property
    def width(self) -> float:
        return max(130 + min(110.0, 14 * math.log10(self.rows + 1)), 16 + 7.4 * len(self.label))


def _ranks(parents: dict[int, list[int]]) -> dict[int, int]:
    """Each node's row: the longest path to it from a node without parents."""
    rank: dict[int, int] = {}

    def of(node: int) -> int:
        if node not in rank:
            rank[node] = 1 + max(map(of, parents[node]), default=-1)
        return rank[node]

    for node in parents:
        of(node)
    return rank


def svg(boxes: list[Box], edges: list[tuple[int, int]], queries: list[tuple[str, int]]
        ) -> str:
    """The picture: pure, from the boxes and edges. Each row is ordered by where its
    nodes' parents are (fewer crossing edges), then by evaluation order."""
    parents: dict[int, list[int]] = {b.node_id: [] for b in boxes}
    for parent, child in edges:
        parents[child].append(parent)
    at, widest, rows = _placed(boxes, parents)
    by_id = {b.node_id: b for b in boxes}
    slowest = max((b.ms or 0.0 for b in boxes), default=0.0) or 1.0
    query_y = MARGIN + rows * (HEIGHT + GAP_Y)
    parts = []
    for parent, child in edges:
        (px, py), (cx, cy) = at[parent], at[child]
        parts.append(f'<line class="edge" data-parent="{parent}" data-child="{child}" '
                     f'x1="{px + by_id[parent].width / 2:.0f}" y1="{py + HEIGHT:.0f}" '
                     f'x2="{cx + by_id[child].width / 2:.0f}" y2="{cy:.0f}" '
                     'stroke="#555" marker-end="url(#arrow)"/>')
    parts += [_box(box, *at[box.node_id], slowest) for box in boxes]
    labels, qx = _query_labels(queries, at, by_id, query_y)
    width, height = max(widest, qx + 100) + MARGIN, query_y + 40
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" '
            f'height="{height:.0f}" font-family="sans-serif">'
            '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" '
            'markerWidth="7" markerHeight="7" orient="auto-start-reverse">'
            '<path d="M 0 0 L 10 5 L 0 10 z" fill="#555"/></marker></defs>'
            + "".join(parts + labels) + "</svg>\n")


def _placed(boxes: list[Box], parents: dict[int, list[int]]
            ) -> tuple[dict[int, tuple[float, float]], float, int]:
    """Each box's top left corner, by rank (row) and then under its parents; the
    widest row's width; the number of rows."""
    rank = _ranks(parents)
    at: dict[int, tuple[float, float]] = {}
    widest = 0.0
    rows = max(rank.values(), default=0) + 1
    for y_index in range(rows):
        def centre(box: Box) -> float:
            xs = [at[p][0] for p in parents[box.node_id] if p in at]
            return sum(xs) / len(xs) if xs else 0.0
        x = MARGIN
        for box in sorted((b for b in boxes if rank[b.node_id] == y_index),
                          key=lambda b: (centre(b), b.level, b.order, b.node_id)):
            at[box.node_id] = (x, MARGIN + y_index * (HEIGHT + GAP_Y))
            x += box.width + GAP_X
        widest = max(widest, x)
    return at, widest, rows


def _box(box: Box, x: float, y: float, slowest: float) -> str:
    """A node: its kind's colour, darker the longer it takes per cycle."""
    opacity = 0.35 + 0.65 * (box.ms or 0.0) / slowest
    ms = "" if box.ms is None else f", {box.ms:,.1f} ms"
    return (f'<g class="node" data-node="{box.node_id}" data-kind={quoteattr(box.kind)}>'
            f'<title>{escape(box.title)}</title>'
            f'<rect x="{x:.0f}" y="{y:.0f}" width="{box.width:.0f}" height="{HEIGHT}" rx="6" '
            f'fill="{COLOURS.get(box.kind, "#bab0ac")}" fill-opacity="{opacity:.2f}" '
            'stroke="#333"/>'
            f'<text x="{x + 8:.0f}" y="{y + 18:.0f}" font-size="13">{escape(box.label)}</text>'
            f'<text x="{x + 8:.0f}" y="{y + 35:.0f}" font-size="11">'
            f'{box.rows:,} rows{escape(ms)}</text></g>')


def _query_labels(queries: list[tuple[str, int]], at: dict[int, tuple[float, float]],
                  by_id: dict[int, Box], query_y: float) -> tuple[list[str], float]:
    """Each query's label under its top node, in one row, and the last label's x."""
    lowest, right = {}, 0.0
    for name, top in sorted(queries, key=lambda q: at[q[1]][0]):
        half = 4.5 * len(f"query {name}") + 6  # (about half the label's width)
        x = max(at[top][0] + by_id[top].width / 2, right + half)
        lowest[name], right = (x, top), x + half
    parts = []
    for name, (qx, top) in lowest.items():
        tx, ty = at[top]
        parts.append(f'<line class="edge" x1="{tx + by_id[top].width / 2:.0f}" '
                     f'y1="{ty + HEIGHT:.0f}" x2="{qx:.0f}" y2="{query_y:.0f}" stroke="#999" '
                     'marker-end="url(#arrow)"/>'
                     f'<g class="query" data-query={quoteattr(name)}><text x="{qx:.0f}" '
                     f'y="{query_y + 16:.0f}" text-anchor="middle" font-size="14" '
                     f'font-weight="bold">query {escape(name)}</text></g>')
    return parts, max((x for x, _ in lowest.values()), default=0.0)


_NODES = """
WITH recent AS (SELECT run_id FROM argus_catalog.runs WHERE status = 'ok'
                 ORDER BY run_id DESC LIMIT 10)
SELECT n.node_id, n.kind, n.join_level, n.sequence_id, coalesce(s.hist_rows, 0),
       (SELECT sum(r.ms + coalesce(r.flush_ms, 0)) / nullif((SELECT count(*) FROM recent), 0)
          FROM argus_catalog.run_nodes r JOIN recent USING (run_id)
         WHERE r.node_id = n.node_id)
  FROM argus_catalog.nodes n
  LEFT JOIN argus_catalog.query_nodes q USING (node_id)
  LEFT JOIN argus_catalog.node_stats s USING (node_id)"""


def of_query(conn: psycopg.Connection, name: str) -> str:
    """Query `name`'s nodes as an SVG picture, from the catalog."""
    row = conn.execute("SELECT query_id, output_node FROM argus_catalog.queries "
                       "WHERE name = %s", (name,)).fetchone()
    if row is None:
        raise UnknownQueryError(f"unknown query {name!r}")
    return _drawn(conn, _NODES + " WHERE q.query_id = %s", (row[0],), [(name, row[1])])


def of_network(conn: psycopg.Connection) -> str:
    """The whole shared network, every query under its top node."""
    queries = conn.execute("SELECT name, output_node FROM argus_catalog.queries "
                           "ORDER BY name").fetchall()
    return _drawn(conn, _NODES + " GROUP BY n.node_id, s.hist_rows", (), queries)


def _drawn(conn: psycopg.Connection, nodes_sql: str, args: tuple,
           queries: list[tuple[str, int]]) -> str:
    from .explain import describe

    nodes = network.load(conn).nodes  # (one read, not one per node)
    boxes = []
    for node_id, kind, level, order, rows, ms in conn.execute(nodes_sql, args):
        node = nodes[node_id]
        label = _label(node, describe(node))
        boxes.append(Box(node_id, kind, label, rows, ms, level, order,
                         "\n".join([f"{kind} {node_id}", *describe(node)])))
    ids = [b.node_id for b in boxes]
    edges = conn.execute("SELECT parent_id, child_id FROM argus_catalog.edges "
                         "WHERE parent_id = ANY(%s) AND child_id = ANY(%s) "
                         "ORDER BY child_id, parent_id", (ids, ids)).fetchall()
    return svg(boxes, [tuple(e) for e in edges], queries)


_QUALIFIED = re.compile(r'"t\d+"\.|"')


def _label(node, described: list[str]) -> str:
    """What a box computes, in a few symbols: σ amount > 1000, ⋈ sender = receiver,
    γ sender, ω top 10 (the node's id is on hover)."""
    kind = node.kind_of
    if node.loaded:
        return kind.label(node)
    if kind.label is not None:
        text = kind.label(node)
    else:
        first = described[0] if described else node.kind
        for lead in ("where ", "group by "):
            first = first.removeprefix(lead)
        text = f"{kind.symbol or node.kind} {first}"
    text = _QUALIFIED.sub("", text)
    return text if len(text) <= 34 else text[:33] + "…"
