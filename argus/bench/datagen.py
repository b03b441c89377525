"""A FedWire-like transfer stream for the demo, the tests and the benchmarks.

Accounts send lognormally distributed amounts; a share of large transfers is followed,
within days, by a transfer of at least half the amount from the receiver to a third
party (the chains ARGUS's example queries look for). Deterministic for a given seed.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Iterator
from decimal import Decimal

TRANSFER_COLUMNS = {
    "tran_id": "bigint NOT NULL",
    "tran_date": "date NOT NULL",
    "sender": "text NOT NULL",
    "receiver": "text NOT NULL",
    "amount": "numeric(14,2) NOT NULL",
}

START = dt.date(2024, 1, 1)


class TransferGenerator:
    def __init__(self, seed: int = 42, accounts: int = 2000, per_day: int = 1000,
                 chain_share: float = 0.05) -> None:
        self.rng = random.Random(seed)
        self.accounts = [f"acct{i:05d}" for i in range(accounts)]
        self.per_day = per_day
        self.chain_share = chain_share
        self.next_id = 1
        self.pending: list[tuple[dt.date, str, Decimal]] = []  # follow-ups to emit later

    def _amount(self) -> Decimal:
        return Decimal(str(round(min(self.rng.lognormvariate(8.0, 2.2), 9e11), 2)))

    def batch(self, n: int) -> list[tuple]:
        return [next(self._rows) for _ in range(n)]

    @property
    def _rows(self) -> Iterator[tuple]:
        if not hasattr(self, "_iter"):
            self._iter = self._generate()
        return self._iter

    def _generate(self) -> Iterator[tuple]:
        rng = self.rng
        while True:
            day = START + dt.timedelta(days=(self.next_id - 1) // self.per_day)
            due = [p for p in self.pending if p[0] <= day]
            if due and rng.random() < 0.5:
                self.pending.remove(due[0])
                _, sender, amount = due[0]
                receiver = rng.choice(self.accounts)
                amount = (amount * Decimal(str(round(rng.uniform(0.5, 1.0), 3)))).quantize(
                    Decimal("0.01"))
            else:
                sender, receiver = rng.sample(self.accounts, 2)
                amount = self._amount()
                if amount > 100000 and rng.random() < self.chain_share * 10:
                    follow = day + dt.timedelta(days=rng.randint(1, 25))
                    self.pending.append((follow, receiver, amount))
            row = (self.next_id, day, sender, receiver, amount)
            self.next_id += 1
            yield row
