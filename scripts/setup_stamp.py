"""scripts/setup.sh's skip decision: does a virtualenv already hold what this setup asks for?

One venv serves the demo and the tests: the tests add extras (``TORCH=auto``: torch's CPU build) that
the demo does not need, and the demo must accept a venv that holds more than it asks for, or
alternating ``demo.sh`` and ``test.sh`` would re-run setup every time. So the stamp records what is
installed (extras, weights, torch) against a ``base`` hash of what decides the versions (pyproject,
constraints, these scripts, the interpreter), and a request is *covered* when the base is the same
and the request is a subset of what is installed. Standard library only: it runs in a bare venv.

    python scripts/setup_stamp.py covers STAMP --extras dev --local 1 --torch auto   # exit 0: skip
    python scripts/setup_stamp.py record STAMP --extras dev --local 1 --torch installed
    python scripts/setup_stamp.py show STAMP                                          # what it holds
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# What decides which versions an install gets: a change to any of these re-runs setup.
INPUTS = ("pyproject.toml", "constraints.txt", "scripts/setup.sh", "scripts/setup_stamp.py")
# TORCH= in a request, and what a setup found: installed, or asked for with auto and not at hand.
TORCH_REQUESTS = ("0", "1", "auto")
TORCH_OUTCOMES = ("no", "installed", "unavailable")


def base_hash(root: Path = ROOT, python: str = sys.version) -> str:
    """The hash of the install's inputs and the interpreter: a different base means a fresh setup."""
    h = hashlib.sha256()
    for name in INPUTS:
        path = root / name
        h.update(name.encode() + b"\0" + (path.read_bytes() if path.exists() else b"<absent>") + b"\0")
    h.update(python.encode())
    return h.hexdigest()[:16]


def parse_extras(text: str) -> frozenset[str]:
    """``dev,serve`` → {dev, serve}; empty is the default install."""
    return frozenset(e.strip() for e in text.split(",") if e.strip())


@dataclass(frozen=True)
class Installed:
    """What a finished setup left in the venv, under which base."""

    base: str
    extras: frozenset[str]
    local: bool
    torch: str  # one of TORCH_OUTCOMES

    def to_json(self) -> str:
        """The stamp file's text."""
        return json.dumps({"base": self.base, "extras": sorted(self.extras), "local": self.local,
                           "torch": self.torch}, sort_keys=True)

    def describe(self) -> str:
        """One line for setup's output: what the venv holds."""
        return f"extras [{','.join(sorted(self.extras))}], weights {'yes' if self.local else 'no'}, torch {self.torch}"

    @classmethod
    def read(cls, path: Path) -> Installed | None:
        """The stamp at ``path``, or None when absent or of an older format (the old one-hash stamp)."""
        try:
            data = json.loads(path.read_text())
            return cls(str(data["base"]), frozenset(data["extras"]), bool(data["local"]), str(data["torch"]))
        except (OSError, ValueError, KeyError, TypeError):
            return None


def covers(have: Installed | None, base: str, extras: frozenset[str], local: bool, torch: str) -> bool:
    """Whether ``have`` already satisfies the request: same base, and the request a subset of it.

    TORCH=0 asks for nothing (torch left in place by an earlier test setup is a superset: the local
    model still runs on OpenVINO unless told otherwise); TORCH=1 needs torch installed; TORCH=auto is
    satisfied by an earlier auto that installed torch or found none at hand."""
    if have is None or have.base != base or not extras <= have.extras or (local and not have.local):
        return False
    if torch == "1":
        return have.torch == "installed"
    if torch == "auto":
        return have.torch in ("installed", "unavailable")
    return True


def merged(before: Installed | None, now: Installed) -> Installed:
    """The stamp after a setup: what it installed, plus what an earlier setup on the same base left."""
    if before is None or before.base != now.base:
        return now
    torch = "installed" if "installed" in (before.torch, now.torch) else now.torch
    if torch == "no" and before.torch == "unavailable":
        torch = "unavailable"
    return Installed(now.base, before.extras | now.extras, before.local or now.local, torch)


def main(argv: list[str]) -> int:
    """``covers``: exit 0 when setup can be skipped, 1 when not; ``record``: write the stamp; ``show``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=("covers", "record", "show"))
    parser.add_argument("stamp", type=Path)
    parser.add_argument("--extras", default="")
    parser.add_argument("--local", choices=("0", "1"), default="1")
    parser.add_argument("--torch", choices=TORCH_REQUESTS + TORCH_OUTCOMES, default="0")
    args = parser.parse_args(argv)
    base, extras, local = base_hash(), parse_extras(args.extras), args.local == "1"
    before = Installed.read(args.stamp)
    if args.action == "show":
        print(before.describe() if before else "no stamp")
        return 0
    if args.action == "covers":
        if args.torch not in TORCH_REQUESTS:
            parser.error(f"covers --torch takes {TORCH_REQUESTS}")
        return 0 if covers(before, base, extras, local, args.torch) else 1
    if args.torch not in TORCH_OUTCOMES:
        parser.error(f"record --torch takes {TORCH_OUTCOMES}")
    after = merged(before, Installed(base, extras, local, args.torch))
    args.stamp.write_text(after.to_json() + "\n")
    print(after.describe())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
