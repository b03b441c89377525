-- Every node has its delta: choose, per signed node, between applying its changes to
-- its history and rebuilding it (catalog/003_maintenance.sql).
    argus_rebuild := argus.choose_maintenance(argus_run, argus_ids, argus_ins, argus_ret);
