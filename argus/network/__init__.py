"""The shared network in PostgreSQL: what a registration reads of it (`reads`: nodes,
blocks, index candidates, PostgreSQL's estimates and types, cached), how it grows
(`builder`: plan mapping, node making, DDL), the code it stores and how it shrinks
(`stored`), the catalog's record of its nodes (`records`), and the aggregates' groups as
regrouping reads them (`groups`)."""

from ..nodes import CODE_VERSION
from . import records
from .builder import Builder
from .durability import persist, rebuild_if_lost, settle
from .groups import CatalogGroups
from .reads import LoadedNetwork, idle_streams, load, load_node, network_bytes
from .stored import assemble, drop_unused, execute_all, recompile_stale, store_blocks

__all__ = ["CODE_VERSION", "Builder", "CatalogGroups", "LoadedNetwork", "assemble",
           "drop_unused", "execute_all", "idle_streams", "load", "load_node", "network_bytes",
           "persist", "rebuild_if_lost", "recompile_stale", "records", "settle", "store_blocks"]
