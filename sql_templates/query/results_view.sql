-- argus_results.<query>: the current answer, exactly the query's output columns.
CREATE OR REPLACE VIEW {view} AS SELECT {exprs} FROM {hist} AS {t1}{guard}
