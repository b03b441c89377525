-- A table's history takes the cycle's changes by key: the rows it had go (this
-- statement), then the rows it has now come in (stream/flush from the delta table).
DELETE FROM {hist} h USING {delta} d WHERE d.{sign} < 0 AND {join}
