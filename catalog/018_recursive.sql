-- WITH RECURSIVE maintained incrementally (issue 22): a recursive node derives a
-- cycle's new rows by semi-naive rounds (argus.nodes.recursive).
ALTER TABLE argus_catalog.nodes DROP CONSTRAINT nodes_kind_check,
    ADD CONSTRAINT nodes_kind_check
        CHECK (kind IN ('stream', 'select', 'join', 'aggregate', 'distinct', 'setop', 'rerun',
                        'window', 'recursive'));
