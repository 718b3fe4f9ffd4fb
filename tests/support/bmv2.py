"""Skip markers for tests that run real BMv2 (``simple_switch_grpc``, marker ``hil``).

They skip with the reason where BMv2 is not on PATH (it is built outside the
repository; here ``PATH=/opt/p4/bin:$PATH``, see p4/README.md) or the user
is not root (network namespaces, veth pairs, raw sockets), and must pass
where both hold.
"""

from __future__ import annotations

import os
import shutil

import pytest


def bmv2_missing() -> str | None:
    """Why real-BMv2 tests cannot run here (None: they can)."""
    if shutil.which("simple_switch_grpc") is None:
        return ("simple_switch_grpc (BMv2) is not on PATH (e.g. PATH=/opt/p4/bin:$PATH, "
                "see p4/README.md)")
    if os.geteuid() != 0:
        return "needs root (network namespaces, veth pairs, raw sockets)"
    return None


#: Decorator for one test.
needs_bmv2 = pytest.mark.skipif(bmv2_missing() is not None, reason=bmv2_missing() or "")

#: ``pytestmark`` of a module of BMv2 tests.
BMV2_MODULE = [pytest.mark.hil, needs_bmv2]
