"""Families of related continuous queries over the transfer stream (argus.bench.datagen), as
ARGUS's evaluation generated them: query seeds varied systematically, so that many
queries overlap — equal predicates written differently, thresholds that subsume one
another, self-join chains of 2 to 5 transfers with different day windows, aggregates
at different granularities with HAVING, unions. Deterministic for a given seed.
"""

from __future__ import annotations

import random

THRESHOLDS = (50_000, 100_000, 200_000, 500_000, 1_000_000)
WINDOWS = (5, 10, 20, 30)
GRANULARITIES = (("sender",), ("receiver",), ("sender", "receiver"), ("tran_date",),
                 ("sender", "tran_date"))
AGGREGATES = ("count(*)", "sum(amount)", "avg(amount)", "max(amount)", "min(amount)")


def _above(rng: random.Random, column: str, value: int) -> str:
    """`column > value` in one of the ways people write it."""
    return rng.choice([f"{column} > {value}", f"{value} < {column}",
                       f"{column} - {value} > 0", f"NOT ({column} <= {value})"])


def selection(rng: random.Random) -> str:
    columns = rng.choice(["tran_id, amount", "tran_id, sender, amount",
                          "tran_id, receiver, tran_date"])
    where = _above(rng, "amount", rng.choice(THRESHOLDS))
    if rng.random() < 0.3:
        where += f" AND tran_date >= DATE '2024-01-{rng.randint(1, 28):02d}'"
    return f"SELECT {columns} FROM transfers WHERE {where}"


def chain(rng: random.Random, length: int | None = None) -> str:
    """Transfers r1 → r2 → … where each next one is sent by the previous receiver,
    within a day window: a large first transfer followed by at least half of it each
    time, or (a quarter of them) chains that end in a large transfer, each earlier one
    at least half of the next."""
    k = length or rng.choice([2, 2, 3, 3, 4, 5])
    window = rng.choice(WINDOWS)
    aliases = [f"r{i}" for i in range(1, k + 1)]
    ends_large = rng.random() < 0.25
    where = [_above(rng, f"{aliases[-1] if ends_large else 'r1'}.amount",
                    rng.choice(THRESHOLDS[2:] if ends_large else THRESHOLDS[1:]))]
    for a, b in zip(aliases, aliases[1:]):
        where.append(rng.choice([f"{b}.sender = {a}.receiver", f"{a}.receiver = {b}.sender"]))
        where.append(f"{a}.amount >= {b}.amount * 0.5" if ends_large
                     else f"{b}.amount >= {a}.amount * 0.5")
        where.append(rng.choice([
            f"{b}.tran_date BETWEEN {a}.tran_date AND {a}.tran_date + {window}",
            f"{b}.tran_date >= {a}.tran_date AND {b}.tran_date - {a}.tran_date <= {window}"]))
    rng.shuffle(where)
    order = list(aliases)
    if rng.random() < 0.3:
        rng.shuffle(order)  # FROM in another order: the same join
    outputs = ", ".join(f"{a}.tran_id AS {a}_id" for a in aliases[:: max(1, k - 1)])
    return (f"SELECT {outputs} FROM " + ", ".join(f"transfers {a}" for a in order)
            + " WHERE " + " AND ".join(where))


def aggregate(rng: random.Random) -> str:
    groups = rng.choice(GRANULARITIES)
    aggs = rng.sample(AGGREGATES, rng.randint(1, 3))
    where = f" WHERE {_above(rng, 'amount', rng.choice(THRESHOLDS[:2]))}" \
        if rng.random() < 0.3 else ""
    having = rng.choice(["", " HAVING count(*) > 2", " HAVING count(*) > 5",
                         f" HAVING sum(amount) > {rng.choice(THRESHOLDS)}"])
    keys = ", ".join(groups)
    outputs = ", ".join([keys] + [f"{a} AS a{i}" for i, a in enumerate(aggs)])
    return f"SELECT {outputs} FROM transfers{where} GROUP BY {keys}{having}"


def union(rng: random.Random) -> str:
    high, low = rng.choice(THRESHOLDS[2:]), rng.choice([100, 1000])
    sides = [f"SELECT tran_id, sender FROM transfers WHERE amount > {high}",
             f"SELECT tran_id, sender FROM transfers WHERE amount < {low}"]
    rng.shuffle(sides)
    return rng.choice([" UNION ", " UNION ALL "]).join(sides)


def loose_chain(rng: random.Random) -> str:
    """A 3-transfer chain with no amount rule between its transfers and a low threshold:
    an answer that grows by tens of thousands of rows per thousand transfers, far larger
    than its inputs (the layout optimizer's hard case, issue 20)."""
    window = rng.choice((10, 20))
    where = [_above(rng, "r1.amount", rng.choice((100, 1000))),
             "r1.receiver = r2.sender", "r2.receiver = r3.sender",
             f"r2.tran_date BETWEEN r1.tran_date AND r1.tran_date + {window}",
             f"r3.tran_date BETWEEN r2.tran_date AND r2.tran_date + {window}"]
    rng.shuffle(where)
    outputs = rng.choice(["r1.tran_id AS r1_id, r3.tran_id AS r3_id",
                          "r1.tran_id AS r1_id, r2.tran_id AS r2_id, r3.amount"])
    return (f"SELECT {outputs} FROM transfers r1, transfers r2, transfers r3 WHERE "
            + " AND ".join(where))


FAMILIES = ((selection, 0.30), (chain, 0.45), (aggregate, 0.20), (union, 0.05))


def transfer_queries(n: int, seed: int = 1, loose: int = 0) -> list[tuple[str, str]]:
    """n (name, SQL) pairs drawn from the families, then `loose` loose chains."""
    rng = random.Random(seed)
    makers, weights = zip(*FAMILIES)
    out = []
    for i in range(n):
        make = rng.choices(makers, weights)[0]
        out.append((f"{make.__name__}_{i:04d}", make(rng)))
    return out + [(f"loose_chain_{i:02d}", loose_chain(rng)) for i in range(loose)]
