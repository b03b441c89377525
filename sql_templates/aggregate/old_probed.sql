-- The changed groups' current rows (o), found group by group through the history's hash
-- index while the delta's groups are under 1/{ratio} of the history's rows, else by the
-- planner's join; chosen as the statement runs, by one-time filters over the groups
-- counted. A delta's estimated rows can be far off (a set-returning call is estimated
-- at 1,000 rows: Nexmark q5's HOP windows), and the join then hashed the whole
-- history, which may only grow, for a few thousand groups.
argus_probe AS (
    SELECT (SELECT count(*) FROM dh) * {ratio} < coalesce(
               (SELECT s.hist_rows FROM argus_catalog.node_stats AS s WHERE s.node_id = {id}),
               0) AS probe
), o AS (
    SELECT h.* FROM dh CROSS JOIN LATERAL (
        SELECT h.ctid AS argus_ctid, h.* FROM {hist} AS h WHERE {match_h} OFFSET 0) AS h
     WHERE (SELECT argus_probe.probe FROM argus_probe)
    UNION ALL
    SELECT h.ctid AS argus_ctid, h.* FROM {hist} AS h JOIN dh ON {match_h}
     WHERE NOT (SELECT argus_probe.probe FROM argus_probe)
)