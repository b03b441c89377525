-- A tracked table's source rewritten without its rows' changes captured (ALTER TABLE …
-- TYPE … USING, ADD COLUMN with a volatile DEFAULT; VACUUM FULL, CLUSTER and TRUNCATE
-- give it a new file too, and change nothing here): the rows that differ between the
-- source and what argus will hold once it has claimed its inbox (each key's last change
-- there, else its row in the history), written into the inbox as changes — 'i' or 'u'
-- of the source's row, 'd' of a key the source lacks — compared by their text, as the
-- claim compares a key's rows (stream/claim_table). Run as whoever runs `argus resync`
-- (argus.track.resync), never as argus's owner.
WITH argus_last AS (
    SELECT DISTINCT ON ({key}) {columns}, argus_op FROM {inbox} ORDER BY {key}, argus_seq DESC
), argus_held AS (
    SELECT {columns} FROM argus_last WHERE argus_op <> 'd'
    UNION ALL
    SELECT {h_columns} FROM {history} argus_h
     WHERE NOT EXISTS (SELECT FROM argus_last argus_l WHERE {hl_join})
)
INSERT INTO {inbox} ({columns}, argus_op)
SELECT {s_columns}, CASE WHEN argus_e.{first} IS NULL THEN 'i' ELSE 'u' END
  FROM {source} argus_s LEFT JOIN argus_held argus_e ON {se_join}
 WHERE argus_e.{first} IS NULL OR ROW({s_columns})::text IS DISTINCT FROM ROW({e_columns})::text
UNION ALL
SELECT {e_key_only}, 'd' FROM argus_held argus_e
 WHERE NOT EXISTS (SELECT FROM {source} argus_s WHERE {se_join})
