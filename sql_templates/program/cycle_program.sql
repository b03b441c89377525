-- The network's execution code, assembled from every node's stored blocks in evaluation
-- order at the first cycle after the network changed (ARGUS's code assembly; see
-- catalog/004_program.sql). argus_n<id> holds the rows node <id> wrote to its delta
-- this cycle; a node runs only if a parent's is non-zero.
-- Every PL/pgSQL name starts with argus_, which user columns may not, so that none
-- shadows a column in the embedded SQL.
DECLARE
    argus_t timestamptz;
    argus_rc bigint;
    argus_i bigint;
    argus_r bigint;
    argus_p bigint;
    argus_m bigint;
    argus_claimed_time timestamptz;
    argus_late bigint[];
    argus_clock_old timestamptz;
    argus_clock_new timestamptz;
    argus_clock_moved boolean := false;
    argus_purge boolean := (SELECT purge FROM argus_catalog.settings);
    argus_inbox_limit bigint := (SELECT truncate_inbox_bytes FROM argus_catalog.settings);
    argus_locked boolean;
    argus_ids bigint[] := ARRAY[]::bigint[];
    argus_ins bigint[] := ARRAY[]::bigint[];
    argus_ret bigint[] := ARRAY[]::bigint[];
    argus_ms float8[] := ARRAY[]::float8[];
    argus_rebuild bigint[] := ARRAY[]::bigint[];
    argus_fids bigint[] := ARRAY[]::bigint[];
    argus_fms float8[] := ARRAY[]::float8[];
{declarations}
BEGIN
{claim}
{evaluate}
-- Every node has its delta: choose, per signed node, between applying its changes to
-- its history and rebuilding it (catalog/003_maintenance.sql).
    IF {signed} THEN
        argus_rebuild := argus.choose_maintenance(argus_run, argus_ids, argus_ins, argus_ret);
    END IF;
{flush}
{purge}
{release}
    INSERT INTO argus_catalog.run_nodes (run_id, node_id, inserted, retracted, ms, flush_ms)
    SELECT argus_run, e.id, e.ins, e.ret, e.ms, f.ms
      FROM unnest(argus_ids, argus_ins, argus_ret, argus_ms) AS e(id, ins, ret, ms)
      LEFT JOIN unnest(argus_fids, argus_fms) AS f(id, ms) ON f.id = e.id;
END
