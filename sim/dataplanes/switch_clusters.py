"""Dense switch clusters of a topology: k-means over hop distances, then a BFS split.

Steps 1-3 of the client-distribution generator of seed 000 §6.5.2 (digest
ch. 5-7 §4.2.3 [R]): k-means (k-means++ seeding) over the rows of the
all-pairs hop-distance matrix, the centre node of each group (the member
closest to its centroid), and a round-robin BFS from the centres until
``dense_percent`` of the switches are claimed. The clustered workload
(:mod:`sim.workloads.clustered`) places clients with these clusters and the
``vt-clusters`` strategy builds trees inside them.

References
----------
Seed 000 §6.5.2 (Fig. 6.8); digest ch. 5-7 §4.2.3.
"""

from __future__ import annotations

import itertools
from collections import deque
from dataclasses import dataclass

import numpy as np

from sim.dataplanes.trees import hop_distances
from sim.dataplanes.weighted_draws import choice_one
from topologies.model import Topology


@dataclass(frozen=True)
class ClientClusters:
    """Output of :func:`client_clusters`: per group its centre and dense switches."""

    centres: tuple[str, ...]
    dense: tuple[tuple[str, ...], ...]

    @property
    def dense_nodes(self) -> frozenset[str]:
        return frozenset(itertools.chain.from_iterable(self.dense))


def kmeans(points: np.ndarray, k: int, rng: np.random.Generator, max_iter: int = 100
           ) -> tuple[np.ndarray, np.ndarray]:
    """Lloyd's k-means with k-means++ seeding.

    Returns
    -------
    labels : ndarray of int
        Group of each point.
    centroids : ndarray
        One row per group.
    """
    n = len(points)
    k = min(k, n)
    first = int(rng.integers(n))
    centroids = [points[first]]
    d2 = ((points - centroids[0]) ** 2).sum(axis=1)
    for _ in range(1, k):
        total = d2.sum()
        nxt = choice_one(rng, d2 / total) if total > 0 else int(rng.integers(n))  # rng.choice(n, p)
        centroids.append(points[nxt])
        d2 = np.minimum(d2, ((points - points[nxt]) ** 2).sum(axis=1))
    cent = np.array(centroids, dtype=float)
    labels = np.full(n, -1)
    for _ in range(max_iter):
        dist = ((points[:, None, :] - cent[None, :, :]) ** 2).sum(axis=2)
        new = dist.argmin(axis=1)
        for c in range(k):  # an empty group takes the point farthest from its centroid
            if not (new == c).any():
                far = int(dist[np.arange(n), new].argmax())
                new[far] = c
        if (new == labels).all():
            break
        labels = new
        cent = np.array([points[labels == c].mean(axis=0) for c in range(k)])
    return labels, cent


def client_clusters(topology: Topology, k: int, dense_percent: float,
                    rng: np.random.Generator) -> ClientClusters:
    """Steps 1-3 of the §6.5.2 generator (see the module docstring)."""
    index, dist = hop_distances(topology)
    names = list(index)
    labels, cent = kmeans(dist.astype(float), k, rng)
    groups = sorted(set(labels.tolist()))
    centres = []
    for c in groups:
        members = np.flatnonzero(labels == c)
        d = ((dist[members].astype(float) - cent[c]) ** 2).sum(axis=1)
        centres.append(names[int(members[int(d.argmin())])])
    target = round(dense_percent / 100 * len(names))
    claimed: set[str] = set()
    dense: list[list[str]] = [[] for _ in centres]
    queues = [deque([c]) for c in centres]
    while len(claimed) < target and any(queues):
        for i, q in enumerate(queues):
            if len(claimed) >= target:
                break
            while q:
                node = q.popleft()
                if node in claimed:
                    continue
                claimed.add(node)
                dense[i].append(node)
                q.extend(p.neighbor for p in topology.ports(node).values()
                         if not topology.is_host(p.neighbor))
                break
    return ClientClusters(tuple(centres), tuple(tuple(d) for d in dense))
