-- A table's part of the claim: its changes leave the inbox, each key's last change
-- (argus_seq) counts, and the source node's delta gets, per key that changed, the row
-- the table had (-1) and the row it has now (+1). A row whose text is the same before
-- and after cancels out: text, not the type's equality, which json lacks and which
-- calls 1.0 and 1.00, or '1 day' and '24 hours', the same (compared only for a key that
-- had a row and has one: an insert or a delete is no update). {differs}: the columns
-- whose types' equality is cheap compared first (unequal values never print alike), so
-- that only a row they call equal is printed twice; computed once per key (OFFSET 0:
-- inlined, both branches below evaluated it). 8,441 updated line items: 150 -> 100 ms.
-- The history is the table before this cycle (the flush applies the delta); it is
-- probed once per key, and the claim's statistics read the same probe, and each row of
-- the delta carries the ctid of the history's row it replaces (NULL: a key the history
-- lacks), by which the flush finds it again (node/flush_update, node/flush_delete_tid).
-- (The history's alias is read whole: `h` was ambiguous in a table with a column h.)
{claimed} AS (DELETE FROM {inbox} RETURNING {columns}, argus_op, argus_seq),
{last} AS (SELECT DISTINCT ON ({key}) *, bool_or(argus_op <> 'd') OVER (
                 PARTITION BY {key} ORDER BY argus_seq DESC  -- (one sort for both)
                 ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING
             ) AS argus_put  -- (claim_table_stats)
             FROM {claimed} ORDER BY {key}, argus_seq DESC),
{probed} AS (SELECT l.*, argus_h AS argus_old, argus_h.{first} IS NOT NULL AS argus_had,
                    argus_h.ctid AS argus_hctid
               FROM {last} l LEFT JOIN {history} argus_h ON {l_join}),
{moved} AS (INSERT INTO {delta} ({columns}, {sign}, argus_ctid)
            SELECT x.* FROM {probed} p
             CROSS JOIN LATERAL (
                 SELECT p.argus_op <> 'd' AS has,
                        p.argus_had AND p.argus_op <> 'd'
                        AND ({differs}) AS differs
                 OFFSET 0
             ) AS c
             CROSS JOIN LATERAL (
                 SELECT {o_columns}, -1, p.argus_hctid WHERE p.argus_had AND (NOT c.has OR c.differs)
                 UNION ALL
                 SELECT {p_columns}, 1, p.argus_hctid WHERE c.has AND (NOT p.argus_had OR c.differs)
             ) AS x
            RETURNING {sign})
