-- A row of a partition the cycle touched: by the keys' equality where they are all
-- set (a hashed semi-join), by IS NOT DISTINCT FROM where one is NULL (PARTITION BY
-- puts NULLs together).
(ROW({keys}) IN (SELECT * FROM argus_keys)
 OR (NOT (ROW({keys}) IS NOT NULL)
     AND EXISTS (SELECT FROM argus_keys AS k WHERE ROW(k.*) IS NOT DISTINCT FROM ROW({keys}))))
