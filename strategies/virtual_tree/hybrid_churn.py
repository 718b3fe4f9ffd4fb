"""Flow-rule updates of the hybrid strategy under subscriber replacement (Fig. 4.8).

A publisher's subscribers are split into stable (reached by the stored tree
T') and dynamic (reached by hop labels) ones. Subscribers are then replaced
one by one; a replaced subscriber's role is inherited by its replacement,
drawn uniformly from the current non-subscribers (publisher excluded). Which
original subscriber is replaced next is the policy:

- ``HEAD``: dynamic subscribers first (best case: no tree update until the
  dynamic share is gone);
- ``RULE``: stable subscribers first (worst case: every change updates T');
- ``RAND``: a fair coin picks the category (dynamic or stable; the other one
  when it is exhausted), then a uniform pick within it, as the text says
  ("equal probability of replacing either a dynamic or a static
  subscriber"); ``rand_mode="uniform"`` picks uniformly over all remaining
  original subscribers instead.

Only stable replacements change T'; hop, stop and helper rules are per port
and never change. The count at p% replaced is the size of
:func:`sim.dataplanes.control_state.diff` between the T' rule state before the churn and
after it (``updates``: INSERT + MODIFY + DELETE of ``check_tree`` entries,
digest §7.15); ``writes`` is the running sum of the diffs of each single
replacement (what a controller that applies every change at once writes).

References
----------
Seed 000 §4.4.3 (Fig. 4.8, hybrid 30:70, HEAD / RULE / RAND); digest ch. 1-4
§5.3, §7.15.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

import numpy as np

from sim.dataplanes.control_state import ControlState, StateBuilder, diff
from sim.dataplanes.virtual_tree.codec import LabelFormat
from strategies.virtual_tree.hybrid import install_stable_tree
from strategies.virtual_tree.labels import round_half_up
from topologies.model import Topology
from topologies.registry import check

DEFAULT_FORMAT = LabelFormat()
Policy = Literal["HEAD", "RULE", "RAND"]
RandMode = Literal["coin", "uniform"]


@dataclass(frozen=True, slots=True)
class ChurnCurve:
    """Rule updates of T' after 0, 10, ..., 100% of the subscribers were replaced.

    Attributes
    ----------
    percent : tuple of int
        Share of the original subscribers replaced so far.
    replaced : tuple of int
        Number of subscribers replaced so far.
    updates : tuple of int
        ``len(diff(T'_before, T'_after))`` at each step.
    writes : tuple of int
        Running sum of the per-replacement diffs.
    stable_replaced : tuple of int
        How many of the replaced subscribers were stable ones.
    """

    percent: tuple[int, ...]
    replaced: tuple[int, ...]
    updates: tuple[int, ...]
    writes: tuple[int, ...]
    stable_replaced: tuple[int, ...]


def stored_tree_state(topology: Topology, publisher: str, stable: Iterable[str],
                      fmt: LabelFormat = DEFAULT_FORMAT) -> ControlState:
    """The ``check_tree`` rules of the publisher's T' (tree id ``host_id + 1``)."""
    builder = StateBuilder()
    install_stable_tree(builder, topology, publisher, frozenset(stable),
                        topology.host_id(publisher) + 1, fmt)
    return builder.build(topology.switches)


def churn_updates(topology: Topology, publisher: str, subscribers: Iterable[str], *,
                  policy: Policy, rng: np.random.Generator, tree_percent: int = 70,
                  rand_mode: RandMode = "coin", step_percent: int = 10,
                  fmt: LabelFormat = DEFAULT_FORMAT) -> ChurnCurve:
    """Replace the subscribers step by step and count the T' rule updates.

    Parameters
    ----------
    topology : Topology
        The network.
    publisher : str
        The publisher host.
    subscribers : iterable of str
        Its subscribers (the publisher excluded); ``round(tree_percent% x n)``
        of them, drawn with ``rng``, are stable.
    policy : {"HEAD", "RULE", "RAND"}
        Which subscriber is replaced next.
    rng : numpy.random.Generator
        All random choices (stable split, picks, replacements).
    tree_percent : int
        Stable share in percent (70 for the thesis's 30:70 hybrid).
    rand_mode : {"coin", "uniform"}
        ``RAND`` variant (see the module docstring).
    step_percent : int
        Step of the replaced share (10 gives 0, 10, ..., 100%).

    Returns
    -------
    ChurnCurve

    Raises
    ------
    SpecError
        On an unknown policy, a bad percentage, an empty subscriber set, or
        when no non-subscriber is left to be a replacement.
    """
    check(policy in ("HEAD", "RULE", "RAND"), f"policy must be HEAD, RULE or RAND; got {policy!r}")
    check(rand_mode in ("coin", "uniform"), f"rand_mode must be coin or uniform; got {rand_mode!r}")
    check(0 <= tree_percent <= 100, f"tree_percent must be in 0..100, got {tree_percent}")
    check(0 < step_percent <= 100 and 100 % step_percent == 0,
          f"step_percent must divide 100, got {step_percent}")
    subs, stable, steps = draw_replacements(topology, publisher, subscribers, policy=policy,
                                            rng=rng, tree_percent=tree_percent,
                                            rand_mode=rand_mode)
    n = len(subs)
    initial = previous = stored_tree_state(topology, publisher, stable, fmt)
    percents = tuple(range(0, 101, step_percent))
    marks = [round_half_up(p * n, 100) for p in percents]
    updates, writes, stable_done = [0], [0], [0]
    total = replaced_stable = 0
    current_stable = set(stable)
    for done, (victim, new, is_stable) in enumerate(steps, start=1):
        if is_stable:
            replaced_stable += 1
            current_stable.remove(victim)
            current_stable.add(new)
            state = stored_tree_state(topology, publisher, current_stable, fmt)
            total += len(diff(previous, state))
            previous = state
        while len(updates) < len(marks) and marks[len(updates)] == done:
            updates.append(len(diff(initial, previous)))
            writes.append(total)
            stable_done.append(replaced_stable)
    return ChurnCurve(percents, tuple(marks), tuple(updates), tuple(writes), tuple(stable_done))


def draw_replacements(topology: Topology, publisher: str, subscribers: Iterable[str], *,
                      policy: Policy, rng: np.random.Generator, tree_percent: int = 70,
                      rand_mode: RandMode = "coin"
                      ) -> tuple[tuple[str, ...], frozenset[str],
                                 tuple[tuple[str, str, bool], ...]]:
    """Draw the stable split and the order in which every subscriber is replaced.

    The draws are, in this order: the ``round(tree_percent% x n)`` stable
    subscribers, then per replacement the category (policy), the victim
    (uniform within the category) and its replacement (uniform over the
    current non-subscribers, publisher excluded), which inherits the
    victim's role. :func:`churn_updates` and the ``replacement`` receiver
    model (:mod:`sim.workloads.replacement`) both replay this sequence, so
    the same generator gives the same replacements in both.

    Parameters
    ----------
    topology : Topology
        The network (its host order is the order of the draws).
    publisher : str
        The publisher host, never a replacement.
    subscribers : iterable of str
        The original subscribers (publisher excluded).
    policy : {"HEAD", "RULE", "RAND"}
        Which subscriber is replaced next (see the module docstring).
    rng : numpy.random.Generator
        All random choices.
    tree_percent : int
        Stable share in percent (70 for the thesis's 30:70 hybrid).
    rand_mode : {"coin", "uniform"}
        ``RAND`` variant.

    Returns
    -------
    subscribers : tuple of str
        The original subscribers, in host-id order.
    stable : frozenset of str
        The original stable subscribers.
    steps : tuple of (str, str, bool)
        ``(victim, replacement, victim was stable)``, one per original
        subscriber, in replacement order.

    Raises
    ------
    SpecError
        On an empty subscriber set, a subscribing publisher, or when no
        non-subscriber is left to be a replacement.

    References
    ----------
    Seed 000 §4.4.3 (Fig. 4.8, HEAD / RULE / RAND); digest ch. 1-4 §7.15.
    """
    subs = sorted(set(subscribers), key=topology.host_id)
    check(bool(subs), "subscriber replacement needs at least one subscriber")
    check(publisher not in subs, f"subscribers must not include the publisher {publisher}")
    n = len(subs)
    picks = rng.choice(n, size=round_half_up(tree_percent * n, 100), replace=False)
    stable = frozenset(subs[int(i)] for i in picks)
    pending = {True: [h for h in subs if h in stable], False: [h for h in subs if h not in stable]}
    current = set(subs)
    steps = []
    for _ in range(n):
        is_stable = _pick_category(policy, rand_mode, pending, rng)
        victims = pending[is_stable]
        victim = victims.pop(int(rng.integers(len(victims))))
        free = [h for h in topology.hosts if h != publisher and h not in current]
        check(bool(free), "no non-subscriber left to replace a subscriber with")
        new = free[int(rng.integers(len(free)))]
        current.remove(victim)
        current.add(new)
        steps.append((victim, new, is_stable))
    return tuple(subs), stable, tuple(steps)


def _pick_category(policy: str, rand_mode: str, pending: dict[bool, list[str]],
                   rng: np.random.Generator) -> bool:
    """True to replace a stable subscriber next, False for a dynamic one."""
    stable_left, dynamic_left = bool(pending[True]), bool(pending[False])
    if not (stable_left and dynamic_left):
        return stable_left
    if policy == "HEAD":
        return False
    if policy == "RULE":
        return True
    if rand_mode == "uniform":
        left = len(pending[True]) + len(pending[False])
        return int(rng.integers(left)) < len(pending[True])
    return bool(rng.random() < 0.5)
