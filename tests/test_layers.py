"""The package's layers (docs/code-layout.md): a module imports only from its own layer or
the layers below it, so the optimizer never depends on how nodes compile or run, and
nothing below the surface depends on the API. Checked from the source, no server."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import argus

PACKAGE = Path(argus.__file__).parent

# bottom to top
LAYERS = [
    ("foundations", {"abi", "errors", "trees", "failures", "names", "resources", "templates",
                     "plan", "pg_plan", "settings", "aggregates", "alchemy"}),
    ("frontend: SQL to plans", {"frontend"}),
    ("multi-query optimizer", {"mqo"}),
    ("node kinds and the cycle program", {"nodes", "program"}),
    ("the network in PostgreSQL", {"roles", "catalog", "network"}),
    ("operations", {"streams", "tables", "track", "slot", "citus", "citus_local", "loads",
                    "registry", "admission", "answers", "requests", "cycle", "subscriptions",
                    "files", "quarantine", "explain", "status", "embedded", "schedule",
                    "optimize", "adapt", "picture", "audit", "tidy", "dsn", "lean", "reading"}),
    ("surface", {"api", "__init__", "cli", "spark", "demo", "bench", "__main__",
                 "dashboard"}),
]
LAYER = {module: i for i, (_, modules) in enumerate(LAYERS) for module in modules}


def top_module(path: Path) -> str:
    return path.relative_to(PACKAGE).parts[0].removesuffix(".py")


def imports(path: Path) -> set[str]:
    """argus modules `path` imports at run time (not under TYPE_CHECKING)."""
    tree = ast.parse(path.read_text())
    typing_only = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If)
                   and ast.unparse(node.test) == "TYPE_CHECKING" for n in ast.walk(node)}
    depth = len(path.relative_to(PACKAGE).parts) - 1
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level and id(node) not in typing_only:
            if node.level - 1 < depth:
                continue  # within its own subpackage
            if node.module:
                found.add(node.module.split(".")[0])
            else:
                found.update(a.name for a in node.names)
    return found


def test_every_module_has_a_layer():
    modules = {top_module(p) for p in PACKAGE.rglob("*.py")}
    assert modules - set(LAYER) == set(), "add the new module to a layer of tests/test_layers.py"


def test_no_module_imports_from_a_higher_layer():
    upward = []
    for path in PACKAGE.rglob("*.py"):
        mine = top_module(path)
        for other in imports(path):
            if other in LAYER and LAYER[other] > LAYER[mine]:
                upward.append(f"{path.relative_to(PACKAGE)} ({LAYERS[LAYER[mine]][0]}) imports "
                              f"{other} ({LAYERS[LAYER[other]][0]})")
    assert upward == []


def test_the_network_answers_everything_the_optimizer_asks():
    """The optimizer's contracts (protocol.Network, regroup.Groups) are implemented by
    the network in PostgreSQL, and in memory (network.memory; the in-memory groups of
    the offline tests)."""
    from argus import network
    from argus.mqo import protocol, regroup
    from argus.network.memory import MemoryNetwork

    from argus.network.memory import MemoryGroups

    def methods(cls) -> set[str]:
        return {n for n in vars(cls) if not n.startswith("_")}

    assert methods(protocol.Network) <= set(dir(network.Builder))
    assert methods(protocol.Network) <= set(dir(MemoryNetwork))
    assert methods(regroup.Groups) <= set(dir(network.CatalogGroups))
    assert methods(regroup.Groups) <= set(dir(MemoryGroups))


def test_only_a_kinds_own_module_names_it():
    """A node kind is known by its module in argus/nodes/ and its templates alone:
    other code asks the kind (Node.kind_of: argus.nodes.base.Kind), and the catalog's
    SQL asks argus.kinds(trait), so that a new kind touches its module, its templates
    and the registry line (the catalog's CHECK of nodes.kind is generated from them)."""
    from argus.nodes import KINDS

    names = "|".join(KINDS)
    test = re.compile(
        rf"""kind\s*(==|!=|=|<>)\s*["']({names})["']"""
        rf"""|kind\s+((?i:not)\s+)?(?i:in)\s*\([^)]*["']({names})["']""")
    root = PACKAGE.parent
    checked = [p for p in PACKAGE.rglob("*.py") if p.parent.name != "nodes"] + [
        *(root / "catalog").glob("*.sql"),
        *(p for p in (root / "sql_templates").rglob("*.sql")
          if p.parent.name not in KINDS and p.parent.name != "node")]
    found = [f"{p.relative_to(root)}:{i}: {line.strip()}" for p in checked
             for i, line in enumerate(p.read_text().splitlines(), 1) if test.search(line)]
    assert found == []


def test_the_network_in_memory_needs_no_server():
    """The network a block is planned over without a server, the index it searches and
    the plan-to-node mapping both networks share (issue 55) import no database driver."""
    for path in (PACKAGE / "mqo" / "memory_index.py", PACKAGE / "network" / "memory.py",
                 PACKAGE / "network" / "row_model.py", PACKAGE / "network" / "layout_policy.py",
                 PACKAGE / "network" / "mapping.py"):
        tree = ast.parse(path.read_text())
        imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import)
                    for a in n.names} | {n.module.split(".")[0] for n in ast.walk(tree)
                                         if isinstance(n, ast.ImportFrom) and n.module
                                         and not n.level}
        assert not imported & {"psycopg", "psycopg_pool", "sqlalchemy"}, path


def test_the_network_in_memory_keeps_rows_as_the_settings_default():
    """Its conditional materialization's thresholds are the settings' defaults (its own
    constants: the settings module needs the driver)."""
    from argus.network import memory
    from argus.settings import SETTINGS

    assert (memory.VIRTUAL_SELECTIVITY, memory.VIRTUAL_JOIN_GROWTH) == (
        SETTINGS["virtual_selectivity"].default, SETTINGS["virtual_join_growth"].default)


def test_the_command_line_s_own_constants_are_the_modules_it_does_not_import():
    """`argus run` starts without the planner (tests/test_lean): the command line keeps
    its own copies of the sharing strategies and Citus's shard bound."""
    from argus import citus
    from argus.cli import inputs, queries
    from argus.mqo.sharing import STRATEGIES

    assert (queries.STRATEGIES, inputs.MAX_SHARDS) == (STRATEGIES, citus.MAX_SHARDS)


def test_sql_text_is_parsed_in_one_place():
    """Expressions kept as text are parsed by argus.trees.tree_of (one dialect, each
    text once a process); only the frontend parses the registrant's statements whole,
    and the benches their workloads' own dialects."""
    found = [str(p.relative_to(PACKAGE.parent)) for p in PACKAGE.rglob("*.py")
             if p.name != "trees.py" and p.parent.name != "bench"
             for line in p.read_text().splitlines()
             if re.search(r"sqlglot\.parse_one\(|sqlglot\.parse\(", line)]
    assert found == ["argus/frontend/analyze.py"]


def test_a_parsed_text_is_the_callers_own():
    """tree_of's trees are copies: a caller's change (the mapping and the compilers
    transform in place) is not seen by the next reader of the same text."""
    from sqlglot import exp

    from argus.trees import tree_of

    first = tree_of("a + 1")
    first.find(exp.Column).replace(exp.column("b"))
    assert tree_of("a + 1").sql() == "a + 1" and first.sql() == "b + 1"
    assert isinstance(tree_of("numeric(10, 2)", into=exp.DataType), exp.DataType)


def test_generated_code_names_the_programs_variables_through_abi():
    """The cycle program's frame declares every variable argus.abi names (or takes it as
    a parameter), and no module but abi spells one (a column or alias of the same name,
    `dh.argus_r`, is not one), so that renaming one in the frame breaks here, not in a
    cycle."""
    from argus import abi

    frame = (PACKAGE.parent / "sql_templates" / "program" / "cycle_program.sql").read_text()
    functions = (PACKAGE.parent / "catalog" / "functions.sql").read_text()
    declared = set(re.findall(r"^\s+(argus_\w+) ", frame, re.M))
    parameters = set(re.findall(r"(argus_\w+) (?:bigint|jsonb|argus_catalog\.settings)[,)]",
                                functions))
    written = {abi.WRITTEN}  # (declared in the declarations slot: program.written)
    assert set(abi.FRAME_VARIABLES) - declared - parameters - written == set()
    names = "|".join(sorted(abi.FRAME_VARIABLES, key=len, reverse=True))
    spelled = [f"{p.relative_to(PACKAGE.parent)}: {line.strip()}"
               for p in PACKAGE.rglob("*.py") if p.name != "abi.py" and p.parent.name != "bench"
               for line in p.read_text().splitlines()
               if re.search(rf"(?<![\w.])({names}|argus_claimed_)(?![\w{{])", line)]
    assert spelled == []
