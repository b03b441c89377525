"""SQL to plans: parse and check a query (`analyze`), the functions it may call
(`functions`), the clock and windows it reads (`temporal`), its canonical predicates and
the constants PostgreSQL reads in them (`canon`, `constants`), and its plan (`planner`).
Nothing here writes to the network."""
