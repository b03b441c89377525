"""Set operations as nodes: UNION ALL and INTERSECT [ALL] are commutative, and UNION
ALL associative, so their operands are put in a canonical order, and a UNION ALL reuses
the largest existing UNION ALL of some of its operands (ARGUS §5.4,
argus_catalog.setop_topology); EXCEPT keeps its order.
"""

from __future__ import annotations

import psycopg

from ..errors import QueryError
from ..nodes import Node
from ..plan import Col, Plan, SetOp


class SetOps:
    """Set operations mapped to nodes (network.mapping.Mapping mixes it in): the network
    answers `unions_within(keys)` and `record_union(node, op, operands)`."""

    def _set_operation(self, plan: SetOp) -> Node:
        node, columns = self._setop(plan)
        self.names[plan] = dict(zip(plan.names, columns))
        return node

    def _setop(self, plan: SetOp) -> tuple[Node, list[str]]:
        """A set operation's node and its columns, in the plan's order. UNION ALL and
        INTERSECT [ALL] are commutative, and UNION ALL associative: their operands are
        put in a canonical order, and a UNION ALL reuses the largest existing UNION ALL
        of some of its operands (ARGUS §5.4)."""
        operands = _union_operands(plan) if plan.op == "union_all" else [plan.left, plan.right]
        sides = [(self.node_for(p), self.columns_of(p)) for p in operands]
        if len({len(c) for _, c in sides}) > 1:
            raise QueryError("each side of a set operation must have the same number of "
                             "columns")
        for node, _ in sides:
            self.check_horizon(node, None)
        if plan.op in ("except", "except_all") or self.sharing.strategy == "none":
            keyed = [(None, s) for s in sides]
        else:
            keyed = sorted((_operand_key(n, c), (n, c)) for n, c in sides)
        current, rest = keyed[0][1], keyed[1:]
        chain = [keyed[0][0]]
        if plan.op == "union_all" and self.sharing.strategy != "none" and len(keyed) > 2:
            found = self._union_cover([k for k, _ in keyed])
            if found is not None:
                node, covered = found
                current = (node, list(node.columns))
                chain = list(covered)
                rest = _without(keyed, covered)
        for key, (node, columns) in rest:
            left, left_columns = current
            insert_only = (plan.op in ("union_all", "intersect", "intersect_all")
                           and left.insert_only and node.insert_only)
            merged = self.ensure(
                "setop", [left, node],
                tuple(Col(n, f"t1.{i} | t2.{i}") for i, n in enumerate(_apart(left_columns),
                                                                       1)),
                {"op": plan.op, "left": left_columns, "right": columns}, insert_only)
            chain.append(key)
            if plan.op != "except" and None not in chain:
                self.record_union(merged.id, plan.op, sorted(chain))
            current = (merged, list(merged.columns))
        return current

    def _union_cover(self, keys: list[str]) -> tuple[Node, list[str]] | None:
        """The largest existing UNION ALL whose operands are some of `keys` (the
        network's `unions_within`: (node, operands), the most operands first, then the
        most rows)."""
        for node_id, operands in self.unions_within(keys):
            if _without([(k, None) for k in keys], operands) is not None:
                return self.load(node_id), operands
        return None


def unions_within(conn: psycopg.Connection, keys: list[str]) -> list[tuple[int, list[str]]]:
    """The UNION ALL nodes (argus_catalog.setop_topology) whose operands are among
    `keys`, the most operands first, then the most rows; no isolated node."""
    return conn.execute(
        """SELECT s.node_id, s.operands FROM argus_catalog.setop_topology s
             JOIN argus_catalog.node_stats n USING (node_id)
            WHERE s.op = 'union_all' AND s.operands <@ %s::text[]
              AND s.node_id NOT IN (SELECT node_id FROM argus.excluded_nodes())
            ORDER BY cardinality(s.operands) DESC, n.hist_rows DESC, s.node_id""",
        (keys,)).fetchall()


def record_union(conn: psycopg.Connection, node_id: int, op: str, operands: list[str]) -> None:
    conn.execute("INSERT INTO argus_catalog.setop_topology VALUES (%s, %s, %s) "
                 "ON CONFLICT DO NOTHING", (node_id, op, operands))


def _union_operands(plan: Plan) -> list[Plan]:
    if isinstance(plan, SetOp) and plan.op == "union_all":
        return _union_operands(plan.left) + _union_operands(plan.right)
    return [plan]


def _apart(names: list[str]) -> list[str]:
    """The names, one column read twice named apart (`k`, `k_2`: an operand's `SELECT
    u.k` beside the same column as its correlation key; a helper's EXISTS (… INTERSECT
    …) failed on the duplicate name)."""
    out: list[str] = []
    for name in names:
        given, n = name, 1
        while given in out or given != name and given in names:
            n += 1
            given = f"{name}_{n}"
        out.append(given)
    return out


def _operand_key(node: Node, columns: list[str]) -> str:
    return f"{node.id}:{','.join(columns)}"


def _without(keyed: list, covered: list[str]) -> list | None:
    """`keyed` minus one entry per key of `covered` (a multiset), None if some key of
    `covered` is missing."""
    rest = list(keyed)
    for key in covered:
        match = next((k for k in rest if k[0] == key), None)
        if match is None:
            return None
        rest.remove(match)
    return rest
