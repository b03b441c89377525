-- Inserted and retracted rows in a node's delta, for the cycle report.
SELECT count(*) FILTER (WHERE {sign} > 0), count(*) FILTER (WHERE {sign} < 0) FROM {delta}
