"""Seeds by name: stable seeds from canonical parameters, child generators by component.

``stable_seed(obj)`` hashes the canonical JSON of ``obj`` (sorted keys) with
SHA-256, never Python's ``hash()``, so a cell gets the same seed on every
machine and engine. ``child_rng(root, "component", *path)`` derives an
independent ``numpy.random.Generator`` per component name, so adding a
component never shifts another component's stream.
"""

from __future__ import annotations

import hashlib
import json
import zlib
from typing import Any

import numpy as np


def canonical_json(obj: Any) -> str:
    """JSON with sorted keys and no whitespace: the identity of a config."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


def stable_seed(obj: Any) -> int:
    """A 63-bit seed from the canonical JSON of ``obj``."""
    digest = hashlib.sha256(canonical_json(obj).encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def child_rng(root: int, component: str, *path: int) -> np.random.Generator:
    """Generator for ``component`` (and optional integer path, e.g. run index)."""
    seq = np.random.SeedSequence([root, *path], spawn_key=(zlib.crc32(component.encode()),))
    return np.random.Generator(np.random.PCG64(seq))
