-- A selection whose delta is a view that passes every row of its parent's
-- (nodes.select.passes_every_row): the parent's counts, not a count of the view.
        argus_i := argus_ins[array_position(argus_ids, {parent}::bigint)];
        argus_r := argus_ret[array_position(argus_ids, {parent}::bigint)];
