-- A group's row that the other side (old rows o, new rows f) does not hold unchanged.
 WHERE NOT EXISTS (SELECT 1 FROM {other} WHERE {other}.argus_hash = {this}.argus_hash
                                     AND CASE WHEN ROW({other_stored}) IS NOT DISTINCT FROM ROW({this_stored}) THEN true ELSE false END)
