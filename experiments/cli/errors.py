"""What every command of the command line shares: the bad-input error and ``KEY=VALUE`` options."""

from __future__ import annotations

#: Exit code for bad input (one line on stderr, no traceback).
EXIT_BAD_INPUT = 2


class CliError(Exception):
    """Bad input found by the CLI itself."""


def parse_params(items: list[str]) -> dict[str, str]:
    """``--param KEY=VALUE`` options as a dict (a later key wins).

    Raises
    ------
    CliError
        If an item has no ``=`` or an empty key.
    """
    out: dict[str, str] = {}
    for item in items:
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise CliError(f"--param expects KEY=VALUE, got {item!r}")
        out[key] = value
    return out
