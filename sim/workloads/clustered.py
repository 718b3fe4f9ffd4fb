"""Clustered client distributions and migration churn (seed 000 §6.5.2, §6.6).

The generator of §6.5.2, in three steps:

1. **k-means** (k = 4, k-means++ seeding [5]) over the switches; a switch's
   feature vector is its row of the all-pairs hop-distance matrix (digest
   §4.2.3 [R]).
2. **Centre node** of each group: the member closest to the centroid
   (Euclidean; ties: lowest switch index).
3. **Density split**: a BFS from every centre, the k sets expanding one node
   at a time round-robin (a frontier may cross group borders but skips
   claimed nodes) until ``dense`` percent of the switches are dense; the
   rest are sparse.

Node selection weights: dense ``weights[0]``, sparse ``weights[1]``
(default 9:1, digest [R]; the thesis gives none). Clients are placed on
hosts; a host weighs what its switch weighs.

Receiver model ``clustered`` (this module registers it)::

    clustered:publishers=30,subscribers=30,dense=60,weights=9/1,k=4,
              scenario=nearby,churn=40

- ``publishers`` percent of the hosts are publishers (distinct hosts,
  weighted draw without replacement); every publisher gets ``subscribers``
  percent of the hosts as subscribers (weighted, distinct, not its own
  host). Each subscription has a notification frequency f ~ U(freq_min,
  freq_max) percent (the ch. 5 model, A16); a notification of publisher p
  reaches each of p's subscribers with its probability f.
- Scenarios (§6.6.1, Fig. 6.13): ``uniform`` (every host weighs 1, placement
  and migration), ``nearby`` (the k dense sets, placement and migration),
  ``distant`` (clients start in two of the clusters and migrate towards the
  other two: the split of the k clusters into an old and a new half that
  maximises the smallest hop distance between an old and a new centre,
  digest §4.2.6 [R]).
- Churn (§6.6.2): a client is one role instance (a publisher, or one
  subscription of a publisher; it keeps its identity, relations and
  frequency). One random order of all clients is drawn per seed; at churn
  c percent the first ``round(c% x clients)`` of them have moved once, each
  to a host drawn from the scenario's migration weights (never its current
  host, never a host that would merge it with its publisher or a fellow
  subscriber). Because the order and the moves are drawn the same way for
  every c, churn levels are nested for a seed.
- The controller's view (:meth:`ClusteredPopulation.controller_view`, what
  virtual-tree strategies install from) is the layout at 0 % churn: trees are
  built once and never updated, as in the thesis. ``rebuild_every=k``
  instead rebuilds them at the last multiple of k percent, so the cost of
  updates can be measured (:meth:`ClusteredPopulation.view_at` gives the
  layout at any level).

For nested churn levels the layout must not depend on ``churn``:
:meth:`ClusteredParams.workload_key` is the spec without ``churn`` and
``rebuild_every``, which the cell runner uses to seed the workload.

Deviations: the k-means features, the BFS details, the weights, the
migration exclusions and the distant split are the digest's recommendations
(the thesis leaves them open); Zoo coordinates and Zipf weights (A25) are
not offered.

References
----------
Seed 000 §6.5.2 (client distribution, Fig. 6.8), §6.6.1-6.6.2 (migration
scenarios, churn 0-100 % in 10 % steps), §5.4.1 (Table 5.1 frequencies);
digest ch. 5-7 §4.2.3, §4.2.6, A15-A17.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np

from sim.dataplanes.caches import Caches, Identity
from sim.dataplanes.switch_clusters import ClientClusters, client_clusters
from sim.dataplanes.trees import hop_distances
from sim.dataplanes.weighted_draws import choice_without_replacement
from sim.workloads.receivers import Population, PopulationBase, register_receiver_model
from strategies.virtual_tree.client_view import ControllerView
from topologies.model import Topology
from topologies.registry import check

Scenario = Literal["uniform", "nearby", "distant"]


# -- the generator ------------------------------------------------------------


def distant_split(topology: Topology, clusters: ClientClusters
                  ) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(old, new) cluster indices maximising the smallest old-new centre distance.

    Old is the half holding cluster 0; ties go to the first split in
    lexicographic order.
    """
    index, dist = hop_distances(topology)
    k = len(clusters.centres)
    if k < 2:
        return tuple(range(k)), tuple(range(k))
    best: tuple[int, tuple[int, ...], tuple[int, ...]] | None = None
    for rest in itertools.combinations(range(1, k), k // 2 - 1):
        old = (0, *rest)
        new = tuple(i for i in range(k) if i not in old)
        score = min(int(dist[index[clusters.centres[a]], index[clusters.centres[b]]])
                    for a in old for b in new)
        if best is None or score > best[0]:
            best = (score, old, new)
    assert best is not None
    return best[1], best[2]


# -- the receiver model -------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ClusteredParams:
    """Parameters of the ``clustered`` receiver model (see the module docstring).

    Parameters
    ----------
    publishers, subscribers : float
        Percent of the hosts that publish; percent of the hosts subscribed to
        each publisher (defaults 30 and 30, §6.5.2).
    dense : float
        Percent of the switches that are dense (60).
    weights : tuple of float
        Dense and sparse selection weights, ``"9/1"``.
    k : int
        Number of clusters (4).
    scenario : {"uniform", "nearby", "distant"}
        Placement and migration (§6.6.1).
    churn : int
        Percent of the clients that migrated, 0..100.
    rebuild_every : int
        0: the controller's view stays at 0 % churn (thesis); k > 0: it is
        the layout at the last multiple of k percent.
    freq_min, freq_max : float
        Range of the subscriptions' notification frequencies, percent.
    """

    publishers: float = 30.0
    subscribers: float = 30.0
    dense: float = 60.0
    weights: tuple[float, ...] = (9.0, 1.0)
    k: int = 4
    scenario: Scenario = "nearby"
    churn: int = 0
    rebuild_every: int = 0
    freq_min: float = 1.0
    freq_max: float = 100.0

    def __post_init__(self) -> None:
        check(0 < self.publishers <= 100, f"publishers must be in (0, 100], got {self.publishers}")
        check(0 <= self.subscribers <= 100,
              f"subscribers must be in [0, 100], got {self.subscribers}")
        check(0 <= self.dense <= 100, f"dense must be in [0, 100], got {self.dense}")
        check(len(self.weights) == 2 and all(w > 0 for w in self.weights),
              f"weights must be two positive numbers dense/sparse, e.g. 9/1; got {self.weights}")
        check(self.k >= 1, f"k must be >= 1, got {self.k}")
        check(self.scenario in ("uniform", "nearby", "distant"),
              f"scenario must be uniform, nearby or distant; got {self.scenario!r}")
        check(0 <= self.churn <= 100, f"churn must be in [0, 100], got {self.churn}")
        check(0 <= self.rebuild_every <= 100,
              f"rebuild_every must be in [0, 100], got {self.rebuild_every}")
        check(0 <= self.freq_min <= self.freq_max <= 100,
              "freq_min and freq_max must satisfy 0 <= freq_min <= freq_max <= 100")

    def workload_key(self) -> str:
        """The parameters that fix the layout and migration plan (not churn, not rebuild)."""
        w = "/".join(f"{x:g}" for x in self.weights)
        return (f"clustered:publishers={self.publishers:g},subscribers={self.subscribers:g},"
                f"dense={self.dense:g},weights={w},k={self.k},scenario={self.scenario},"
                f"freq_min={self.freq_min:g},freq_max={self.freq_max:g}")


@dataclass(frozen=True, slots=True)
class Move:
    """Client ``client`` moves to ``host`` (client -1 - i is publisher i; else an index
    into the subscriptions)."""

    client: int
    host: str


class MigrationPlan:
    """Every client's one move, in the drawn order, drawn when first needed.

    The moves come from their own generator (``move_rng``, spawned for them
    alone), so drawing them late gives what drawing them with the layout
    gives; a layout at 0 % churn (the controller's view of the thesis) never
    needs them. The populations of one plan share this object.
    """

    __slots__ = ("_args", "_moves")

    def __init__(self, hosts: list[str], weights: np.ndarray, pub_hosts: list[str],
                 subs: list[tuple[int, str, float]], rng: np.random.Generator) -> None:
        self._args: tuple[Any, ...] | None = (hosts, weights, pub_hosts, subs, rng)
        self._moves: list[Move] | None = None

    @property
    def clients(self) -> int:
        """How many clients move (every publisher and every subscription, once)."""
        if self._moves is not None:
            return len(self._moves)
        assert self._args is not None
        return len(self._args[2]) + len(self._args[3])

    def moves(self) -> list[Move]:
        if self._moves is None:
            assert self._args is not None
            self._moves = draw_moves(*self._args)
            self._args = None  # the generator is spent
        return self._moves


@dataclass
class ClusteredPopulation(PopulationBase):
    """A clustered client layout after ``churn`` percent migration.

    Attributes
    ----------
    topology : Topology
    clusters : ClientClusters
    pub_hosts : list of str
        Initial host of each publisher client.
    subs : list of (publisher index, host, frequency)
        Initial subscription clients.
    migration : MigrationPlan
        The full migration plan (:attr:`moves`).
    churn, rebuild_every : int
    """

    topology: Topology
    clusters: ClientClusters
    pub_hosts: list[str]
    subs: list[tuple[int, str, float]]
    migration: MigrationPlan
    churn: int
    rebuild_every: int = 0
    _layouts: dict[int, tuple[list[str], list[str]]] = field(default_factory=dict)
    #: ``view_at`` per level (shared by the populations of one plan, see
    #: :func:`clustered_population`), so equal views are the same object
    _views: dict[int, ControllerView] = field(default_factory=dict)
    #: per churn level: publisher -> its (host, frequency) subscriptions
    _mine: dict[int, dict[str, list[tuple[str, float]]]] = field(default_factory=dict)

    @property
    def moves(self) -> list[Move]:
        """The full migration plan (every client once, in the drawn order)."""
        return self.migration.moves()

    def _layout(self, level: int) -> tuple[list[str], list[str]]:
        """(publisher hosts, subscription hosts) after ``level`` percent churn."""
        if level not in self._layouts:
            m = round(level / 100 * self.migration.clients)
            pubs = list(self.pub_hosts)
            subs = [h for _, h, _ in self.subs]
            for mv in self.moves[:m] if m else ():
                if mv.client < 0:
                    pubs[-1 - mv.client] = mv.host
                else:
                    subs[mv.client] = mv.host
            self._layouts[level] = (pubs, subs)
        return self._layouts[level]

    @property
    def publishers(self) -> tuple[str, ...]:
        pubs, _ = self._layout(self.churn)
        return tuple(sorted(pubs, key=self.topology.host_id))

    def receivers(self, publisher: str, rng: np.random.Generator) -> frozenset[str]:
        per_publisher = self._mine.get(self.churn)
        if per_publisher is None:
            pubs, hosts = self._layout(self.churn)
            per_publisher = {}
            for i, p in enumerate(pubs):  # the first publisher client on a host, as index()
                if p not in per_publisher:
                    per_publisher[p] = [(hosts[j], f) for j, (q, _, f) in enumerate(self.subs)
                                        if q == i]
            self._mine[self.churn] = per_publisher
        mine = per_publisher.get(publisher)
        if mine is None:
            raise ValueError(f"{publisher} hosts no publisher at churn {self.churn} %")
        draws = rng.random(len(mine))
        return frozenset(h for (h, f), u in zip(mine, draws, strict=True) if u < f)

    def view_at(self, level: int) -> ControllerView:
        """Publishers, subscriptions and clusters after ``level`` percent churn (the same
        object for every call, and for every population of one plan)."""
        view = self._views.get(level)
        if view is None:
            view = self._views[level] = self._view_at(level)
        return view

    def _view_at(self, level: int) -> ControllerView:
        pubs, hosts = self._layout(level)
        subscriptions: dict[str, list[tuple[str, float]]] = {p: [] for p in pubs}
        for j, (i, _, f) in enumerate(self.subs):
            subscriptions[pubs[i]].append((hosts[j], f))
        order = self.topology.host_id
        return ControllerView(
            publishers=tuple(sorted(pubs, key=order)),
            subscriptions={p: tuple(sorted(v, key=lambda x: order(x[0])))
                           for p, v in subscriptions.items()},
            clusters=self.clusters.dense)

    def controller_view(self) -> ControllerView:
        """The layout the controller built its trees from (see ``rebuild_every``)."""
        level = 0
        if self.rebuild_every:
            level = self.churn // self.rebuild_every * self.rebuild_every
        return self.view_at(level)


def _weights(topology: Topology, hosts: list[str], dense: frozenset[str],
             weights: tuple[float, ...], uniform: bool) -> np.ndarray:
    if uniform:
        return np.ones(len(hosts))
    return np.array([weights[0] if topology.host_switch(h) in dense else weights[1]
                     for h in hosts], dtype=float)


def _draw(hosts: list[str], w: np.ndarray, k: int, exclude: set[str],
          rng: np.random.Generator) -> list[str]:
    """``k`` distinct hosts, weighted, none in ``exclude``."""
    idx = [i for i, h in enumerate(hosts) if h not in exclude]
    k = min(k, len(idx))
    if k == 0:
        return []
    p = w[idx] / w[idx].sum()
    picks = choice_without_replacement(rng, p, k)  # rng.choice(len(idx), k, replace=False, p=p)
    return [hosts[idx[i]] for i in picks]


def _rng_key(rng: np.random.Generator) -> tuple[Any, ...] | None:
    """Everything that fixes the draws of ``rng`` and of the generators it spawns;
    None if that cannot be told (then nothing is cached)."""
    seq = rng.bit_generator.seed_seq
    if not isinstance(seq, np.random.SeedSequence):
        return None
    entropy: object = seq.entropy
    if entropy is None:
        return None
    if not isinstance(entropy, int):
        entropy = tuple(int(x) for x in np.atleast_1d(np.asarray(entropy)))
    state = rng.bit_generator.state
    return (type(rng.bit_generator).__name__, entropy, tuple(seq.spawn_key), seq.pool_size,
            seq.n_children_spawned, repr(sorted(state.items())))


def clustered_population(params: ClusteredParams, topology: Topology,
                         rng: np.random.Generator, caches: Caches | None = None
                         ) -> ClusteredPopulation:
    """Draw clusters, the initial layout and the whole migration plan.

    The draws come from three generators spawned from ``rng`` (clusters and
    placement, frequencies, migration), always in the same order, so churn
    levels of one seed are nested.

    The plan does not depend on ``churn`` or ``rebuild_every``: plans are
    kept in ``caches.workload_plans`` per (topology object,
    :meth:`ClusteredParams.workload_key`, state of ``rng``), so the cells of
    one seed at other churn levels that share ``caches`` reuse it (and its
    layouts and controller views) instead of drawing it again (seed 000
    §6.6.2). ``rng`` is left as a fresh draw would leave it. Without
    ``caches`` the plan is drawn afresh (same result).
    """
    key = _rng_key(rng)
    if key is None or caches is None:
        return _draw_plan(params, topology, rng)
    store = caches.workload_plans
    key = (Identity(topology), params.workload_key(), *key)
    plan = store.get(key)
    if plan is None:
        return store.put(key, _draw_plan(params, topology, rng))  # type: ignore[no-any-return]
    rng.spawn(3)  # the same side effect on rng as a fresh draw
    return replace(plan, churn=params.churn, rebuild_every=params.rebuild_every)


def _draw_plan(params: ClusteredParams, topology: Topology, rng: np.random.Generator
               ) -> ClusteredPopulation:
    hosts = list(topology.hosts)
    check(len(hosts) >= 3, "clustered needs at least 3 hosts")
    place_rng, freq_rng, move_rng = rng.spawn(3)
    clusters = client_clusters(topology, params.k, params.dense, place_rng)
    all_dense = clusters.dense_nodes
    if params.scenario == "distant":
        old, new = distant_split(topology, clusters)
        start = frozenset(s for i in old for s in clusters.dense[i])
        target = frozenset(s for i in new for s in clusters.dense[i])
    else:
        start = target = all_dense
    uniform = params.scenario == "uniform"
    w_start = _weights(topology, hosts, start, params.weights, uniform)
    w_target = _weights(topology, hosts, target, params.weights, uniform)
    n = len(hosts)
    n_pub = max(1, round(params.publishers / 100 * n))
    n_sub = min(round(params.subscribers / 100 * n), n - 1)
    pub_hosts = _draw(hosts, w_start, n_pub, set(), place_rng)
    subs: list[tuple[int, str, float]] = []
    for i, p in enumerate(pub_hosts):
        chosen = _draw(hosts, w_start, n_sub, {p}, place_rng)
        chosen.sort(key=topology.host_id)
        freqs = freq_rng.uniform(params.freq_min / 100, params.freq_max / 100, size=len(chosen))
        subs.extend((i, h, float(f)) for h, f in zip(chosen, freqs, strict=True))
    return ClusteredPopulation(topology, clusters, pub_hosts, subs,
                               MigrationPlan(hosts, w_target, pub_hosts, subs, move_rng),
                               params.churn, params.rebuild_every)


def draw_moves_reference(hosts: list[str], w_target: np.ndarray, pub_hosts: list[str],
                         subs: list[tuple[int, str, float]], move_rng: np.random.Generator
                         ) -> list[Move]:
    """The migration plan: one order of all clients, each moved once (the definition;
    :func:`draw_moves` draws the same plan faster)."""
    clients = [-1 - i for i in range(len(pub_hosts))] + list(range(len(subs)))
    order = move_rng.permutation(len(clients))
    pubs = list(pub_hosts)
    cur = [h for _, h, _ in subs]
    members: dict[int, list[int]] = {}
    for j, (i, _, _) in enumerate(subs):
        members.setdefault(i, []).append(j)
    moves: list[Move] = []
    for o in order:
        c = clients[int(o)]
        if c < 0:
            i = -1 - c
            busy = set(pubs) | {cur[j] for j in members.get(i, ())}
        else:
            i = subs[c][0]
            busy = {pubs[i], cur[c]} | {cur[j] for j in members[i]}
        pick = _draw(hosts, w_target, 1, busy, move_rng)
        if not pick:  # nowhere to go: the client stays (recorded as a move to itself)
            pick = [pubs[-1 - c] if c < 0 else cur[c]]
        if c < 0:
            pubs[-1 - c] = pick[0]
        else:
            cur[c] = pick[0]
        moves.append(Move(c, pick[0]))
    return moves


def draw_moves(hosts: list[str], w_target: np.ndarray, pub_hosts: list[str],
               subs: list[tuple[int, str, float]], move_rng: np.random.Generator
               ) -> list[Move]:
    """:func:`draw_moves_reference`'s plan, on host numbers and boolean masks.

    Each move is ``_draw(hosts, w_target, 1, busy, move_rng)``, which is
    ``Generator.choice(len(free), size=1, replace=False, p=p)`` over the
    free hosts in host order: one ``random()`` draw looked up in the
    normalised cumulative sum of ``p = w[free] / w[free].sum()``. This
    computes the same arrays with the same NumPy operations (hence the same
    floats), and draws nothing when no host is free, so the plan and the
    generator's state afterwards are the reference's
    (``tests/sim/test_migration_moves.py``).
    """
    number = {h: i for i, h in enumerate(hosts)}
    w = np.asarray(w_target, dtype=float)
    n_pub = len(pub_hosts)
    order = move_rng.permutation(n_pub + len(subs))
    pubs = np.array([number[h] for h in pub_hosts], dtype=np.int64)
    cur = np.array([number[h] for _, h, _ in subs], dtype=np.int64)
    owner = [i for i, _, _ in subs]
    members: dict[int, list[int]] = {}
    for j, i in enumerate(owner):
        members.setdefault(i, []).append(j)
    member_idx = {i: np.array(js, dtype=np.int64) for i, js in members.items()}
    none = np.zeros(0, dtype=np.int64)
    busy = np.zeros(len(hosts), dtype=np.bool_)
    moves: list[Move] = []
    for o in order.tolist():
        if o < n_pub:  # publisher client -1 - o
            i, c = o, -1 - o
            busy[pubs] = True
        else:
            c = o - n_pub
            i = owner[c]
            busy[pubs[i]] = True
            busy[cur[c]] = True
        busy[cur[member_idx.get(i, none)]] = True
        free = np.flatnonzero(~busy)
        busy[:] = False
        if len(free):
            x = move_rng.random((1,))
            kept = w[free]
            cdf = np.cumsum(kept / kept.sum())
            cdf /= cdf[-1]
            pick = int(free[int(cdf.searchsorted(x, side="right")[0])])
        else:  # nowhere to go: the client stays (recorded as a move to itself)
            pick = int(pubs[i] if c < 0 else cur[c])
        if c < 0:
            pubs[i] = pick
        else:
            cur[c] = pick
        moves.append(Move(c, hosts[pick]))
    return moves


@register_receiver_model(
    "clustered", ClusteredParams,
    "ch. 6 client distribution: k-means clusters, dense/sparse weights, publishers with "
    "subscribers and frequencies, migration scenario and churn (seed 000 §6.5.2, §6.6)",
    takes_caches=True)
def _clustered(params: ClusteredParams, topology: Topology, rng: np.random.Generator,
               caches: Caches | None = None) -> Population:
    return clustered_population(params, topology, rng, caches)  # type: ignore[return-value]
