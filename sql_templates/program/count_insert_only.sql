-- An insert-only node wrote only +1 rows.
        argus_i := {var};
