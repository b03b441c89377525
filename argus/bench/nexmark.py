"""The Nexmark benchmark (Tucker et al., as Apache Beam, Flink and RisingWave run it):
an online auction's persons, auctions and bids, and its queries translated to
PostgreSQL — a streaming workload argus did not write.

The generator follows Beam's NexmarkGenerator model: of every 50 events 1 is a new
person, 3 are new auctions and 46 are bids; sellers and bidders are mostly recent
persons, bids mostly go to recent ("hot") auctions, prices are log-uniform, auctions
run for a random time; event time advances `step` per event. Deterministic for a seed.

QUERIES keeps the numbered queries whose SQL argus maintains: all but q12, which counts
bids in windows of processing time (the wall clock when a row is processed), which no
from-scratch run can reproduce, and q13, a lookup of each bid in a side table (a join
like any other, but the generator has no side table). TUMBLE(…, 10 seconds) is written
as the window's start computed from the event time; HOP as a LATERAL generate_series of
the window starts holding the event; SESSION (q11) as LAG marking a gap and a running
sum of the marks numbering each bidder's sessions; q6's "GROUP BY A.id, A.seller" with
B.date_time (invalid in PostgreSQL) as each auction's winning price ordered by its
expiry; DATE_FORMAT as to_char. q19's top 10 bids of an auction break ties in price by
time and bidder, so that its answer is one answer.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Iterator

COLUMNS = {
    "person": {"id": "bigint NOT NULL", "name": "text", "email_address": "text",
               "credit_card": "text", "city": "text", "state": "text",
               "date_time": "timestamp NOT NULL", "extra": "text"},
    "auction": {"id": "bigint NOT NULL", "item_name": "text", "description": "text",
                "initial_bid": "bigint", "reserve": "bigint", "date_time": "timestamp NOT NULL",
                "expires": "timestamp", "seller": "bigint", "category": "bigint",
                "extra": "text"},
    "bid": {"auction": "bigint NOT NULL", "bidder": "bigint NOT NULL", "price": "bigint",
            "channel": "text", "url": "text", "date_time": "timestamp NOT NULL",
            "extra": "text"},
}

START = dt.datetime(2015, 7, 15)
FIRST_ID = 1000
FIRST_NAMES = ["Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah",
               "Deiter", "Walter"]
LAST_NAMES = ["Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones",
              "Noris"]
STATES = ["az", "ca", "id", "or", "wa", "wy"]
CITIES = ["Phoenix", "Los Angeles", "San Francisco", "Boise", "Portland", "Bend", "Redmond",
          "Seattle", "Kent", "Cheyenne"]
CHANNELS = ["Google", "Facebook", "Baidu", "Apple"]
HOT_RATIO = 4  # 1 in HOT_RATIO bids goes to a random auction, the rest to the hottest
RECENT = 100  # sellers and bidders are among the last RECENT persons

# TUMBLE(…, date_time, INTERVAL '10' SECOND)'s window start
WINDOW = ("to_timestamp(floor(extract(epoch FROM {t}) / 10) * 10)"
          " AT TIME ZONE 'UTC'")

# HOP(date_time, INTERVAL '2' SECOND, INTERVAL '10' SECOND): the starts of the five
# 10-second windows sliding by 2 seconds that hold the event, as a set-returning call
HOP = ("generate_series(to_timestamp(floor(extract(epoch FROM {t}) / 2) * 2 - 8)"
       " AT TIME ZONE 'UTC', to_timestamp(floor(extract(epoch FROM {t}) / 2) * 2)"
       " AT TIME ZONE 'UTC', interval '2 seconds')")

DAY = "to_char(date_time, 'YYYY-MM-DD')"  # DATE_FORMAT(date_time, 'yyyy-MM-dd')
# q15 and q16: bids, bidders and auctions per day (and channel), in three price ranks
_BIDDERS = ", ".join(
    f"count(DISTINCT {who}){rank} AS {label}_{who}s"
    for who in ("bidder", "auction")
    for label, rank in (("total", ""), ("rank1", " FILTER (WHERE price < 10000)"),
                        ("rank2", " FILTER (WHERE price >= 10000 AND price < 1000000)"),
                        ("rank3", " FILTER (WHERE price >= 1000000)")))

QUERIES = {
    "q0": "SELECT auction, bidder, price, date_time FROM bid",
    "q1": "SELECT auction, bidder, 0.908 * price AS price, date_time FROM bid",
    "q2": "SELECT auction, price FROM bid WHERE auction % 123 = 0",
    "q3": """SELECT p.name, p.city, p.state, a.id
               FROM auction a JOIN person p ON a.seller = p.id
              WHERE a.category = 10 AND (p.state = 'or' OR p.state = 'id' OR p.state = 'ca')""",
    "q4": """SELECT q.category, avg(q.final) AS avg
               FROM (SELECT max(b.price) AS final, a.category
                       FROM auction a, bid b
                      WHERE a.id = b.auction AND b.date_time BETWEEN a.date_time AND a.expires
                      GROUP BY a.id, a.category) q
              GROUP BY q.category""",
    # hot items: the auctions with the most bids in each hopping window
    "q5": f"""SELECT ab.auction, ab.num, ab.starttime
                FROM (SELECT b.auction, count(*) AS num, w.starttime
                        FROM bid b CROSS JOIN LATERAL {HOP.format(t="b.date_time")} AS w(starttime)
                       GROUP BY b.auction, w.starttime) ab
                JOIN (SELECT max(c.num) AS maxn, c.starttime
                        FROM (SELECT count(*) AS num, w.starttime
                                FROM bid b CROSS JOIN LATERAL {HOP.format(t="b.date_time")}
                                     AS w(starttime)
                               GROUP BY b.auction, w.starttime) c
                       GROUP BY c.starttime) mb
                  ON ab.starttime = mb.starttime AND ab.num >= mb.maxn""",
    # average selling price by seller: over each seller's last 11 auctions (Flink's
    # ROWS BETWEEN 10 PRECEDING AND CURRENT ROW), by when they close
    "q6": """SELECT q.seller, q.id, avg(q.final) OVER (PARTITION BY q.seller
                    ORDER BY q.expires, q.id ROWS BETWEEN 10 PRECEDING AND CURRENT ROW) AS avg
               FROM (SELECT a.id, a.seller, a.expires, max(b.price) AS final
                       FROM auction a JOIN bid b ON a.id = b.auction
                        AND b.date_time BETWEEN a.date_time AND a.expires
                      GROUP BY a.id, a.seller, a.expires) q""",
    "q7": f"""SELECT b.auction, b.price, b.bidder, b.date_time
                FROM bid b JOIN (SELECT max(price) AS maxprice,
                                        {WINDOW.format(t="date_time")} AS window_start
                                   FROM bid GROUP BY 2) b1
                  ON b.price = b1.maxprice
                 AND {WINDOW.format(t="b.date_time")} = b1.window_start""",
    "q8": f"""SELECT p.id, p.name, p.starttime
                FROM (SELECT id, name, {WINDOW.format(t="date_time")} AS starttime
                        FROM person GROUP BY id, name, 3) p
                JOIN (SELECT seller, {WINDOW.format(t="date_time")} AS starttime
                        FROM auction GROUP BY seller, 2) a
                  ON p.id = a.seller AND p.starttime = a.starttime""",
    "q9": """SELECT id, item_name, description, initial_bid, reserve, date_time, expires,
                    seller, category, auction, bidder, price, bid_date_time
               FROM (SELECT a.id, a.item_name, a.description, a.initial_bid, a.reserve,
                            a.date_time, a.expires, a.seller, a.category, a.extra,
                            b.auction, b.bidder, b.price, b.date_time AS bid_date_time,
                            row_number() OVER (PARTITION BY a.id
                                               ORDER BY b.price DESC, b.date_time) AS rownum
                       FROM auction a, bid b
                      WHERE a.id = b.auction AND b.date_time BETWEEN a.date_time AND a.expires
                    ) q
              WHERE rownum <= 1""",
    "q10": """SELECT auction, bidder, price, date_time, to_char(date_time, 'YYYY-MM-DD') AS date,
                     to_char(date_time, 'HH:MI') AS time
                FROM bid""",
    # user sessions: a bidder's bids with no gap of more than 10 seconds
    "q11": """SELECT s.bidder, count(*) AS bid_count, min(s.date_time) AS starttime,
                     max(s.date_time) + interval '10 seconds' AS endtime
                FROM (SELECT g.bidder, g.date_time, sum(g.gap) OVER (PARTITION BY g.bidder
                             ORDER BY g.date_time ROWS UNBOUNDED PRECEDING) AS session
                        FROM (SELECT bidder, date_time,
                                     CASE WHEN date_time - lag(date_time) OVER (PARTITION BY bidder
                                               ORDER BY date_time) <= interval '10 seconds'
                                          THEN 0 ELSE 1 END AS gap
                                FROM bid) g) s
               GROUP BY s.bidder, s.session""",
    "q14": """SELECT auction, bidder, 0.908 * price AS price,
                     CASE WHEN extract(hour FROM date_time) BETWEEN 8 AND 18 THEN 'dayTime'
                          WHEN extract(hour FROM date_time) <= 6
                            OR extract(hour FROM date_time) >= 20 THEN 'nightTime'
                          ELSE 'otherTime' END AS bid_time_type,
                     date_time, extra
                FROM bid WHERE 0.908 * price > 1000000 AND 0.908 * price < 50000000""",
    **{name: f"""SELECT {keys}{DAY} AS day, {extra}count(*) AS total_bids,
                     count(*) FILTER (WHERE price < 10000) AS rank1_bids,
                     count(*) FILTER (WHERE price >= 10000 AND price < 1000000) AS rank2_bids,
                     count(*) FILTER (WHERE price >= 1000000) AS rank3_bids,
                     {tail}
                FROM bid GROUP BY {keys}{DAY}"""
       for name, keys, extra, tail in (
           ("q15", "", "", _BIDDERS),
           ("q16", "channel, ",
            "max(to_char(date_time, 'HH24:MI')) AS minute, ", _BIDDERS),
           ("q17", "auction, ", "",
            "min(price) AS min_price, max(price) AS max_price, avg(price) AS avg_price, "
            "sum(price) AS sum_price"))},
    "q18": """SELECT auction, bidder, price, channel, url, date_time, extra
                FROM (SELECT *, row_number() OVER (PARTITION BY bidder, auction
                                                   ORDER BY date_time DESC) AS rank_number
                        FROM bid) b
               WHERE rank_number <= 1""",
    "q19": """SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY auction
                                                ORDER BY price DESC, date_time, bidder)
                                 AS rank_number
                           FROM bid) b
               WHERE rank_number <= 10""",
    "q20": """SELECT auction, bidder, price, channel, url, b.date_time AS bid_time, b.extra,
                     item_name, description, initial_bid, reserve, a.date_time, expires,
                     seller, category, a.extra AS auction_extra
                FROM bid b JOIN auction a ON b.auction = a.id
               WHERE a.category = 10""",
    "q21": """SELECT auction, bidder, price, channel,
                     CASE WHEN lower(channel) = 'apple' THEN '0'
                          WHEN lower(channel) = 'google' THEN '1'
                          WHEN lower(channel) = 'facebook' THEN '2'
                          WHEN lower(channel) = 'baidu' THEN '3'
                          ELSE substring(url FROM '(?:&|^|\\?)channel_id=([^&]*)') END
                       AS channel_id
                FROM bid
               WHERE substring(url FROM '(?:&|^|\\?)channel_id=([^&]*)') IS NOT NULL
                  OR lower(channel) IN ('apple', 'google', 'facebook', 'baidu')""",
    "q22": """SELECT auction, bidder, price, channel, split_part(url, '/', 4) AS dir1,
                     split_part(url, '/', 5) AS dir2, split_part(url, '/', 6) AS dir3
                FROM bid""",
}


class NexmarkGenerator:
    def __init__(self, seed: int = 1, step: dt.timedelta = dt.timedelta(milliseconds=10)
                 ) -> None:
        self.rng = random.Random(seed)
        self.step = step
        self.event = 0
        self.persons = 0
        self.auctions = 0

    def batch(self, n: int) -> dict[str, list[tuple]]:
        """The next `n` events, by stream."""
        out: dict[str, list[tuple]] = {name: [] for name in COLUMNS}
        for _ in range(n):
            kind, row = next(self._events)
            out[kind].append(row)
        return out

    @property
    def _events(self) -> Iterator[tuple[str, tuple]]:
        if not hasattr(self, "_iter"):
            self._iter = self._generate()
        return self._iter

    def _generate(self) -> Iterator[tuple[str, tuple]]:
        while True:
            at = START + self.event * self.step
            slot = self.event % 50
            self.event += 1
            if slot == 0 or self.persons == 0:
                yield "person", self._person(at)
            elif slot <= 3 or self.auctions == 0:
                yield "auction", self._auction(at)
            else:
                yield "bid", self._bid(at)

    def _text(self, size: int) -> str:
        return "".join(self.rng.choice("abcdefghijklmnopqrstuvwxyz ") for _ in range(size))

    def _price(self) -> int:
        return round(10 ** (self.rng.random() * 6) * 100)

    def _recent_person(self) -> int:
        return FIRST_ID + max(0, self.persons - 1 - self.rng.randrange(min(RECENT, self.persons)))

    def _person(self, at: dt.datetime) -> tuple:
        rng = self.rng
        pid = FIRST_ID + self.persons
        self.persons += 1
        name = f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}"
        return (pid, name, f"{name.replace(' ', '')}@{self._text(5).strip() or 'x'}.com",
                " ".join(f"{rng.randrange(10000):04d}" for _ in range(4)),
                rng.choice(CITIES), rng.choice(STATES), at, self._text(10))

    def _auction(self, at: dt.datetime) -> tuple:
        rng = self.rng
        aid = FIRST_ID + self.auctions
        self.auctions += 1
        initial = self._price()
        expires = at + dt.timedelta(seconds=rng.randint(2, 120))
        return (aid, self._text(20), self._text(100), initial, initial + self._price(), at,
                expires, self._recent_person(), 10 + rng.randrange(5), self._text(10))

    def _bid(self, at: dt.datetime) -> tuple:
        rng = self.rng
        if rng.randrange(HOT_RATIO):
            auction = FIRST_ID + max(0, self.auctions - 1 - rng.randrange(min(10, self.auctions)))
        else:
            auction = FIRST_ID + rng.randrange(self.auctions)
        if rng.random() < 0.1:
            channel = f"channel-{rng.randrange(10000)}"
            url = (f"https://www.nexmark.com/{self._text(5).strip() or 'a'}/"
                   f"{self._text(5).strip() or 'b'}/{self._text(5).strip() or 'c'}/item.htm"
                   f"?query=1&channel_id={rng.randrange(1 << 16)}")
        else:
            channel = rng.choice(CHANNELS)
            url = f"https://www.nexmark.com/{self._text(5).strip() or 'a'}/item.htm?query=1"
        return (auction, self._recent_person(), self._price(), channel, url, at,
                self._text(10))
