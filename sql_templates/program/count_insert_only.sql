        argus_i := {var};
        argus_r := 0;
