-- argus catalog, version 2: the computation index (ARGUS §5.1) that registration
-- searches for what the network already computes.
--
-- Four layers, as relations searched with B-tree indexes: topology (which sources a
-- node joins, in its Standard Table Alias order), PredSets, OR-predicates and literal
-- predicates in canonical form (argus.canon). As in ARGUS's PredIndex, a literal row
-- is shared by every OR-predicate that contains it. Every PredSet is relative to the
-- sources of the node's select-project-join block, so a search never walks a chain of
-- selections or joins (what ARGUS's SVOA/JVOA shortcuts are for; both are recorded).
-- Nodes created before this version are not indexed: they keep working, unshared.

CREATE TABLE argus_catalog.literals (
    literal_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    canonical  text NOT NULL,            -- e.g. "i1"."amount" > 1000000
    lhs        text NOT NULL,            -- the linear left side, STAs as "i1", "i2", …
    shape      text NOT NULL,            -- lhs with the STAs erased: the search prefilter
    op         text NOT NULL,            -- = <> < <= > >=, is null, is not null, true (opaque)
    const_kind text,                     -- num, interval, date, timestamp, str, bool
    const      text,
    terms      jsonb NOT NULL            -- [[atom, coefficient], …]: the literal, rebuilt
);
CREATE UNIQUE INDEX literals_canonical ON argus_catalog.literals (md5(canonical));
CREATE INDEX literals_shape ON argus_catalog.literals (shape);

CREATE TABLE argus_catalog.orpreds (
    orpred_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    canonical text NOT NULL
);
CREATE UNIQUE INDEX orpreds_canonical ON argus_catalog.orpreds (md5(canonical));

CREATE TABLE argus_catalog.orpred_literals (
    orpred_id  bigint NOT NULL REFERENCES argus_catalog.orpreds ON DELETE CASCADE,
    literal_id bigint NOT NULL REFERENCES argus_catalog.literals,
    PRIMARY KEY (orpred_id, literal_id)
);
CREATE INDEX orpred_literals_literal ON argus_catalog.orpred_literals (literal_id);

CREATE TABLE argus_catalog.predsets (
    predset_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    canonical  text NOT NULL             -- '' for the empty PredSet (no condition)
);
CREATE UNIQUE INDEX predsets_canonical ON argus_catalog.predsets (md5(canonical));

CREATE TABLE argus_catalog.predset_orpreds (
    predset_id bigint NOT NULL REFERENCES argus_catalog.predsets ON DELETE CASCADE,
    orpred_id  bigint NOT NULL REFERENCES argus_catalog.orpreds,
    PRIMARY KEY (predset_id, orpred_id)
);
CREATE INDEX predset_orpreds_orpred ON argus_catalog.predset_orpreds (orpred_id);

-- Selection and join nodes (and the sources they read): what each computes.
CREATE TABLE argus_catalog.topology (
    node_id     bigint PRIMARY KEY REFERENCES argus_catalog.nodes ON DELETE CASCADE,
    sources     bigint[] NOT NULL,       -- STA k (column atoms "ik") reads node sources[k]
    sources_key text NOT NULL,           -- the sources sorted: the search key
    predset_id  bigint NOT NULL REFERENCES argus_catalog.predsets,
    dpredset_id bigint REFERENCES argus_catalog.predsets,  -- the condition on its parents
    svoa        bigint,                  -- closest ancestor that is a join or a source
    jvoas       bigint[]                 -- closest join-or-source ancestors of the SVOA
);
CREATE INDEX topology_search ON argus_catalog.topology (sources_key);

-- Which canonical column atom each column of an indexed node holds.
ALTER TABLE argus_catalog.node_columns ADD COLUMN atom text;

-- Aggregates (ARGUS's GroupExpr tables): the input a node groups and by what.
CREATE TABLE argus_catalog.group_topology (
    node_id  bigint PRIMARY KEY REFERENCES argus_catalog.nodes ON DELETE CASCADE,
    input_id bigint NOT NULL REFERENCES argus_catalog.nodes,  -- the rows it aggregates
    width    int NOT NULL,               -- number of group expressions
    rerolled boolean NOT NULL            -- computed from a finer aggregate's groups
);
CREATE INDEX group_topology_input ON argus_catalog.group_topology (input_id);

CREATE TABLE argus_catalog.group_exprs (
    node_id   bigint NOT NULL REFERENCES argus_catalog.group_topology ON DELETE CASCADE,
    position  int NOT NULL,
    canonical text NOT NULL,             -- the group expression over the input's columns
    PRIMARY KEY (node_id, position)
);
CREATE INDEX group_exprs_canonical ON argus_catalog.group_exprs (md5(canonical));

-- Set operations (ARGUS §5.4): the operands of a UNION ALL chain, flattened, or of an
-- INTERSECT, each as 'node id:column,column,…' (the columns it reads, by position).
CREATE TABLE argus_catalog.setop_topology (
    node_id  bigint PRIMARY KEY REFERENCES argus_catalog.nodes ON DELETE CASCADE,
    op       text NOT NULL,
    operands text[] NOT NULL             -- sorted
);
CREATE INDEX setop_topology_operands ON argus_catalog.setop_topology USING gin (operands);

-- Cycles with hundreds of nodes. Deltas are cleared with DELETE, and TRUNCATEd only
-- once their file has grown past this many bytes.
ALTER TABLE argus_catalog.settings
    ADD COLUMN truncate_delta_bytes bigint NOT NULL DEFAULT 1048576;
