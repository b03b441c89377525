-- Window functions maintained incrementally (issue 22): a window node computes again
-- the partitions its parent's changes touched (argus.nodes.window).
ALTER TABLE argus_catalog.nodes DROP CONSTRAINT nodes_kind_check,
    ADD CONSTRAINT nodes_kind_check
        CHECK (kind IN ('stream', 'select', 'join', 'aggregate', 'distinct', 'setop', 'rerun',
                        'window'));
