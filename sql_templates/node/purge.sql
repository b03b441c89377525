-- Bounded state: rows that fail every consumer's lower time bound on one column can
-- never be needed again (the clock only rises), so they leave the history; the
-- horizon says from where, and by which column, rows are kept.
    IF argus_clock_moved AND argus_purge THEN
        argus_at := {id};
        DELETE FROM {hist} AS t1 WHERE {failed};
        GET DIAGNOSTICS argus_rc = ROW_COUNT;
        UPDATE argus_catalog.node_stats SET hist_rows = hist_rows - argus_rc,
               horizon = ({horizon})::text, horizon_column = {column}
         WHERE node_id = {id};
    END IF;
