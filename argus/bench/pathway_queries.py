"""The Nexmark queries in Pathway's table API, each with argus.bench.nexmark's SQL
semantics and output columns in the SQL's order (names aside: `id` is Pathway's row key).
Run in Pathway's virtualenv by argus.bench.pathway_nexmark, which loads this file by its
path: it needs the standard library and Pathway (passed in as `pw`) only."""

from __future__ import annotations

import datetime as dt
import re

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
