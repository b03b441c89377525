-- The pairs' counts applied to the aux table in the statement that reads them (its
-- top-level CTEs), each row found by the ctid the pairs carry: one probe of the aux
-- table per changed (group, value), where a MERGE in the flush probed it again. A
-- (group, value) is updated where its counts change ({changes}); over an insert-only
-- input, only where a count leaves 0: no count falls, so a count above 0 says all
-- there is to say (Nexmark q16 updated 1,300 of the 3,750 pairs of a 5,000-event batch).
{pairs} AS MATERIALIZED (
    {read}
), {updated} AS (
    UPDATE {aux} AS a SET {updates} FROM {pairs} AS x
     WHERE a.ctid = x.argus_actid AND {changes}
       AND a.ctid = ANY(ARRAY(SELECT x.argus_actid FROM {pairs} AS x WHERE {changes}))
), {deleted} AS (
    DELETE FROM {aux} AS a USING {pairs} AS x
     WHERE a.ctid = x.argus_actid AND {vanish}
       AND a.ctid = ANY(ARRAY(SELECT x.argus_actid FROM {pairs} AS x WHERE {vanish}))
), {inserted} AS (
    INSERT INTO {aux} ({key}, argus_hash{counts})
    SELECT {x_key}, x.argus_hash{x_counts} FROM {pairs} AS x
     WHERE x.argus_actid IS NULL AND ({moves})
)
