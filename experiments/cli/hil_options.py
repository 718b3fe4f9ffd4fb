"""What every ``stackcast hil`` command shares: BMv2 run options, progress, and the
one-line handling of BMv2 failures and Ctrl-C."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def add_run_options(parser: argparse.ArgumentParser, quiet_help: str) -> None:
    """Options every BMv2 command takes: quiescence window, BMv2 log level, progress."""
    parser.add_argument("--quiet-ms", type=float, default=None, help=quiet_help)
    parser.add_argument("--bmv2-log-level", default="off",
                        choices=["off", "error", "warn", "info", "debug", "trace"],
                        help="BMv2 log level (logs live in a temporary directory; default off)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def quiet_s(args: argparse.Namespace) -> float:
    """``--quiet-ms`` in seconds (default 20 ms in hop mode, 100 ms in network mode)."""
    from experiments.cli.errors import CliError

    ms = args.quiet_ms
    if ms is None:
        ms = 100.0 if getattr(args, "mode", "hop") == "network" else 20.0
    if ms <= 0:
        raise CliError("--quiet-ms must be > 0")
    return ms / 1e3


def show_progress(args: argparse.Namespace) -> bool:
    return not args.no_progress and sys.stderr.isatty()


def on_bmv2(run: Callable[[], T]) -> T | None:
    """Call ``run`` with Ctrl-C / SIGTERM turned into a clean-up.

    BMv2 unavailable here (not on PATH, not root) or bad input: a one-line
    :class:`~experiments.cli.errors.CliError` (exit 2). The target refusing or losing
    the run (a write BMv2 rejects, a crash): not a model verdict, but the run
    failed, so the message is printed and None returned (exit 1).
    """
    from experiments.cli.errors import CliError
    from hil.bmv2 import Bmv2Error
    from hil.netns import NetnsError, signals_as_interrupt
    from hil.p4rt import P4RuntimeError
    from hil.validate import HilUnavailable

    try:
        with signals_as_interrupt():
            return run()
    except (HilUnavailable, ValueError) as exc:
        raise CliError(str(exc)) from None
    except (Bmv2Error, NetnsError, P4RuntimeError) as exc:
        print(f"stackcast: BMv2 failed: {exc}", file=sys.stderr)
        return None
