"""Faults: killed cycle processes, a crashed server, concurrent cycles and loaders.

Whatever happens, afterwards every row loaded is in its stream's history exactly once,
no batch is processed twice, and every query equals its SQL run from scratch.
"""

from __future__ import annotations

import contextlib
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psycopg
import pytest

import argus
from argus.embedded import EmbeddedServer

from .oracle import Oracle

QUERIES = {
    "big": "SELECT id, amount FROM tr WHERE amount > 500",
    "pairs": "SELECT a.id AS first, b.id AS second FROM tr a JOIN tr b ON b.snd = a.rcv",
    "per_sender": "SELECT snd, count(*) AS n, sum(amount) AS total, max(amount) AS top "
                  "FROM tr GROUP BY snd HAVING count(*) > 1",
    "lonely": "SELECT id FROM tr a WHERE NOT EXISTS (SELECT 1 FROM tr b WHERE b.snd = a.rcv)",
}

CYCLE_SCRIPT = """
import sys, argus
with argus.connect(sys.argv[1]) as db:
    db.run()
"""


def setup_workload(db) -> Oracle:
    oracle = Oracle(db)
    oracle.create_stream("tr", {"id": "int", "snd": "int", "rcv": "int", "amount": "int"})
    for name, query in QUERIES.items():
        oracle.register(name, query)
    return oracle


def rows(rng: random.Random, start: int, n: int) -> list[tuple]:
    return [(i, rng.randint(0, 50_000), rng.randint(0, 50_000), rng.randint(1, 1000))
            for i in range(start, start + n)]


def assert_exactly_once(db, expected_ids: range) -> None:
    ids = [r[0] for r in db.conn.execute("SELECT id FROM argus_streams.tr ORDER BY id")]
    assert ids == list(expected_ids), "rows were lost or claimed twice"
    claimed = db.conn.execute(
        "SELECT coalesce(sum(rows), 0) FROM argus_catalog.run_streams s "
        "JOIN argus_catalog.runs r USING (run_id) WHERE r.status = 'ok'").fetchone()[0]
    assert claimed == len(expected_ids), "the cycle log does not add up to the rows claimed"


def crash(server: EmbeddedServer) -> None:
    """An immediate shutdown: PostgreSQL's crash, recovered at the next start."""
    server._pgexec("pg_ctl", "-D", str(server.pgdata), "-m", "immediate", "-w", "stop")


def wait_until_cycle_runs(process: subprocess.Popen) -> None:
    """Until the process's cycle is executing on the server (or the process ended)."""
    deadline = time.time() + 30
    with psycopg.connect(process.args[-1], autocommit=True) as watcher:
        while time.time() < deadline and process.poll() is None:
            if watcher.execute("SELECT count(*) FROM pg_stat_activity WHERE query LIKE %s "
                               "AND state = 'active' AND datname = current_database()",
                               ("%argus.cycle(%",)).fetchone()[0]:
                return
            time.sleep(0.005)


# 1 byte: every inbox is taken whole (locked, read in place, truncated) when no load writes to it
INBOX_PATHS = pytest.mark.parametrize("truncate_inbox_bytes", [262144, 1],
                                      ids=["delete", "truncate"])


@pytest.mark.slow
@INBOX_PATHS
def test_cycles_killed_at_random_points_lose_and_repeat_nothing(db, fresh_dsn,
                                                                truncate_inbox_bytes):
    rng = random.Random(1)
    db.configure(truncate_inbox_bytes=truncate_inbox_bytes)
    oracle = setup_workload(db)
    script = Path(tempfile.mkdtemp()) / "cycle.py"
    script.write_text(CYCLE_SCRIPT)
    next_id, kills, duration = 0, 0, 0.3
    for i in range(40):
        batch = rows(rng, next_id, 1000)
        next_id += len(batch)
        oracle.insert("tr", batch)
        process = subprocess.Popen([sys.executable, str(script), fresh_dsn])
        if i % 5 == 4:  # every fifth cycle completes, and tells how long a cycle takes
            process.wait()
            duration = db.conn.execute(
                "SELECT extract(epoch FROM finished_at - started_at) FROM argus_catalog.runs "
                "WHERE status = 'ok' ORDER BY run_id DESC LIMIT 1").fetchone()[0] or duration
            continue
        wait_until_cycle_runs(process)
        time.sleep(rng.uniform(0.0, 0.9) * float(duration))  # claiming, evaluating, flushing
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
            kills += 1
        process.wait()
    # the killed cycles' sessions may still be finishing on the server: wait for them
    deadline = time.time() + 120
    while db.conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = "
                          "current_database() AND pid <> pg_backend_pid()").fetchone()[0]:
        assert time.time() < deadline
        time.sleep(0.1)
    oracle.accumulated.clear()  # cycles ran in other processes: their changes were not seen
    oracle.run()  # claims whatever the killed cycles left; checks every query
    assert_exactly_once(db, range(next_id))
    completed = db.conn.execute("SELECT count(*) FROM argus_catalog.runs "
                                "WHERE status = 'ok'").fetchone()[0] - 1
    assert kills > 10 and completed > 3  # some were killed, some finished
    print(f"\n{kills} of 40 cycle processes killed, {completed} completed")


@pytest.mark.slow
@INBOX_PATHS
def test_concurrent_cycles_and_a_loader_never_overlap(db, fresh_dsn, truncate_inbox_bytes):
    rng = random.Random(2)
    db.configure(truncate_inbox_bytes=truncate_inbox_bytes)
    oracle = setup_workload(db)
    loaded: list[tuple] = []
    stop = threading.Event()
    errors: list[BaseException] = []

    def loader() -> None:
        try:
            with argus.connect(fresh_dsn) as mine:
                start = 0
                while not stop.is_set() and start < 30_000:
                    batch = rows(random.Random(start), start, 50)
                    mine.insert("tr", batch)
                    loaded.extend(batch)
                    start += len(batch)
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    def cycler(count: int) -> None:
        try:
            with argus.connect(fresh_dsn) as mine:
                for _ in range(count):
                    try:
                        mine.run(wait=rng.random() < 0.5)
                    except argus.CycleInProgressError:
                        pass
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=loader)] + [
        threading.Thread(target=cycler, args=(60,)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads[1:]:
        t.join()
    stop.set()
    threads[0].join()
    assert not errors, errors
    oracle.pending.append(("tr", loaded))
    oracle.accumulated.clear()  # the cycles ran in other sessions
    oracle.run()
    assert_exactly_once(db, range(len(loaded)))
    runs = db.conn.execute("SELECT started_at, finished_at FROM argus_catalog.runs "
                           "WHERE status = 'ok' ORDER BY started_at").fetchall()
    for (_, end), (start, _) in zip(runs, runs[1:]):
        assert end <= start, "two cycles overlapped"
    print(f"\n{len(runs)} cycles by 4 concurrent runners, {len(loaded)} rows loaded meanwhile")


@pytest.mark.slow
@pytest.mark.embedded
def test_a_server_crash_mid_cycle_loses_nothing(tmp_path):
    """Stop PostgreSQL with an immediate shutdown (a crash) while cycles run."""
    server = EmbeddedServer(tmp_path / "home")
    dsn = server.ensure_running()
    rng = random.Random(3)
    loaded: list[tuple] = []
    mid_cycle = 0
    try:
        with argus.connect(dsn) as db:
            setup_workload(db)
        for _ in range(6):
            with argus.connect(dsn) as db:
                batch = rows(rng, len(loaded), 5000)
                db.insert("tr", batch)
                loaded += batch
            worker = subprocess.Popen([sys.executable, "-c", CYCLE_SCRIPT, dsn],
                                      stderr=subprocess.DEVNULL)
            deadline = time.time() + 10
            with psycopg.connect(dsn, autocommit=True) as watcher:
                while time.time() < deadline and worker.poll() is None:
                    if watcher.execute("SELECT count(*) FROM pg_stat_activity WHERE query "
                                       "LIKE %s AND state = 'active'",
                                       ("%argus.cycle(%",)).fetchone()[0]:
                        break
                    time.sleep(0.005)
            time.sleep(rng.uniform(0.0, 0.15))  # into the cycle: claiming, evaluating, flushing
            mid_cycle += worker.poll() is None
            crash(server)
            worker.wait()
            server.ensure_running()  # crash recovery
        with argus.connect(dsn) as db:
            oracle = Oracle(db)  # its mirror table was created by setup_workload
            oracle.pending.append(("tr", loaded))
            oracle.run()  # claims what the crashed cycles did not commit; checks queries
            assert_exactly_once(db, range(len(loaded)))
    finally:
        server.destroy()
    assert mid_cycle >= 3
    print(f"\n6 server crashes, {mid_cycle} of them during a cycle")


def test_a_bad_query_does_not_break_cycles_for_the_others(transfers):
    transfers.register("fine", "SELECT tran_id FROM transfers")
    with pytest.raises(argus.QueryError):
        transfers.db.register_query("broken", "SELECT tran_id FROM transfers WHERE sender > 1")
    transfers.insert("transfers", [(1, "2024-01-01", "a", "b", 5)])
    transfers.run()
    assert transfers.db.results("fine") == [(1,)]


LOAD_SCRIPT = """
import sys, argus
dsn, load_id, start, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
with argus.connect(dsn) as db:
    db.insert("tr", [(i, i % 97, i % 89, i % 1000 + 1) for i in range(start, start + n)],
              load_id=load_id)
"""


@pytest.mark.slow
def test_loads_cycles_and_kills_interleave_with_every_row_once(db, fresh_dsn, tmp_path):
    """Loader processes (some started twice with one id, as a retrying scheduler would),
    scheduled cycles (`argus run --log`, as cron runs them) and kills of either at
    random points: after the operator re-runs every load, every row is in its stream's
    history exactly once, and the answers are exact."""
    rng = random.Random(5)
    oracle = setup_workload(db)
    loader = tmp_path / "load.py"
    loader.write_text(LOAD_SCRIPT)
    argus_cli = [sys.executable, "-m", "argus.cli", "run", "--log", str(tmp_path / "c.log"),
                 "--dsn", fresh_dsn]
    loads, killed = [], 0
    for k in range(30):
        load = (f"load-{k}", k * 200, 200)
        loads.append(load)
        processes = [subprocess.Popen([sys.executable, str(loader), fresh_dsn, *map(str, load)])
                     for _ in range(2 if rng.random() < 0.3 else 1)]
        processes.append(subprocess.Popen(argus_cli, stdout=subprocess.DEVNULL))
        time.sleep(rng.uniform(0.05, 0.6))
        for process in processes:
            if process.poll() is None and rng.random() < 0.4:
                process.send_signal(signal.SIGKILL)
                killed += 1
        for process in processes:
            process.wait()
    assert killed > 5
    for load in loads:  # the operator re-runs every load: the ones that landed are no-ops
        subprocess.run([sys.executable, str(loader), fresh_dsn, *map(str, load)], check=True)
    deadline = time.time() + 60
    while db.conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = "
                          "current_database() AND pid <> pg_backend_pid()").fetchone()[0]:
        assert time.time() < deadline
        time.sleep(0.1)
    db.run()
    assert_exactly_once(db, range(30 * 200))
    assert [r[2] for r in db.loads()] == [200] * 30  # each id recorded with its rows
    oracle.pending = [("tr", [(i, i % 97, i % 89, i % 1000 + 1) for i in range(30 * 200)])]
    oracle.accumulated.clear()
    oracle.run()  # every answer equals its SQL from scratch
    assert "run " in (tmp_path / "c.log").read_text()


def _waiting_cycle(dsn: str, timeout: float = 20.0) -> int | None:
    """The pid of a backend whose cycle waits for a lock, once there is one (asked
    outside any transaction: pg_stat_activity is read once per transaction)."""
    deadline = time.monotonic() + timeout
    with psycopg.connect(dsn, autocommit=True) as conn:
        while time.monotonic() < deadline:
            row = conn.execute("SELECT pid FROM pg_stat_activity WHERE wait_event_type = "
                               "'Lock' AND query LIKE '%argus.cycle%'").fetchone()
            if row:
                return row[0]
            time.sleep(0.05)
    return None


def test_a_cancelled_cycle_is_recorded_and_a_killed_clients_cycle_stops(db, fresh_dsn):
    """A cycle cancelled on the server rolls back whole: its client records it as a run
    'rolled_back' with the error (the run id it took is no longer a silent gap). A
    client killed while its cycle runs has the server cancel the cycle within a
    second or so, instead of running it to the end holding the cycle lock."""
    db.create_stream("t", {"id": "int"})
    db.register_query("q", "SELECT id FROM t")
    with psycopg.connect(fresh_dsn, autocommit=True) as blocker:
        blocker.execute("BEGIN")
        blocker.execute("LOCK TABLE argus_streams.t IN ACCESS EXCLUSIVE MODE")
        db.insert("t", [(1,)])
        failure = []
        worker = threading.Thread(target=lambda: failure.append(_run_and_catch(fresh_dsn)))
        worker.start()
        pid = _waiting_cycle(fresh_dsn)
        assert pid is not None
        blocker.execute("SELECT pg_cancel_backend(%s)", (pid,))
        worker.join(30)
        assert failure and "rolled back (run" in failure[0] and "canceling" in failure[0]
        status, error = db.conn.execute("SELECT status, error FROM argus.runs "
                                        "ORDER BY run_id DESC LIMIT 1").fetchone()
        assert status == "rolled_back" and "canceling statement" in error
        # a client killed mid-cycle: its backend goes, and the lock with it
        client = subprocess.Popen([sys.executable, "-m", "argus", "run", "--wait",
                                   "--dsn", fresh_dsn])
        pid = _waiting_cycle(fresh_dsn)
        assert pid is not None
        client.kill()
        client.wait()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and _waiting_cycle(fresh_dsn, timeout=0.1):
            time.sleep(0.1)
        assert _waiting_cycle(fresh_dsn, timeout=0.1) is None
        blocker.execute("COMMIT")
    report = db.run()  # the rows wait for this one, claimed once
    assert report.rows_in == {"t": 1} and db.results("q") == [(1,)]


def _run_and_catch(dsn: str) -> str:
    with argus.connect(dsn) as other:
        try:
            other.run()
        except argus.CycleError as exc:
            return str(exc)
    return "no error"


DDL_SCRIPT = """
import sys, argus
with argus.connect(sys.argv[2]) as db:
    if sys.argv[1] == "register":
        db.register_query(sys.argv[3], sys.argv[4])
    else:
        db.migrate([sys.argv[3]], evaluate=sys.argv[4])
"""


@pytest.mark.slow
@pytest.mark.embedded
def test_a_server_crash_mid_registration_or_migration_loses_nothing(tmp_path):
    """Immediate shutdowns (crashes) while queries register and migrate, with the
    network's state unlogged (durability derived): after each restart argus's owner
    rebuilds it; a registration or migration cut short left nothing, one that committed
    is whole, and every answer equals its SQL from scratch."""
    server = EmbeddedServer(tmp_path / "home")
    dsn = server.ensure_running()
    rng = random.Random(51)
    loaded: list[tuple] = []
    cut = 0
    try:
        with argus.connect(dsn) as db:
            assert db.settings()["durability"] == "derived"
            setup_workload(db)
            loaded = rows(rng, 0, 20_000)
            db.insert("tr", loaded)
            db.run()
        steps = [("register", f"r{i}", "SELECT a.id, b.amount FROM tr a JOIN tr b "
                  f"ON b.rcv = a.snd WHERE a.amount > {100 * i}") for i in range(3)]
        steps += [("migrate", "pairs", "rerun"), ("migrate", "pairs", "incremental"),
                  ("migrate", "per_sender", "rerun")]
        for action, name, what in steps:
            worker = subprocess.Popen([sys.executable, "-c", DDL_SCRIPT, action, dsn, name, what],
                                      stderr=subprocess.DEVNULL)
            _until_locked(dsn, worker)
            time.sleep(rng.uniform(0.0, 0.05))
            cut += worker.poll() is None
            crash(server)
            worker.wait()
            server.ensure_running()  # crash recovery
            with argus.connect(dsn) as db:  # rebuilds what the crash emptied
                batch = rows(rng, len(loaded), 500)
                db.insert("tr", batch)
                loaded += batch
                db.run()
                for query in db.queries():  # the same SQL over the stream histories
                    with db.conn.transaction():
                        db.conn.execute("SET LOCAL search_path TO argus_streams, public")
                        expected = db.conn.execute(query.sql).fetchall()
                    assert sorted(db.results(query.name)) == sorted(expected), query.name
        with argus.connect(dsn) as db:
            assert_exactly_once(db, range(len(loaded)))
    finally:
        server.destroy()
    assert cut >= 3
    print(f"\n{len(steps)} server crashes, {cut} of them mid-registration or mid-migration")


def _until_locked(dsn: str, process: subprocess.Popen) -> None:
    """Until the process holds the cycle lock (registering, migrating) or ended."""
    deadline = time.time() + 30
    with psycopg.connect(dsn, autocommit=True) as watcher:
        while time.time() < deadline and process.poll() is None:
            if watcher.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'relation' "
                               "AND relation = to_regclass('argus_catalog.cycle_lock') "
                               "AND mode = 'ExclusiveLock' AND granted").fetchone()[0]:
                return
            time.sleep(0.005)


@pytest.mark.slow
@pytest.mark.embedded
def test_a_server_crash_mid_cycle_over_windows_tables_and_top_k_is_exact(tmp_path):
    """Immediate shutdowns while cycles run over what a crash of derived state is hardest
    on (tests/test_durability's network): a table taking updates and deletes, a window
    whose stream is purged, Top-K, DISTINCT, count(DISTINCT) and an outer join. After
    each restart argus's owner rebuilds the network from the histories; every answer then
    equals its SQL over them, and every row loaded is claimed once."""
    import datetime

    from .test_durability import NAMES, QUERIES as DERIVED, TRANSFERS, batch

    server = EmbeddedServer(tmp_path / "home")
    dsn = server.ensure_running()
    rng = random.Random(510)
    day, loaded, cut = datetime.date(2026, 1, 1), 0, 0
    present = list(NAMES[:8])
    try:
        with argus.connect(dsn) as db:
            assert db.settings()["durability"] == "derived"
            db.create_stream("transfers", TRANSFERS, time_column="tran_date")
            db.create_stream("events", {"id": "bigint", "t": "date", "k": "text"},
                             time_column="t")
            db.create_table("accounts", {"id": "text", "label": "text"}, ["id"])
            db.insert("accounts", [(name, f"label {name}") for name in NAMES[:8]])
            for name, query in DERIVED.items():
                db.register_query(name, query)
            db.register_query("windowed", "SELECT k, count(*) AS n FROM events WHERE "
                              "t > argus_now() - interval '48 hours' GROUP BY k")
        for i in range(1, 7):
            day += datetime.timedelta(days=1)
            with argus.connect(dsn) as db:
                rows_ = [r for n in range(0, 30_000, 60)
                         for r in batch(rng, loaded + n, day)]
                db.insert("transfers", rows_)
                db.insert("events", [(loaded + j, day, rng.choice("abc")) for j in range(500)])
                loaded += len(rows_)
                db.update("accounts", [(rng.choice(present), f"label {i}")])
                gone = present.pop(rng.randrange(len(present)))
                db.delete("accounts", [gone])
                present.append(rng.choice([gone, f"new{i}"]))
                db.insert("accounts", [(present[-1], f"label {i}")])
            worker = subprocess.Popen([sys.executable, "-c", CYCLE_SCRIPT, dsn],
                                      stderr=subprocess.DEVNULL)
            wait_until_cycle_runs(worker)
            time.sleep(rng.uniform(0.0, 0.3))  # claiming, evaluating, flushing, committing
            cut += worker.poll() is None
            crash(server)
            worker.wait()
            server.ensure_running()  # crash recovery: the network's tables are empty
            with argus.connect(dsn) as db:  # its owner rebuilds them, then the cycle runs
                db.run()
                for query in db.queries():
                    assert query.status == "ok", query.name
                    with db.conn.transaction():
                        db.conn.execute("SET LOCAL search_path TO argus_streams, public")
                        expected = db.conn.execute(query.sql).fetchall()
                    assert sorted(map(repr, db.results(query.name))) == \
                        sorted(map(repr, expected)), query.name
        with argus.connect(dsn) as db:
            ids = [i for (i,) in db.conn.execute(
                "SELECT tran_id FROM argus_streams.transfers ORDER BY tran_id")]
            assert ids == list(range(loaded)), "rows were lost or claimed twice"
    finally:
        server.destroy()
    assert cut >= 3
    print(f"\n6 server crashes, {cut} of them during a cycle")


@pytest.mark.slow
@pytest.mark.embedded
def test_random_queries_are_exact_after_real_crashes_mid_cycle(tmp_path):
    """The crash fuzzer with real crashes: the algebra's random queries
    (tests/test_property_algebra), random batches with late rows, layouts, and immediate
    shutdowns of the server while a cycle runs in another process (tests/test_durability
    empties the unlogged tables between steps instead). After each restart argus's owner
    rebuilds the network; every answer equals its SQL from scratch after every cycle."""
    from hypothesis import strategies as st
    from hypothesis.stateful import rule, run_state_machine_as_test

    from .test_property_algebra import Registering, machine_settings

    server = EmbeddedServer(tmp_path / "home")
    dsn = server.ensure_running()
    stats = {"queries": 0, "refused": 0, "cycles": 0, "crashes": 0, "mid-cycle": 0}
    session = {"db": argus.connect(dsn)}
    try:
        class RealCrashes(Registering):
            def __init__(self) -> None:
                super().__init__(session["db"], stats)

            @rule(pause=st.floats(0.0, 0.08))
            def crash_mid_cycle(self, pause):
                worker = subprocess.Popen([sys.executable, "-c", CYCLE_SCRIPT, dsn],
                                          stderr=subprocess.DEVNULL)
                wait_until_cycle_runs(worker)
                time.sleep(pause)
                stats["mid-cycle"] += worker.poll() is None
                crash(server)
                worker.wait()
                server.ensure_running()
                stats["crashes"] += 1
                with contextlib.suppress(psycopg.Error):
                    self.db.close()  # (its server is gone)
                self.db = session["db"] = argus.connect(dsn)  # the owner: rebuilds first
                self.oracle.db, self.oracle.conn = self.db, self.db.conn
                self.oracle.accumulated.clear()  # a cycle it did not see may have committed
                self.oracle.run()
                stats["cycles"] += 1  # (hypothesis may leave the cycle rule out of a run)

        run_state_machine_as_test(RealCrashes, settings=machine_settings(8, steps=12))
    finally:
        session["db"].close()
        server.destroy()
    assert stats["crashes"] and stats["cycles"] and stats["mid-cycle"]
    print(f"\nreal-crash fuzzer: {stats}")
