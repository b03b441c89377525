"""The Nexmark queries argus maintains (argus.bench.nexmark.QUERIES, a workload we did not
write), all registered at once over the generator's events, checked by the oracle after
every cycle: registration over a history, then batches of a few sizes."""

from __future__ import annotations

from argus.bench import nexmark


def test_every_nexmark_query_is_exact_after_every_cycle(oracle):
    events = nexmark.NexmarkGenerator(seed=5)
    for stream, columns in nexmark.COLUMNS.items():
        oracle.create_stream(stream, columns, time_column="date_time")
    for stream, rows in events.batch(3000).items():
        oracle.insert(stream, rows)
    oracle.run()
    for name, query in nexmark.QUERIES.items():
        oracle.register(name, query)  # checked against PostgreSQL on registering
    for size in (1, 50, 2000):
        for stream, rows in events.batch(size).items():
            oracle.insert(stream, rows)
        report = oracle.run()  # checks all of them
        assert not report.failed
