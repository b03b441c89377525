-- Who finds a node by its signature, apart from the signature, which hashes what the
-- node computes alone (as its layout is apart since 049): private_to, the one query a
-- node not to be shared is for (sharing 'none', or a join when join sharing is off);
-- findable false for a node no registration is to find: one an equal node stands in
-- for since it was isolated (or made earlier in the same registration), one changed
-- in place into an equal node's twin, a join built lazily until it is whole (found by
-- its signature and its layout's 'lazy'). The signature held these as a fifth element,
-- a salt ("q1", "q1 beside isolated node 7", "None beside its twin 9", "built lazily
-- as [...]"): it is taken off here, and said by the two columns.
ALTER TABLE argus_catalog.nodes ADD COLUMN private_to text,
                                ADD COLUMN findable boolean NOT NULL DEFAULT true;

-- [kind, parents, columns, definition, "salt"] as Python's json.dumps wrote it: the
-- salt is the one string literal after the definition's closing brace
CREATE TEMPORARY TABLE argus_salted ON COMMIT DROP AS
SELECT node_id, m[1] || ']' AS plain, (m[2]::jsonb) #>> '{}' AS salt
  FROM argus_catalog.nodes,
       regexp_match(signature, '^(\[.*\}), ("(?:[^"\\]|\\.)*")\]$') AS m
 WHERE m IS NOT NULL;

-- a lazy join's salt is the signature it stands in for, itself perhaps salted
UPDATE argus_salted s
   SET plain = coalesce(i.m[1] || ']', substr(s.salt, 17)),
       salt = coalesce((i.m[2]::jsonb) #>> '{}', 'None') || ' lazily'
  FROM (SELECT node_id, regexp_match(substr(salt, 17), '^(\[.*\}), ("(?:[^"\\]|\\.)*")\]$') AS m
          FROM argus_salted WHERE salt LIKE 'built lazily as %') i
 WHERE s.node_id = i.node_id;

DROP INDEX argus_catalog.nodes_signature;
UPDATE argus_catalog.nodes n
   SET signature = s.plain,
       private_to = nullif(split_part(s.salt, ' ', 1), 'None'),
       findable = s.salt NOT LIKE '% beside its twin %' AND s.salt NOT LIKE '% lazily'
  FROM argus_salted s
 WHERE n.node_id = s.node_id;
-- an isolated node another was made beside is found no more (the newest of equal
-- nodes is the one found)
UPDATE argus_catalog.nodes n SET findable = false
 WHERE EXISTS (SELECT FROM argus_catalog.nodes o
                WHERE o.node_id > n.node_id AND o.findable AND n.findable
                  AND md5(o.signature) = md5(n.signature)
                  AND o.private_to IS NOT DISTINCT FROM n.private_to);
UPDATE argus_catalog.nodes n SET layout = n.layout #- '{lazy,signature}'
 WHERE n.layout ? 'lazy';
CREATE UNIQUE INDEX nodes_signature ON argus_catalog.nodes (md5(signature), coalesce(private_to, ''))
 WHERE findable;
