-- A table's inbox holds changes, not rows: each row is an insert ('i'), an update of
-- the row with its key ('u') or a delete of it ('d', the key alone), in the order
-- argus_seq gives (across loads); a cycle nets each key's changes out.
CREATE TABLE {inbox} (LIKE {history} INCLUDING DEFAULTS,
                      argus_op "char" NOT NULL DEFAULT 'i' CHECK (argus_op IN ('i', 'u', 'd')),
                      argus_seq bigint GENERATED ALWAYS AS IDENTITY)
