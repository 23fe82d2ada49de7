"""argparse ``type`` functions shared by the commands: a mistake is caught while parsing and
reported as one line naming the option (``cli.errors.OneLineParser``)."""

from __future__ import annotations

import argparse
import datetime as dt


def day(value: str) -> str:
    """A partition day ``YYYY-MM-DD``, kept as typed."""
    try:
        dt.date.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a day: {value!r} (expected YYYY-MM-DD)") from None
    return value


def positive_int(value: str) -> int:
    """A whole number of at least 1."""
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {value!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {n}")
    return n


def seconds(value: str) -> float:
    """A time limit in seconds; 0 for none."""
    try:
        seconds = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {value!r}") from None
    if not seconds >= 0 or seconds == float("inf"):
        raise argparse.ArgumentTypeError(f"must be 0 (no limit) or a positive number of seconds, got {value!r}")
    return seconds
