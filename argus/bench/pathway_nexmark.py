"""argus against Pathway (the Python stream processor) on the same Nexmark events and the
Nexmark queries both maintain: ms per batch from the batch's arrival to current answers.

Why: argus keeps answers current with incremental SQL inside PostgreSQL; Pathway is an
incremental dataflow engine (differential dataflow in Rust) driven from Python. Both get
H events of history, then N batches of B events (argus.bench.nexmark's generator, seed 1), and
are timed per batch:
- argus: COPY of the batch into the inboxes + one cycle + every query's changes read
  (`new_results`), as `argus bench` times it;
- Pathway (its own virtualenv, run as a subprocess of this script, PATHWAY_THREADS=2):
  from pushing the batch's first event into a Python connector (one commit per batch, so
  the batch is one Pathway time) until every query's subscription (pw.io.subscribe) has
  received its changes for that time. End of batch: each subscribed table is the query's
  output concatenated with a tick row the connector sends in the batch's commit. Pathway
  calls a subscription's on_time_end(t) only for times in which its table changed, once
  the subscription's input frontier has passed t, after on_change for every change at t;
  the tick makes every subscription change at every batch, so on_time_end at the tick's
  time says that the query's output for the batch is complete and delivered.
The systems run one after the other (Pathway first), never at once. Then each query's
final answer in Pathway is compared with argus's and with its SQL run from scratch over
argus's stream histories (argus_streams), as multisets of rows; numbers with a relative
tolerance of 1e-9, since argus computes 0.908 * price and avg in numeric, Pathway in float.
The database is argus_pathway, made anew and dropped at the end. Pathway's q11 (session
windows: a sort and pointer jumping in pw.iterate) costs more as the history grows and
dominates its time; --queries without q11 shows the others.

Usage: python -m argus.bench.pathway_nexmark [--dsn DSN] [--history 100000] [--batch 5000[,…]]
           [--batches 5] [--queries q0,q1,…] [--pathway-python /tmp/pwvenv/bin/python]
Pathway: python3 -m venv /tmp/pwvenv && /tmp/pwvenv/bin/pip install pathway==0.33.0
"""

from __future__ import annotations

import datetime as dt
import importlib.util
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from decimal import Decimal
from pathlib import Path

HERE = Path(__file__).resolve().parent  # argus/bench: nexmark.py beside this file
DATABASE = "argus_pathway"
SEED = 1
CHUNK = 100_000  # history events generated at a time (Pathway commits the history once)
TIMEOUT = 3600  # seconds Pathway may take over one batch

# argus.bench.nexmark's queries that Pathway maintains here with the same answers
QUERIES = ("q0", "q1", "q2", "q3", "q4", "q5", "q7", "q8", "q9", "q10", "q11", "q14", "q15",
           "q16", "q17", "q18", "q20", "q21", "q22")
LEFT_OUT = {
    "q6": "the average of each seller's last 11 auctions (ROWS BETWEEN 10 PRECEDING): "
          "Pathway has no row-count windows (emulating them with sort's prev pointers "
          "chained 10 deep would be another query)",
    "q19": "the top 10 bids of each auction, numbered: Pathway has no top-k per group "
           "(sorted_tuple over each auction's every bid, sliced, re-sorts whole groups)",
    "q12, q13": "not in argus.bench.nexmark (processing-time windows; no side table)",
}


def nexmark():
    """argus/nexmark.py loaded by path: it needs only the standard library, while `import
    argus.bench.nexmark` would run argus/__init__ (psycopg, …), which Pathway's venv lacks."""
    spec = importlib.util.spec_from_file_location("nexmark", HERE / "nexmark.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def history(gen, events: int):
    while events > 0:
        yield gen.batch(min(events, CHUNK))
        events -= CHUNK


def plain(value):
    """A value of an answer as JSON carries it: timestamps as ISO text, numbers as numbers."""
    if hasattr(value, "to_pydatetime"):  # pandas.Timestamp, from Pathway
        value = value.to_pydatetime()
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ", timespec="microseconds")
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    return value


# -- Pathway's side, in Pathway's virtualenv ----------------------------------------------


def pathway_side(spec: dict, out: str) -> None:
    import pathway as pw

    model = nexmark()
    outputs = Outputs(spec["queries"])
    feeder = feeder_for(pw, model, spec, outputs)
    events = pw.io.python.read(feeder, schema=event_schema(pw, model),
                               autocommit_duration_ms=None, name="nexmark")
    streams = split(pw, model, events)
    queries = pathway_queries(pw, **streams)
    for name in spec["queries"]:
        on_change, on_time_end = outputs.sink(name)
        pw.io.subscribe(ticked(pw, queries[name], streams["tick"]), on_change=on_change,
                        on_time_end=on_time_end, name=name)
    pw.run(monitoring_level=pw.MonitoringLevel.NONE)
    with open(out, "w") as file:
        json.dump({"version": pw.__version__, "threads": os.environ.get("PATHWAY_THREADS"),
                   "load_s": feeder.load_s, "times": feeder.times, "pushing": feeder.pushing,
                   "untimed": outputs.untimed,
                   "answers": outputs.answers()}, file)


def field_names(model) -> dict[str, list[str]]:
    """Each stream's columns in Pathway, `id` renamed (Pathway's row key): p_id, a_id."""
    return {stream: [f"{stream[0]}_id" if c == "id" else c for c in columns]
            for stream, columns in model.COLUMNS.items()}


def event_schema(pw, model):
    """One connector carries all three streams and the ticks, so that a batch is one commit,
    one Pathway time: every stream's columns (optional), `kind` and `tick`."""
    types = {"bigint": int, "text": str, "timestamp": pw.DateTimeNaive}
    columns = {"kind": pw.column_definition(dtype=str),
               "tick": pw.column_definition(dtype=int | None, default_value=None)}
    for stream, names in field_names(model).items():
        for name, sql_type in zip(names, model.COLUMNS[stream].values()):
            columns[name] = pw.column_definition(dtype=types[sql_type.split()[0]] | None,
                                                 default_value=None)
    return pw.schema_builder(columns, name="NexmarkEvent")


def split(pw, model, events) -> dict:
    """Each stream: the events of its kind, its columns unwrapped (the generator leaves
    none NULL); and the ticks."""
    out = {}
    for stream, names in field_names(model).items():
        rows = events.filter(events.kind == stream)
        out[stream] = rows.select(**{name: pw.unwrap(rows[name]) for name in names})
    ticks = events.filter(events.kind == "tick")
    out["tick"] = ticks.select(tick=pw.unwrap(ticks.tick))
    return out


def ticked(pw, table, tick):
    """`table` and one row more per batch at the batch's time: the query's rows have _tick
    -1, the tick's row the batch's number (and its other columns None)."""
    return pw.Table.concat_reindex(
        table.select(*pw.this, _tick=-1),
        tick.select(**{column: None for column in table.column_names()}, _tick=pw.this.tick))


class Outputs:
    """The queries' subscriptions: the changes, kept as they come (folded into answers after
    the run), and, per batch (tick), how many subscriptions have taken its output in full."""

    def __init__(self, names: list[str]) -> None:
        self.changes: dict[str, list] = {name: [] for name in names}
        self.complete: Counter = Counter()
        self.at: dict[int, float] = {}  # tick -> perf_counter at its last on_time_end
        self.cond = threading.Condition()
        self.untimed = 0  # times with changes but no tick (a batch over several times)

    def sink(self, name: str):
        log, ticks = self.changes[name], []

        def on_change(key, row, time, is_addition):
            tick = row.pop("_tick")
            if tick >= 0:
                ticks.append(tick)
            else:
                log.append((row, is_addition))

        def on_time_end(time):
            if not ticks:
                self.untimed += 1
                return
            with self.cond:
                for tick in ticks:
                    self.complete[tick] += 1
                    if self.complete[tick] == len(self.changes):
                        self.at[tick] = now()
                        self.cond.notify_all()
            ticks.clear()

        return on_change, on_time_end

    def wait(self, tick: int) -> float:
        with self.cond:
            if not self.cond.wait_for(lambda: tick in self.at, timeout=TIMEOUT):
                raise TimeoutError(f"Pathway: no complete output for batch {tick}")
            return self.at[tick]

    def answers(self) -> dict[str, list]:
        out = {}
        for name, log in self.changes.items():
            rows: Counter = Counter()
            for row, added in log:
                rows[tuple(plain(v) for v in row.values())] += 1 if added else -1
            out[name] = [list(row) for row, n in rows.items() for _ in range(n)]
        return out


def now() -> float:
    return time.perf_counter()


def feeder_for(pw, model, spec: dict, outputs: Outputs):
    """The connector: pushes the history, then each batch as one commit with its tick, and
    times a batch from its first event to the last subscription's on_time_end for it."""
    names = field_names(model)

    class Feeder(pw.io.python.ConnectorSubject):
        load_s = 0.0
        times: dict[str, list[float]]  # size -> ms per batch
        pushing: dict[str, list[float]]  # size -> ms of it pushing the events

        def push(self, batch: dict, tick: int | None) -> None:
            """The batch's events and, if `tick`, its tick and the commit."""
            for stream, rows in batch.items():
                columns = names[stream]
                for row in rows:
                    self.next(kind=stream, **dict(zip(columns, row)))
            if tick is not None:
                self.next(kind="tick", tick=tick)
                self.commit()

        def run(self) -> None:
            self.times, self.pushing = {}, {}
            gen = model.NexmarkGenerator(SEED)
            started = now()
            for chunk in history(gen, spec["history"]):  # one commit: tick 0
                self.push(chunk, None)
            self.push({}, 0)
            self.load_s = outputs.wait(0) - started
            tick = 0
            for size in spec["sizes"]:
                batches = [gen.batch(size) for _ in range(spec["batches"])]  # untimed
                self.times[str(size)], self.pushing[str(size)] = [], []
                for batch in batches:
                    tick += 1
                    started = now()
                    self.push(batch, tick)
                    self.pushing[str(size)].append((now() - started) * 1000)
                    self.times[str(size)].append((outputs.wait(tick) - started) * 1000)

    return Feeder()


# The queries in Pathway's table API, each with argus.bench.nexmark's SQL semantics and output
# columns in the SQL's order (names aside: `id` is Pathway's row key).

WINDOW = dt.timedelta(seconds=10)  # TUMBLE(…, 10 seconds): the start is date_time floored
HOP = dt.timedelta(seconds=2)  # HOP(…, 2 seconds, 10 seconds)
CHANNEL_ID = re.compile(r"(?:&|^|\?)channel_id=([^&]*)")  # q21's regular expression


def pathway_queries(pw, person, auction, bid, tick) -> dict:
    q = {}
    this = pw.this
    q["q0"] = bid.select(this.auction, this.bidder, this.price, this.date_time)
    q["q1"] = bid.select(this.auction, this.bidder, price=0.908 * this.price,
                         date_time=this.date_time)
    q["q2"] = bid.filter(this.auction % 123 == 0).select(this.auction, this.price)
    sellers = person.filter((this.state == "or") | (this.state == "id") | (this.state == "ca"))
    tens = auction.filter(this.category == 10)
    q["q3"] = tens.join(sellers, tens.seller == sellers.p_id).select(
        sellers.name, sellers.city, sellers.state, tens.a_id)
    q["q4"] = winning_bids(pw, auction, bid).groupby(this.a_id, this.category).reduce(
        this.category, final=pw.reducers.max(this.price)).groupby(this.category).reduce(
        this.category, avg=pw.reducers.avg(this.final))
    q["q5"] = hot_items(pw, bid)
    windowed = bid.with_columns(window=this.date_time.dt.floor(WINDOW))
    top = windowed.groupby(this.window).reduce(this.window, maxprice=pw.reducers.max(this.price))
    q["q7"] = windowed.join(top, windowed.window == top.window,
                            windowed.price == top.maxprice).select(
        windowed.auction, windowed.price, windowed.bidder, windowed.date_time)
    q["q8"] = new_sellers(pw, person, auction)
    q["q9"] = winners(pw, auction, bid)
    q["q10"] = bid.select(this.auction, this.bidder, this.price, this.date_time,
                          date=this.date_time.dt.strftime("%Y-%m-%d"),
                          time=this.date_time.dt.strftime("%I:%M"))  # to_char's HH: 01–12
    q["q11"] = sessions(pw, bid)
    q["q14"] = bid_times(pw, bid)
    q["q15"], q["q16"], q["q17"] = (daily(pw, bid, keys) for keys in ((), ("channel",),
                                                                     ("auction",)))
    q["q18"] = last_bids(pw, bid)
    q["q20"] = bid.join(tens, bid.auction == tens.a_id).select(
        bid.auction, bid.bidder, bid.price, bid.channel, bid.url, bid_time=bid.date_time,
        extra=bid.extra, item_name=tens.item_name, description=tens.description,
        initial_bid=tens.initial_bid, reserve=tens.reserve, date_time=tens.date_time,
        expires=tens.expires, seller=tens.seller, category=tens.category,
        auction_extra=tens.extra)
    q["q21"] = channels(pw, bid)
    q["q22"] = bid.select(this.auction, this.bidder, this.price, this.channel,
                          dirs=split_url(this.url)).select(
        this.auction, this.bidder, this.price, this.channel, dir1=this.dirs[0],
        dir2=this.dirs[1], dir3=this.dirs[2])
    return q


def winning_bids(pw, auction, bid):
    """q4 and q9's join: the auction's bids while it runs (BETWEEN: both ends in)."""
    joined = auction.join(bid, auction.a_id == bid.auction).select(
        *auction, bid.auction, bid.bidder, bid.price, bid_date_time=bid.date_time,
        running=(bid.date_time >= auction.date_time) & (bid.date_time <= auction.expires))
    return joined.filter(pw.this.running).without(pw.this.running)


def hot_items(pw, bid):
    """q5: per hopping window, the auctions with the most bids (each bid is in the five
    windows starting at its time floored to 2 s, less 0, 2, …, 8 s)."""
    this = pw.this
    floor = this.date_time.dt.floor(HOP)
    starts = bid.select(this.auction, starttime=pw.make_tuple(
        *(floor - k * HOP for k in range(5)))).flatten(this.starttime)
    counts = starts.groupby(this.auction, this.starttime).reduce(
        this.auction, this.starttime, num=pw.reducers.count())
    most = counts.groupby(this.starttime).reduce(this.starttime, maxn=pw.reducers.max(this.num))
    return counts.join(most, counts.starttime == most.starttime).filter(
        pw.left.num >= pw.right.maxn).select(counts.auction, counts.num, counts.starttime)


def new_sellers(pw, person, auction):
    """q8: persons who opened auctions in the 10-second window they joined in."""
    this = pw.this
    persons = person.select(this.p_id, this.name, starttime=this.date_time.dt.floor(WINDOW))
    persons = persons.groupby(this.p_id, this.name, this.starttime).reduce(
        this.p_id, this.name, this.starttime)
    sellers = auction.select(this.seller, starttime=this.date_time.dt.floor(WINDOW))
    sellers = sellers.groupby(this.seller, this.starttime).reduce(this.seller, this.starttime)
    return persons.join(sellers, persons.p_id == sellers.seller,
                        persons.starttime == sellers.starttime).select(
        persons.p_id, persons.name, persons.starttime)


def winners(pw, auction, bid):
    """q9: each auction with its first highest bid while it ran (row_number() … <= 1 by
    price DESC, date_time: bids' times are unique, so one row per auction)."""
    this = pw.this
    bids = winning_bids(pw, auction, bid)
    best = bids.groupby(this.a_id).reduce(this.a_id, top=pw.reducers.max(this.price))
    best = bids.join(best, bids.a_id == best.a_id, bids.price == best.top).select(*bids)
    first = best.groupby(this.a_id).reduce(this.a_id, at=pw.reducers.min(this.bid_date_time))
    return best.join(first, best.a_id == first.a_id, best.bid_date_time == first.at).select(
        best.a_id, best.item_name, best.description, best.initial_bid, best.reserve,
        best.date_time, best.expires, best.seller, best.category, best.auction, best.bidder,
        best.price, best.bid_date_time)


def sessions(pw, bid):
    """q11: a bidder's bids with no gap over 10 s. Pathway's session windows join
    neighbours when b - a < max_gap, the SQL when b - a <= 10 s: max_gap is 10 s + 1 µs,
    exact for PostgreSQL's microsecond timestamps."""
    this = pw.this
    return bid.windowby(this.date_time, instance=this.bidder, window=pw.temporal.session(
        max_gap=WINDOW + dt.timedelta(microseconds=1))).reduce(
        bidder=this._pw_instance, bid_count=pw.reducers.count(),
        starttime=pw.reducers.min(this.date_time),
        endtime=pw.reducers.max(this.date_time) + WINDOW)


def bid_times(pw, bid):
    """q14: 0.908 * price between 1e6 and 5e7 (exclusive), tested as 908 * price between
    1e9 and 5e10 in integers: exactly the SQL's numeric comparison."""
    this = pw.this
    hour = this.date_time.dt.hour()
    kind = pw.if_else((hour >= 8) & (hour <= 18), "dayTime",
                      pw.if_else((hour <= 6) | (hour >= 20), "nightTime", "otherTime"))
    return bid.filter((908 * this.price > 10**9) & (908 * this.price < 5 * 10**10)).select(
        this.auction, this.bidder, price=0.908 * this.price, bid_time_type=kind,
        date_time=this.date_time, extra=this.extra)


RANKS = (("rank1", lambda price: price < 10_000),
         ("rank2", lambda price: (price >= 10_000) & (price < 1_000_000)),
         ("rank3", lambda price: price >= 1_000_000))


def daily(pw, bid, keys: tuple[str, ...]):
    """q15–q17: bids per day (and channel, or auction) in three price ranks; q15 and q16
    also count distinct bidders and auctions, overall and per rank: a bidder counts in a
    rank if any of its bids of the day is in it (count(DISTINCT …) FILTER (WHERE …))."""
    this = pw.this
    day = bid.with_columns(day=this.date_time.dt.strftime("%Y-%m-%d"),
                           **{rank: pw.if_else(test(this.price), 1, 0) for rank, test in RANKS})
    group = [day[key] for key in (*keys, "day")]
    extra = {}
    if keys == ("channel",):  # q16: the day's last minute with a bid
        extra["minute"] = pw.reducers.max(this.date_time.dt.strftime("%H:%M"))
    counts = day.groupby(*group).reduce(
        *group, **extra, total_bids=pw.reducers.count(),
        **{f"{rank}_bids": pw.reducers.sum(day[rank]) for rank, _ in RANKS},
        **({"min_price": pw.reducers.min(this.price), "max_price": pw.reducers.max(this.price),
            "avg_price": pw.reducers.avg(this.price), "sum_price": pw.reducers.sum(this.price)}
           if keys == ("auction",) else {}))
    if keys == ("auction",):
        return counts
    for who in ("bidder", "auction"):
        ones = day.groupby(*group, day[who]).reduce(
            *group, **{rank: pw.reducers.max(day[rank]) for rank, _ in RANKS})
        per = ones.groupby(*(ones[k] for k in (*keys, "day"))).reduce(
            *(ones[k] for k in (*keys, "day")), **{f"total_{who}s": pw.reducers.count()},
            **{f"{rank}_{who}s": pw.reducers.sum(ones[rank]) for rank, _ in RANKS})
        counts = counts.join(per, *(counts[k] == per[k] for k in (*keys, "day"))).select(
            *counts, *(per[c] for c in per.column_names() if c not in (*keys, "day")))
    return counts


def last_bids(pw, bid):
    """q18: each bidder's last bid on each auction (times are unique: one row each)."""
    this = pw.this
    last = bid.groupby(this.bidder, this.auction).reduce(
        this.bidder, this.auction, at=pw.reducers.max(this.date_time))
    return bid.join(last, bid.bidder == last.bidder, bid.auction == last.auction,
                    bid.date_time == last.at).select(*bid)


def channels(pw, bid):
    """q21: the channel's number, or the url's channel_id parameter."""
    this = pw.this
    lower = this.channel.str.lower()
    named = bid.select(this.auction, this.bidder, this.price, this.channel,
                       lower=lower, found=channel_id(this.url))
    known = (this.lower == "apple") | (this.lower == "google") | (this.lower == "facebook") \
        | (this.lower == "baidu")
    number = pw.if_else(this.lower == "apple", "0", pw.if_else(
        this.lower == "google", "1", pw.if_else(this.lower == "facebook", "2", pw.if_else(
            this.lower == "baidu", "3", this.found))))
    return named.filter(this.found.is_not_none() | known).select(
        this.auction, this.bidder, this.price, this.channel, channel_id=number)


def channel_id(url):
    import pathway as pw

    @pw.udf(deterministic=True)
    def found(url: str) -> str | None:  # substring(url FROM '…channel_id=([^&]*)')
        match = CHANNEL_ID.search(url)
        return match.group(1) if match else None

    return found(url)


def split_url(url):
    import pathway as pw

    @pw.udf(deterministic=True)
    def parts(url: str) -> tuple[str, str, str]:  # split_part(url, '/', 4), 5 and 6
        fields = url.split("/")
        return tuple(fields[i] if i < len(fields) else "" for i in (3, 4, 5))

    return parts(url)


# -- argus's side, and the report -----------------------------------------------------------


def run_pathway(args, sizes: list[int], queries: list[str]) -> tuple[dict, list[str]]:
    """Pathway's run in its virtualenv: its results, and the warnings it logged."""
    spec = {"history": args.history, "sizes": sizes, "batches": args.batches,
            "queries": queries}
    with tempfile.TemporaryDirectory(prefix="argus-pathway-") as work:
        out, log = Path(work, "out.json"), Path(work, "stderr")
        env = {**os.environ, "PATHWAY_THREADS": str(args.threads)}
        with open(log, "w") as stderr:
            done = subprocess.run([args.pathway_python, __file__, "--pathway-side",
                                   json.dumps(spec), str(out)], env=env, cwd=work,
                                  stdout=stderr, stderr=subprocess.STDOUT)
        text = log.read_text()
        if done.returncode:
            raise SystemExit(f"Pathway failed ({done.returncode}):\n{text[-5000:]}")
        warnings = [line for line in text.splitlines() if ("WARN" in line or "Error" in line)
                    and "Closing the data source" not in line]
        return json.loads(out.read_text()), warnings


def fresh_database(dsn: str | None) -> tuple[str, str]:
    """argus_pathway made anew: (its dsn, the postgres database's dsn to drop it)."""
    import psycopg
    from psycopg.conninfo import make_conninfo

    from argus import roles
    from argus.api import resolve_dsn

    admin = make_conninfo(resolve_dsn(dsn), dbname="postgres")
    roles.drop_database(admin, DATABASE)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {DATABASE}")
    return make_conninfo(admin, dbname=DATABASE), admin


def run_argus(db, args, sizes: list[int], queries: list[str]) -> dict:
    """The same history, queries and batches in argus: ms per batch (COPY + one cycle +
    every query's changes read, as Pathway's subscriptions receive theirs), ms of it
    copying, and seconds loading the history and registering the queries."""
    from argus.bench import workloads
    from argus.bench.runner import load
    from argus.bench.nexmark import QUERIES as SQL

    workload = workloads.nexmark(args.history, SEED)
    started = time.perf_counter()
    load(db, workload)
    for name in queries:
        db.register_query(name, SQL[name], force=True)
    load_s = time.perf_counter() - started
    db.conn.execute("ANALYZE")
    db.run()  # warm-up: this session compiles the network program once
    out = {"load_s": load_s, "times": {}, "copying": {}}
    for size in sizes:
        batches = [workload.batch(size) for _ in range(args.batches)]  # untimed
        db.conn.execute("CHECKPOINT")  # nobody else's dirty pages
        times = out["times"][str(size)] = []
        copying = out["copying"][str(size)] = []
        for batch in batches:
            started = time.perf_counter()
            for stream, rows in batch.items():
                db.insert(stream, rows)
            copied = time.perf_counter()
            db.run()
            for name in queries:  # delivered, as Pathway's subscriptions are
                db.new_results(name)
            times.append((time.perf_counter() - started) * 1000)
            copying.append((copied - started) * 1000)
    return out


def from_scratch(conn, name: str) -> list[tuple]:
    """The query's SQL over argus's stream histories."""
    from argus.bench.nexmark import QUERIES as SQL

    with conn.transaction():
        conn.execute("SET LOCAL search_path TO argus_streams, public")
        return conn.execute(SQL[name]).fetchall()


def same(left: list, right: list) -> bool:
    """Equal as multisets of rows; numbers within a relative 1e-9."""
    if len(left) != len(right):
        return False

    def key(row):
        return tuple((1, "") if v is None else (0, round(v, 6)) if isinstance(v, (int, float))
                     else (2, v) for v in row)

    for a, b in zip(sorted(left, key=key), sorted(right, key=key)):
        if len(a) != len(b):
            return False
        for x, y in zip(a, b):
            if isinstance(x, (int, float)) and isinstance(y, (int, float)):
                if not math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-9):
                    return False
            elif x != y:
                return False
    return True


def median(times: list[float]) -> float:
    """The median batch, the first left out (warm-up) when there are others."""
    return statistics.median(times[1:] if len(times) > 1 else times)


def report(args, sizes, queries, pathway: dict, warnings: list[str], ours: dict,
           equal: dict, server: str) -> None:
    import argus

    n, argus_times = args.batches, ours["times"]
    print(f"# Nexmark: argus vs Pathway\n\nH = {args.history:,} events of history, "
          f"N = {n} batches of B events, seed {SEED}; argus {argus.__version__} on {server}, "
          f"Pathway {pathway['version']} with PATHWAY_THREADS={pathway['threads']}; "
          f"one system at a time.\n")
    print(f"queries ({len(queries)}): {', '.join(queries)}\n")
    print("left out: " + "; ".join(f"{q}: {why}" for q, why in LEFT_OUT.items()) + "\n")
    print("| B (events per batch) | argus ms | Pathway ms | ratio (Pathway / argus) |")
    print("|---:|---:|---:|---:|")
    for size in sizes:
        a, p = median(argus_times[str(size)]), median(pathway["times"][str(size)])
        print(f"| {size:,} | {a:,.1f} | {p:,.1f} | {p / a:,.2f}× |")
    counted = {1: "the only batch", 2: "batch 2"}.get(n, f"batches 2–{n}")
    print(f"\nmedian of {counted} of each size (the first is warm-up, not counted when "
          "there are others); argus: COPY + one cycle + every query's changes read; "
          "Pathway: first event pushed → every subscription's on_time_end for the batch.")
    for size in map(str, sizes):
        print(f"- B = {int(size):,}, every batch, ms: argus "
              f"{', '.join(f'{t:.1f}' for t in argus_times[size])}; Pathway "
              f"{', '.join(f'{t:.1f}' for t in pathway['times'][size])}; of which "
              f"argus's COPY {median(ours['copying'][size]):.1f} (median), Pathway pushing "
              f"the events into its connector {median(pathway['pushing'][size]):.1f}")
    print(f"- history: argus {ours['load_s']:.1f} s (load + registering the queries), "
          f"Pathway {pathway['load_s']:.1f} s (pushed and computed)")
    print("\n| query | rows | Pathway = argus | argus = PostgreSQL from scratch |")
    print("|---|---:|:---:|:---:|")
    for name in queries:
        rows, with_argus, with_scratch = equal[name]
        print(f"| {name} | {rows:,} | {'yes' if with_argus else 'NO'} | "
              f"{'yes' if with_scratch else 'NO'} |")
    every = all(a and s for _, a, s in equal.values())
    print(f"\nall answers equal: {'yes' if every else 'NO'}")
    if pathway["untimed"]:
        print(f"\nwarning: {pathway['untimed']} Pathway output times without a batch's tick "
              f"(a batch split over several times: its time may be short)")
    for line in warnings:
        print(f"Pathway: {line}")


def main() -> None:
    from argus.bench.common import arguments

    import argus

    args = arguments(__doc__, history=100_000, batch="5000", batches=5,
                     queries=",".join(QUERIES), pathway_python="/tmp/pwvenv/bin/python",
                     threads=2)
    sizes = [int(s) for s in args.batch.split(",")]
    queries = [q.strip() for q in args.queries.split(",") if q.strip()]
    unknown = sorted(set(queries) - set(QUERIES))
    if unknown:
        raise SystemExit(f"no Pathway version of {', '.join(unknown)}")
    pathway, warnings = run_pathway(args, sizes, queries)
    dsn, admin = fresh_database(args.dsn)
    try:
        with argus.connect(dsn) as db:
            server = f"PostgreSQL {db.conn.info.server_version // 10000}"
            ours = run_argus(db, args, sizes, queries)
            equal = {}
            for name in queries:
                answer = [[plain(v) for v in row] for row in db.results(name)]
                scratch = [[plain(v) for v in row] for row in from_scratch(db.conn, name)]
                equal[name] = (len(answer), same(pathway["answers"][name], answer),
                               same(answer, scratch))
    finally:
        from argus import roles

        roles.drop_database(admin, DATABASE)
    report(args, sizes, queries, pathway, warnings, ours, equal, server)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--pathway-side"]:
        pathway_side(json.loads(sys.argv[2]), sys.argv[3])
    else:
        main()
