"""The local runner: cells run one after another in this process."""

from __future__ import annotations

import logging
from pathlib import Path

from tqdm import tqdm

from experiments.cells.pipeline import run_cell
from experiments.runners.spark import CellSource
from experiments.storage.results import CellWriter, Provenance, prepare_run
from sim.dataplanes.caches import Caches
from sim.dataplanes.seeds import canonical_json

log = logging.getLogger(__name__)


def run_local(spec: CellSource, out: str | Path, resume: bool = False,
              progress: bool = True) -> dict[str, int]:
    """Run every cell of ``spec`` into ``out``; returns counts of cells run and skipped."""
    cells = spec.cells()
    todo = prepare_run(out, cells, resume)
    prov = Provenance.of(canonical_json(spec.canonical()))
    log.info("%s: %d cells, %d to run", spec.name, len(cells), len(todo))
    caches = Caches()  # shared by the cells of this run (nested churn levels reuse draws)
    writer = CellWriter(out, prov)  # gathers the run's cells into files of many cells
    for cell in tqdm(todo, desc=spec.name, unit="cell", disable=not progress):
        writer.write(cell, run_cell(cell, caches=caches))
    writer.close()
    return {"cells": len(cells), "ran": len(todo), "skipped": len(cells) - len(todo)}
