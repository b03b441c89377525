-- A table's part of the claim: its changes leave the inbox, each key's last change
-- (argus_seq) counts, and the source node's delta gets, per key that changed, the row
-- the table had (-1) and the row it has now (+1); a row that did not change cancels
-- out. The history is the table before this cycle (the flush applies the delta).
{claimed} AS (DELETE FROM {inbox} RETURNING {columns}, argus_op, argus_seq),
{last} AS (SELECT DISTINCT ON ({key}) * FROM {claimed} ORDER BY {key}, argus_seq DESC),
{moved} AS (INSERT INTO {delta} ({columns}, {sign})
            SELECT {columns}, -1 FROM (SELECT {h_columns} FROM {history} h JOIN {last} l
                                         ON {l_join}
                                       EXCEPT ALL
                                       SELECT {columns} FROM {last} WHERE argus_op <> 'd') old
            UNION ALL
            SELECT {columns}, 1 FROM (SELECT {columns} FROM {last} WHERE argus_op <> 'd'
                                      EXCEPT ALL
                                      SELECT {h_columns} FROM {history} h JOIN {last} l
                                          ON {l_join}) new
            RETURNING {sign})
