"""All that the optimizer asks of a network: the catalog's (argus.network.Builder) or
one in memory (argus.network.memory.MemoryNetwork) answers it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ..nodes import Node
    from ..plan import Col
    from .blocks import Block, Indexed
    from .order import Estimates
    from .replan import Replan
    from .sharing import IndexEntry, Sharing


class Network(Protocol):
    """All that covering a block asks of the network: argus.network.Builder answers
    from the catalog, the computation index and PostgreSQL's estimates, and makes the
    nodes."""

    sharing: Sharing
    replan: Replan | None  # a registered query planned again (argus.adapt), else None

    def load(self, node_id: int) -> Node:
        """A node of the network."""

    def ancestors(self, node_id: int) -> list[tuple[int, str]]:
        """The node and every node it is computed from: (id, kind)."""

    def estimate(self, source_id: int, instance: int, conds) -> float:
        """Rows of a source that satisfy `conds` (over the atoms of `instance`)."""

    def candidates(self, sources, shapes) -> list[Indexed]:
        """Computation-index entries over these sources, of these predicate shapes."""

    def source_index(self, node: Node) -> Indexed:
        """A source itself, as an index entry (no predicate)."""

    def sources_of(self, node: Node) -> list[int]:
        """The sources a node joins, in its standard table alias order."""

    def atoms(self, node: Node) -> dict[str, str]:
        """Atom over the node's standard aliases -> the node's column holding it."""

    def column(self, node: Node, atom: str) -> str:
        """The node's column holding `atom`."""

    def make_select(self, parent: Node, predicate: str | None, columns: list[Col],
                    entry: IndexEntry) -> Node:
        """A selection node (shared if it exists), recorded in the computation index."""

    def make_join(self, left: Node, right: Node, condition: str, columns: list[Col],
                  entry: IndexEntry, copy: tuple[int, dict[str, str]] | None = None,
                  table: bool = False) -> Node:
        """A join node (shared if it exists), recorded in the computation index;
        `copy`: a node holding its rows, and where (its new columns -> that node's), to
        fill it from; `table`: a new one is kept as a table whatever its growth (a
        re-plan priced it so: mqo.order.Estimates.is_view)."""

    def enrich(self, node: Node, atoms: set[str]) -> Node:
        """The node with columns added for `atoms` (projection enrichment)."""

    def estimates(self, block: Block) -> Estimates | None:
        """The block's rows and rates for ordering its joins by cost (None: the
        heuristic layout, ARGUS's order)."""

    def observed(self, node_id: int) -> float | None:
        """A node's new rows per cycle in the last few cycles (None: no cycle since it
        was made)."""

    def recent_share(self, source_id: int, instance: int, conds) -> float | None:
        """The share of a source's rows in the last cycle that satisfy `conds` (None:
        it had none)."""

    def turned_over(self, node_id: int) -> tuple[float, float] | None:
        """A sliding window's rows once it holds only rows like the last cycles', and
        its changes per cycle then (None: not a sliding window, or no rows came
        lately)."""

    def recent_link(self, block: Block, linked: frozenset[int], conds,
                    rows: Mapping[int, float]) -> float | None:
        """The selectivity of the conditions `conds` linking two instances as the last
        cycle's new rows of each met the other's rows (`rows`: each instance's under
        its local conditions); None: no new rows."""

    def estimated(self, node: Node, rows: float, rate: float, inflow: dict[int, float]
                  ) -> None:
        """Record what the order expected of a node it built: its rows, new per cycle,
        and its sources' new rows per cycle (`inflow`) that those were estimated from."""
