"""docs/cli.md documents the `codex` command line as the argument parser builds it.

Walks the parser of ``codex_pipeline.cli.app.build_parser``: every command has a section
headed ``## `codex …``` (any heading level), and that section names every option of the
command (each of its spellings, in backticks), every positional argument, every choice
of an option with fixed choices, and every alias of the command. The other way round, an
option row of a section's table (``| `--x …` | … |``) must be an option the command has.
A failure names the command and what is missing or stale.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass, field
from pathlib import Path

from codex_pipeline.cli.app import build_parser

REFERENCE = Path(__file__).resolve().parents[2] / "docs" / "cli.md"
HEADING = re.compile(r"^#{2,4} `(codex(?: [a-z][\w-]*)*)`\s*$", re.MULTILINE)
OPTION_ROW = re.compile(r"^\|([^|]*)\|", re.MULTILINE)


@dataclass
class Command:
    path: str  # "codex inspect summary"
    parser: argparse.ArgumentParser
    aliases: list[str] = field(default_factory=list)

    @property
    def actions(self) -> list[argparse.Action]:
        return [
            a for a in self.parser._actions
            if not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction))
        ]

    @property
    def leaf(self) -> bool:
        return not any(isinstance(a, argparse._SubParsersAction) for a in self.parser._actions)


def commands(parser: argparse.ArgumentParser, path: str = "codex") -> list[Command]:
    """The top-level command and every sub-command below it, with their aliases."""
    found = [Command(path, parser)]
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        names: dict[int, list[str]] = {}  # a parser's name first, then its aliases (argparse's order)
        for name, sub in action.choices.items():
            names.setdefault(id(sub), []).append(name)
        for name, *aliases in names.values():
            sub = action.choices[name]
            for cmd in commands(sub, f"{path} {name}"):
                if cmd.parser is sub:
                    cmd.aliases = aliases
                found.append(cmd)
    return found


def sections(text: str) -> dict[str, str]:
    """``{"codex inspect summary": section text}`` for every ``## `codex …``` heading."""
    heads = list(HEADING.finditer(text))
    return {
        m.group(1): text[m.end(): heads[i + 1].start() if i + 1 < len(heads) else len(text)]
        for i, m in enumerate(heads)
    }


def named(section: str, word: str) -> bool:
    """``word`` appears in backticks, alone or first in a spelled-out form (`` `--dataset DS` ``)."""
    return re.search(r"`" + re.escape(word) + r"(?:[ =`\[…]|\.\.\.)", section) is not None


def documented_options(section: str) -> set[str]:
    """Options named in the first cell of the section's table rows."""
    found: set[str] = set()
    for m in OPTION_ROW.finditer(section):
        found.update(re.findall(r"`(-{1,2}[a-z][\w-]*)", m.group(1)))
    return found


def problems(parser: argparse.ArgumentParser, text: str) -> list[str]:
    docs = sections(text)
    out: list[str] = []
    for cmd in commands(parser):
        if cmd.path not in docs:
            if cmd.leaf or cmd.path == "codex":
                out.append(f"{cmd.path}: no section headed ## `{cmd.path}`")
            continue
        section = docs[cmd.path]
        for alias in cmd.aliases:
            if not named(section, alias) and alias not in section:
                out.append(f"{cmd.path}: alias {alias!r} not mentioned")
        have: set[str] = set()
        for action in cmd.actions:
            if action.option_strings:
                have.update(action.option_strings)
                for opt in action.option_strings:
                    if not named(section, opt):
                        out.append(f"{cmd.path}: option {opt} missing")
            else:
                name = action.metavar if isinstance(action.metavar, str) else action.dest
                if not named(section, name):
                    out.append(f"{cmd.path}: positional argument {name!r} missing")
            for choice in action.choices or ():
                if isinstance(choice, str) and f"`{choice}`" not in section:
                    out.append(f"{cmd.path}: choice {choice!r} of {action.option_strings or action.dest} missing")
        for opt in sorted(documented_options(section) - have - {"-h", "--help"}):
            out.append(f"{cmd.path}: documents {opt}, which the command does not have")
    return out


def test_every_command_and_option_is_in_docs_cli_md() -> None:
    found = problems(build_parser(), REFERENCE.read_text())
    assert not found, "docs/cli.md is out of date with the argument parser:\n  " + "\n  ".join(found)


def test_the_check_catches_a_missing_option_a_stale_row_and_a_missing_command() -> None:
    p = argparse.ArgumentParser(prog="codex")
    sub = p.add_subparsers(dest="command")
    s = sub.add_parser("search", aliases=["find"])
    s.add_argument("query")
    s.add_argument("--mode", choices=["bm25", "hybrid"])
    s.add_argument("-k", type=int)
    sub.add_parser("query")
    text = (
        "## `codex`\n\nno options.\n\n## `codex search`\n\nAlso `find`. `query` words.\n\n"
        "| option | meaning |\n| --- | --- |\n| `--mode MODE` | `bm25` |\n| `--gone` | removed |\n"
    )
    assert problems(p, text) == [
        "codex search: choice 'hybrid' of ['--mode'] missing",
        "codex search: option -k missing",
        "codex search: documents --gone, which the command does not have",
        "codex query: no section headed ## `codex query`",
    ]
