-- Bounded state: rows that fail every consumer's lower time bound can never be needed
-- again (the clock only rises), so they leave the history.
    IF argus_clock_moved AND argus_purge THEN
        DELETE FROM {hist} AS t1 WHERE {failed};
        GET DIAGNOSTICS argus_rc = ROW_COUNT;
        UPDATE argus_catalog.nodes SET hist_rows = hist_rows - argus_rc,
               horizon = ({horizon})::text
         WHERE node_id = {id};
    END IF;
