-- A selection whose delta is a view (select/create_view): what it holds this cycle.
        SELECT count(*) FILTER (WHERE {sign} > 0), count(*) FILTER (WHERE {sign} < 0)
          INTO argus_i, argus_r FROM {delta};
