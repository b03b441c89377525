-- A node's layout (how it keeps its rows: a view or a table, deferred or built lazily,
-- its indexes, its bound, its rows' expiry, what its parent's growth lets it skip)
-- apart from its definition (what it computes, which its signature hashes): the
-- signature excluded these keys by a list; now they are not in the definition at all
-- (argus.nodes.base.LAYOUT).
ALTER TABLE argus_catalog.nodes ADD COLUMN layout jsonb NOT NULL DEFAULT '{}';
UPDATE argus_catalog.nodes
   SET layout = coalesce((SELECT jsonb_object_agg(key, value) FROM jsonb_each(definition)
                           WHERE key = ANY (ARRAY['virtual', 'deferred', 'lazy', 'indexes',
                                                  'bound', 'expiry', 'grows', 'counted',
                                                  'outward'])), '{}'),
       definition = definition - ARRAY['virtual', 'deferred', 'lazy', 'indexes', 'bound',
                                       'expiry', 'grows', 'counted', 'outward'];
