-- A signed node counted its inserted and retracted rows as it wrote them.
        {var} := argus_i + argus_r;
