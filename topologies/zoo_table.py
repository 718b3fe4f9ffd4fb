"""Seed 000 Table 6.1 (28 Topology Zoo networks) beside the graphs these files give.

Columns: |V| switches, |E| links, ⟨k⟩ "average node degree", σ_k² "node
degree fluctuation", d diameter; switches only (one host per switch does
not enter the table).

The thesis's ⟨k⟩ and σ_k² are not the textbook 2|E|/|V| and degree variance
(digest §4.2.1 [BUG]: Litnet would have ⟨k⟩ = 2.00, not 0.98). They are the
mean and the *population* variance of the degree sequence **zero-padded to
88 entries**, the size of the largest network (VtlWavenet2008):
⟨k⟩ = 2|E|/88 and σ_k² = Σk²/88 − ⟨k⟩² -- presumably the rows of one 28 × 88
array. With that convention all five columns of the 24 networks whose |V|,
|E| and d match agree to the printed two decimals (sample variance or host
degrees do not); only VtlWavenet2008's (88 nodes) are textbook values.
:func:`table_row` computes both conventions.

References
----------
Seed 000 §6.5.1, Table 6.1; shared/notes/seed000-ch5-7.md §4.2.1, A18;
shared/data/topology-zoo/README.md.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import networkx as nx

from topologies.zoo import (
    NO_TABLE_6_1_RECIPE,
    TABLE_6_1_RECIPES,
    THESIS_ALIASES,
    Preprocess,
    ZooGraph,
    zoo_graph,
)


@dataclass(frozen=True, slots=True)
class TableRow:
    """One row of Table 6.1: |V|, |E|, ⟨k⟩, σ_k², d (⟨k⟩, σ_k² as printed: 2 decimals)."""

    name: str
    nodes: int
    links: int
    mean_degree: float
    degree_variance: float
    diameter: int

    def key(self) -> tuple[int, int, float, float, int]:
        """The five columns, ⟨k⟩ and σ_k² rounded to the table's two decimals."""
        return (self.nodes, self.links, round(self.mean_degree, 2),
                round(self.degree_variance, 2), self.diameter)


#: Seed 000 Table 6.1 as printed (order of the thesis: by diameter).
THESIS_ROWS: tuple[TableRow, ...] = tuple(TableRow(*r) for r in (
    ("Chinanet", 42, 66, 1.5, 10.52, 4), ("Litnet", 43, 43, 0.98, 5.04, 4),
    ("Cernet", 41, 58, 1.32, 5.6, 5), ("Ntt", 32, 65, 1.48, 7.07, 6),
    ("Cesnet200706", 44, 51, 1.16, 6.27, 6), ("Carnet", 44, 43, 0.98, 5.48, 6),
    ("Dfn", 50, 78, 1.77, 5.31, 6), ("Telcove", 71, 70, 1.59, 9.13, 7),
    ("Forthnet", 62, 62, 1.41, 7.72, 7), ("Bellsouth", 51, 66, 1.5, 7.55, 7),
    ("Garr200902", 54, 68, 1.55, 5.13, 7), ("Arnes", 41, 57, 1.3, 4.53, 7),
    ("BeyondTheNetwork", 53, 65, 1.48, 3.98, 7), ("Uunet", 49, 84, 1.91, 7.38, 8),
    ("Tw", 71, 115, 2.61, 5.58, 8), ("Uninett", 71, 97, 2.2, 3.12, 9),
    ("Renater2010", 43, 56, 1.27, 3.08, 9), ("Surfnet", 50, 68, 1.55, 3.36, 11),
    ("Iris", 51, 64, 1.45, 2.16, 11), ("Palmetto", 45, 64, 1.45, 2.57, 12),
    ("BtLatinAmerica", 45, 50, 1.14, 1.87, 12), ("Bellcanada", 48, 64, 1.45, 2.59, 13),
    ("Sanet", 43, 45, 1.02, 1.66, 13), ("LambdaNet", 42, 46, 1.05, 1.57, 13),
    ("HiberniaGlobal", 55, 81, 1.84, 2.72, 16), ("Ntelos", 47, 58, 1.32, 1.92, 17),
    ("RedBestel", 84, 93, 2.11, 0.85, 28), ("VtlWavenet2008", 88, 92, 2.09, 0.11, 31),
))

#: Length the thesis padded every degree sequence to: the largest |V| of the table.
THESIS_PAD_NODES = max(r.nodes for r in THESIS_ROWS)


def table_row(name: str, nodes: Sequence[Any], edges: Iterable[tuple[Any, Any]],
              pad_to: int | None = THESIS_PAD_NODES) -> TableRow:
    """|V|, |E|, ⟨k⟩, σ_k², d of a connected simple switch graph.

    Parameters
    ----------
    pad_to : int or None
        Zero-pad the degree sequence to this length before the mean and the
        population variance (the thesis's convention, 88); ``None``: the
        textbook 2|E|/|V| and the population variance over |V|.
    """
    g = nx.Graph()
    g.add_nodes_from(nodes)
    g.add_edges_from(edges)
    degrees = [d for _, d in g.degree()]
    n = len(degrees) if pad_to is None else pad_to
    if n < len(degrees) or n == 0:
        raise ValueError(f"pad_to={pad_to} is smaller than the {len(degrees)} nodes of {name}")
    mean = sum(degrees) / n
    variance = sum(d * d for d in degrees) / n - mean * mean
    return TableRow(name, g.number_of_nodes(), g.number_of_edges(), mean, variance,
                    nx.diameter(g))


def zoo_row(name: str, graph: ZooGraph, pad_to: int | None = THESIS_PAD_NODES) -> TableRow:
    """:func:`table_row` of a preprocessed Zoo network."""
    return table_row(name, graph.order, graph.edges, pad_to)


@dataclass(frozen=True, slots=True)
class Comparison:
    """A Table 6.1 row beside ours: default preprocessing, ``table61`` option, verdict."""

    thesis: TableRow
    ours: TableRow
    textbook: TableRow
    option: TableRow | None
    file: str
    status: str
    reason: str = ""

    @property
    def verdict(self) -> str:
        """``status``, with the reason when there is one."""
        return f"{self.status}: {self.reason}" if self.reason else self.status

    def to_json(self) -> dict[str, Any]:
        def cols(r: TableRow | None) -> dict[str, Any] | None:
            if r is None:
                return None
            v, e, k, s2, d = r.key()
            return {"V": v, "E": e, "k": k, "sigma2": s2, "d": d}

        return {"network": self.thesis.name, "file": self.file, "thesis": cols(self.thesis),
                "ours": cols(self.ours), "ours_textbook": cols(self.textbook),
                "ours_table61": cols(self.option), "status": self.status,
                "reason": self.reason}


def compare(load: Callable[[str, Preprocess], ZooGraph] = zoo_graph) -> list[Comparison]:
    """The 28 rows of Table 6.1 beside the graphs ``load(name, preprocess)`` gives."""
    out = []
    for thesis in THESIS_ROWS:
        key = thesis.name.lower()
        graph = load(thesis.name, "lcc")
        ours = zoo_row(thesis.name, graph)
        textbook = zoo_row(thesis.name, graph, pad_to=None)
        option = None
        if key in TABLE_6_1_RECIPES:
            option = zoo_row(thesis.name, load(thesis.name, "table61"))
        reason = ""
        if ours.key() == thesis.key():
            status = "matches"
        elif option is not None and option.key() == thesis.key():
            status, reason = "matches with preprocess=table61", TABLE_6_1_RECIPES[key].note
        else:
            status, reason = "differs", NO_TABLE_6_1_RECIPE.get(key, "no fit searched")
        out.append(Comparison(thesis, ours, textbook, option,
                              THESIS_ALIASES.get(key, thesis.name), status, reason))
    return out
