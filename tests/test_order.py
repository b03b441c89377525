"""Join order by cost (argus.mqo.order): the chosen tree is the cheapest of every tree
over connected subsets, bushy ones included, and reuses shared nodes that are free."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from argus.mqo.order import EXHAUSTIVE, Estimates, Tree, best, join, leaf


def chain(rows: list[float], sels: list[float], share: float = 0.01) -> Estimates:
    """Instances 1..n, each linked to the next by an equality of selectivity sels[k]."""
    n = len(rows)
    return Estimates({i: rows[i - 1] for i in range(1, n + 1)},
                     {i: share * rows[i - 1] for i in range(1, n + 1)},
                     {frozenset({i, i + 1}): sels[i - 1] for i in range(1, n)},
                     frozenset(frozenset({i, i + 1}) for i in range(1, n)))


def linked(est: Estimates):
    def connected(subset: frozenset[int]) -> bool:
        seen, todo = set(), [min(subset)]
        while todo:
            i = todo.pop()
            seen.add(i)
            todo += [j for pair in est.links if i in pair and pair <= subset
                     for j in pair if j not in seen]
        return seen == set(subset)
    return connected


def every_tree(est: Estimates, subset: frozenset[int], connected, top: bool = True):
    """Every tree over `subset` whose joins link connected parts (no cross products)."""
    if len(subset) == 1:
        yield leaf(est, min(subset))
        return
    first, rest = min(subset), sorted(subset - {min(subset)})
    for k in range(len(rest)):
        for others in itertools.combinations(rest, k):
            one = frozenset({first, *others})
            two = subset - one
            if connected(one) and connected(two):
                for a in every_tree(est, one, connected, False):
                    for b in every_tree(est, two, connected, False):
                        yield join(est, a, b, top)


def test_the_selective_pair_first():
    # 1-2 is a fan-out of 100 rows per row, 2-3 keeps one row in a thousand
    est = chain([1000, 1000, 1000], [0.1, 1e-6])
    tree, alternatives = best(est, linked(est))
    assert tree.text() == "(i1 ⋈ (i2 ⋈ i3))"
    assert alternatives and all(a.cost >= tree.cost for a in alternatives)


def test_bushy_when_both_ends_are_selective():
    # the middle join multiplies; each end pair is small: (1 2)(3 4), not a left-deep tree
    est = chain([10, 1000, 1000, 10], [0.001, 0.01, 0.001])
    tree, _ = best(est, linked(est))
    assert tree.text() == "((i1 ⋈ i2) ⋈ (i3 ⋈ i4))"
    left_deep = join(est, join(est, join(est, leaf(est, 1), leaf(est, 2)), leaf(est, 3)),
                     leaf(est, 4), top=True)
    assert tree.cpu < left_deep.cpu


def test_a_shared_node_is_free_to_reuse():
    est = chain([1000, 1000, 1000], [1e-3, 1e-3])
    alone, _ = best(est, linked(est))
    tree, _ = best(est, linked(est), {frozenset({2, 3}): [("node 7", 1000.0)]})
    assert tree.text() == "(i1 ⋈ [i2 ⋈ i3])" and tree.right.cover == "node 7"
    assert tree.cpu == alone.cpu / 2 and tree.state == 0 < alone.state


def test_a_shared_node_with_many_new_rows_is_not_worth_probing_with():
    # 1 ⋈ 2 gains 2,000 rows a cycle; 2 ⋈ 3 0.02: building the latter is cheaper
    est = chain([1000, 1000, 1000], [0.1, 1e-6])
    tree, _ = best(est, linked(est), {frozenset({1, 2}): [("node 7", 100_000.0)]})
    assert tree.text() == "(i1 ⋈ (i2 ⋈ i3))"


def test_unlinked_instances_are_crossed_from_the_fewest_rows():
    est = Estimates({1: 100, 2: 5, 3: 1000}, {1: 1, 2: 1, 3: 10},
                    {frozenset({1, 3}): 0.001}, frozenset({frozenset({1, 3})}))
    tree, _ = best(est, linked(est))
    assert tree.subset == {1, 2, 3}
    assert tree.text() == "(i2 ⋈ (i1 ⋈ i3))"


def test_beyond_exhaustive_a_greedy_tree_without_cross_products():
    n = EXHAUSTIVE + 3
    est = chain([100.0 * (1 + k % 3) for k in range(n)], [0.01] * (n - 1))
    tree, _ = best(est, linked(est))
    assert tree.subset == frozenset(range(1, n + 1))
    assert all(linked(est)(t.left.subset | t.right.subset) for t in tree.joins())


def leaves(tree: Tree) -> list[int]:
    if tree.left is None:
        return sorted(tree.subset)
    return leaves(tree.left) + leaves(tree.right)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.floats(1, 1e5), min_size=2, max_size=5),
       st.lists(st.floats(1e-5, 1), min_size=4, max_size=4),
       st.lists(st.floats(0, 0.5), min_size=5, max_size=5),
       st.lists(st.tuples(st.integers(1, 5), st.integers(1, 5)), max_size=3))
def test_no_tree_is_cheaper(rows, sels, shares, extra):
    """Against brute force: the chosen tree costs no more than any tree over linked
    parts, and joins each instance once."""
    n = len(rows)
    links = {frozenset({i, i + 1}): sels[i - 1] for i in range(1, n)}
    for a, b in extra:  # cycles in the join graph
        if a != b and a <= n and b <= n:
            links.setdefault(frozenset({a, b}), sels[(a + b) % 4])
    est = Estimates({i: rows[i - 1] for i in range(1, n + 1)},
                    {i: shares[i - 1] * rows[i - 1] for i in range(1, n + 1)},
                    links, frozenset(links))
    connected = linked(est)
    tree, _ = best(est, connected)
    assert sorted(leaves(tree)) == list(range(1, n + 1))
    cheapest = min(t.cost for t in every_tree(est, frozenset(range(1, n + 1)), connected))
    assert tree.cost[0] <= cheapest[0] * (1 + 1e-9)
