-- A deferred join evaluates no pair in the cycle. Its arithmetic over one side (a
-- window's `t1.d + 20`) is evaluated here on every new row of that side, so that a value
-- it overflows on fails the cycle, isolating the node's queries and naming the error,
-- instead of making their answers unreadable later. No row passes.
SELECT FROM {rows} AS {alias} WHERE num_nulls({exprs}) < 0
