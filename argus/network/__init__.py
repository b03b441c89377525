"""The shared network in PostgreSQL: what a registration reads of it (`reads`: nodes,
blocks, index candidates, PostgreSQL's estimates and types, cached) and how it grows and
shrinks (`builder`: plan mapping, node making, DDL, the stored cycle program)."""

from ..nodes import CODE_VERSION
from .builder import (Builder, CatalogGroups, assemble, drop_unused, execute_all,
                      recompile_stale, store_blocks)
from .reads import Network, load, load_node

__all__ = ["CODE_VERSION", "Builder", "CatalogGroups", "Network", "assemble", "drop_unused",
           "execute_all", "load", "load_node", "recompile_stale", "store_blocks"]
