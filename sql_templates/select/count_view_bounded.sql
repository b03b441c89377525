-- A selection whose delta is a view and whose set-returning calls expand rows
-- (network.layouts.view_of_stream): what it holds this cycle, counted over its parent's
-- delta to one row past its bound, past which it fails as select/delta_bounded does,
-- isolating its queries before any reader expands them. Without the view's row hash:
-- only the calls are evaluated (PostgreSQL drops the subquery's other columns).
        SELECT count(*) FILTER (WHERE {sign} > 0), count(*) FILTER (WHERE {sign} < 0)
          INTO argus_i, argus_r
          FROM (SELECT {t1}.{sign}, {named_exprs} FROM {parent} AS {t1} WHERE {predicate}
                LIMIT {limit}) AS argus_v;
        PERFORM argus.within_bound(argus_i + argus_r, {bound});
