-- A signed node's statement that also counts what it wrote by sign, so that no second
-- scan of the delta is needed. {ctes}: the step's own top-level CTEs, each followed by
-- a comma.
WITH {ctes}argus_w AS ({statement} RETURNING {sign})
SELECT count(*) FILTER (WHERE {sign} > 0), count(*) FILTER (WHERE {sign} < 0) FROM argus_w
