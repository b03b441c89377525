-- Where anyone (psql, COPY, Spark over JDBC) writes new rows; a cycle claims them.
CREATE TABLE {inbox} (LIKE {history} INCLUDING DEFAULTS INCLUDING CONSTRAINTS)
