-- A selection whose delta is a view and expands rows (an aggregate's inline
-- set-returning function, network.builder): what it holds this cycle, counted to its
-- bound, past which the statement fails (argus.nodes.base.bounded), isolating its
-- queries before a consumer reads the rows.
        WITH argus_rows AS (SELECT {sign} FROM {delta}){bounded}
        SELECT count(*) FILTER (WHERE {sign} > 0), count(*) FILTER (WHERE {sign} < 0)
          INTO argus_i, argus_r FROM {read};
