"""The local runner: cells run one after another in this process."""

from __future__ import annotations

import logging
from pathlib import Path

from tqdm import tqdm

from experiments.cells.pipeline import run_cell
from experiments.runners.spark import CellSource
from experiments.storage.results import Provenance, is_done, migrate_layout, write_cell
from sim.dataplanes.caches import Caches
from sim.dataplanes.seeds import canonical_json

log = logging.getLogger(__name__)


def run_local(spec: CellSource, out: str | Path, resume: bool = False,
              progress: bool = True) -> dict[str, int]:
    """Run every cell of ``spec`` into ``out``; returns counts of cells run and skipped."""
    cells = spec.cells()
    migrate_layout(out)
    todo = [c for c in cells if not (resume and is_done(out, c))]
    prov = Provenance.of(canonical_json(spec.canonical()))
    log.info("%s: %d cells, %d to run", spec.name, len(cells), len(todo))
    caches = Caches()  # shared by the cells of this run (nested churn levels reuse draws)
    for cell in tqdm(todo, desc=spec.name, unit="cell", disable=not progress):
        write_cell(out, cell, run_cell(cell, caches=caches), prov)
    return {"cells": len(cells), "ran": len(todo), "skipped": len(cells) - len(todo)}
