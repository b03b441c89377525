"""regroup.Groups over the catalog (group_topology, group_exprs, node_stats)."""

from __future__ import annotations

from collections.abc import Callable

import psycopg


# isolated since a failure (stale), or private to a query other than the one planned
_NOT_OFFERED = """SELECT node_id FROM argus.excluded_nodes() UNION ALL
                  SELECT node_id FROM argus_catalog.nodes WHERE private_to <> %s"""


class CatalogGroups:
    """regroup.Groups over the catalog: group_topology, group_exprs and node_stats.
    Nodes only failed queries use (argus.excluded_nodes), and nodes private to a query
    other than `query`, are never offered."""

    def __init__(self, conn: psycopg.Connection,
                 counted: Callable = lambda read, nodes: read(), query: str = "") -> None:
        self.conn = conn
        self.counted = counted  # (network.reads.counted: a prediction's nodes filled first)
        self.query = query

    def exprs(self, node_id: int) -> list[str]:
        return [c for (c,) in self.conn.execute(
            "SELECT canonical FROM argus_catalog.group_exprs WHERE node_id = %s "
            "ORDER BY position", (node_id,))]

    def rerolled(self, node_id: int) -> bool:
        return self.conn.execute("SELECT rerolled FROM argus_catalog.group_topology "
                                 "WHERE node_id = %s", (node_id,)).fetchone()[0]

    def rows(self, node_id: int) -> int:
        return self.counted(lambda: self.conn.execute(
            "SELECT hist_rows FROM argus_catalog.node_stats WHERE node_id = %s",
            (node_id,)).fetchone()[0], lambda _: [node_id])

    def covering(self, input_id: int, exprs: list[str]) -> list[int]:
        return self.counted(lambda: self._covering(input_id, exprs), lambda found: found)

    def _covering(self, input_id: int, exprs: list[str]) -> list[int]:
        return [r[0] for r in self.conn.execute(
            f"""SELECT g.node_id FROM argus_catalog.group_topology g
                  JOIN argus_catalog.node_stats n USING (node_id)
                 WHERE g.input_id = %s AND g.node_id NOT IN ({_NOT_OFFERED})
                   AND NOT EXISTS (SELECT 1 FROM unnest(%s::text[]) AS w(canonical)
                                    WHERE NOT EXISTS (SELECT 1 FROM argus_catalog.group_exprs e
                                                       WHERE e.node_id = g.node_id
                                                         AND e.canonical = w.canonical))
                 ORDER BY n.hist_rows, g.node_id""", (input_id, self.query, exprs))]

    def coarser(self, input_id: int, than: int, width: int) -> list[int]:
        return [r[0] for r in self.conn.execute(
            f"""SELECT g.node_id FROM argus_catalog.group_topology g
                 WHERE g.input_id = %s AND NOT g.rerolled AND g.node_id <> %s
                   AND g.width < %s AND g.node_id NOT IN ({_NOT_OFFERED})""",
            (input_id, than, width, self.query))]

    def record(self, node_id: int, input_id: int, exprs: list[str], rerolled: bool) -> None:
        if self.conn.execute(
                "INSERT INTO argus_catalog.group_topology VALUES (%s, %s, %s, %s) "
                "ON CONFLICT (node_id) DO NOTHING RETURNING 1",
                (node_id, input_id, len(exprs), rerolled)).fetchone():
            with self.conn.cursor() as cur:
                cur.executemany("INSERT INTO argus_catalog.group_exprs VALUES (%s, %s, %s)",
                                [(node_id, i, g) for i, g in enumerate(exprs, 1)])

    def reroll(self, node_id: int) -> None:
        self.conn.execute("UPDATE argus_catalog.group_topology SET rerolled = true "
                          "WHERE node_id = %s", (node_id,))
