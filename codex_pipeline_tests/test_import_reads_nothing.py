"""Importing a module below the edge reads no file, lists no data folder, writes nothing and reads no environment.

One child process, started with an empty environment (``PATH`` and ``PYTHONPATH`` only), installs an
audit hook (``sys.addaudithook``) and imports every module of ``codex_pipeline`` but the CLI's (the edge
reads the environment when a command runs; ``defs`` is imported too: its package builds the code location
only when asked for ``defs``). The hook records, with the module whose import was running:

- ``read``: an ``open`` of a file inside the package that is not Python (``.py``/``.pyc``/``.so``/``.pth``):
  a YAML, JSON or data file read at import;
- ``list``: ``os.listdir`` / ``os.scandir`` of a folder inside the package that is not a Python package;
- ``write``: an ``open`` for writing of any path (bytecode is not written: ``-B``);
- ``environ``: a read of ``os.environ`` by code of the package (third-party libraries' own reads are theirs).

Issue 38 asks that nothing below the edge reads the environment or a file at import; the second test runs
the same harness over a fake package that does all four, so the first one can fail.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import codex_pipeline

PACKAGE_DIR = Path(codex_pipeline.__file__).resolve().parent
ROOT = PACKAGE_DIR.parent
#: Subpackages not imported: the CLI is the edge (it reads the environment and files when a command runs).
EDGE = ("cli",)
MARK = "IMPORT-AUDIT:"
#: (kind, module, path relative to the package) -> why it is let through. Remove an entry with its cause:
#: the test fails while an entry is no longer needed.
KNOWN = {
    ("write", "codex_pipeline.redirects.word_kernels", "redirects/__pycache__"):
        "numba's @njit(cache=True) makes the cache folder and probes that it is writable (a temporary file, "
        "deleted at once) when a function is decorated; the module is imported only by the functions that "
        "need it (see its docstring)",
}

CHILD = r'''
import json, os, sys

request = json.loads(sys.stdin.read())
PACKAGE = os.path.realpath(request["package_dir"])
NAME = os.path.basename(PACKAGE)
CODE = (".py", ".pyc", ".so", ".pth")
MAPPING_CODE = ("os.py", "_collections_abc.py", "<frozen os>", "<frozen _collections_abc>")
WRITE = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
events, errors, state = [], {}, {"requested": None, "on": True}


def inside(path):
    return path == PACKAGE or path.startswith(PACKAGE + os.sep)


def where():
    """The package module whose top level is running, and the innermost line of the package on the stack."""
    module, line = None, None
    frame = sys._getframe(2)
    while frame is not None:
        filename = frame.f_code.co_filename
        if inside(os.path.realpath(filename)):
            line = line or f"{os.path.relpath(filename, os.path.dirname(PACKAGE))}:{frame.f_lineno}"
            if module is None and frame.f_code.co_name == "<module>":
                module = frame.f_globals.get("__name__")
        frame = frame.f_back
    return module, line


def record(kind, path):
    module, line = where()
    events.append({"kind": kind, "path": path, "importing": state["requested"], "module": module, "line": line})


def as_path(arg):
    if isinstance(arg, int) or arg is None:
        return None
    return os.path.realpath(os.path.abspath(os.fsdecode(arg)))


def hook(event, args):
    if not state["on"]:
        return
    if event == "open":
        path = as_path(args[0])
        if path is None:
            return
        mode, flags = args[1], args[2]
        writes = bool(flags & WRITE) if isinstance(flags, int) else any(c in (mode or "") for c in "wax+")
        if writes and path != os.devnull:
            record("write", path)
        elif inside(path) and not path.endswith(CODE) and not os.path.isdir(path):
            record("read", path)
    elif event == "os.mkdir":
        record("write", as_path(args[0]))
    elif event in ("os.listdir", "os.scandir"):
        path = as_path(args[0] if args and args[0] is not None else ".")
        if path is not None and inside(path) and not os.path.exists(os.path.join(path, "__init__.py")):
            record("list", path)


class _Watched(type(os.environ)):
    """``os.environ`` that notes a read by the package's own code."""

    def _note(self, key):
        if not state["on"]:
            return
        frame = sys._getframe(2)
        while frame is not None and frame.f_code.co_filename.endswith(MAPPING_CODE):
            frame = frame.f_back
        if frame is not None and inside(os.path.realpath(frame.f_code.co_filename)):
            record("environ", key)

    def __getitem__(self, key):
        self._note(key)
        return super().__getitem__(key)

    def __iter__(self):
        self._note("*")
        return super().__iter__()


os.environ.__class__ = _Watched
sys.addaudithook(hook)
import importlib

for name in request["modules"]:
    state["requested"] = name
    try:
        importlib.import_module(name)
    except BaseException as exc:  # a module that cannot be imported with an empty environment is a finding too
        errors[name] = f"{type(exc).__name__}: {exc}"
state["on"] = False
print("''' + MARK + r'''" + json.dumps({"events": events, "errors": errors}))
'''


def package_modules(package_dir: Path, skip: tuple[str, ...] = ()) -> list[str]:
    """Every importable module of the package at ``package_dir`` (packages before their modules), but
    ``__main__`` and the subpackages ``skip``."""
    base = package_dir.parent
    out = []
    for path in sorted(package_dir.rglob("*.py")):
        parts = path.relative_to(base).with_suffix("").parts
        if parts[-1] == "__main__" or (len(parts) > 1 and parts[1] in skip):
            continue
        if not all((base.joinpath(*parts[:i]) / "__init__.py").is_file() for i in range(1, len(parts))):
            continue  # a script in a data folder, not a module
        out.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return sorted(out, key=lambda m: m.split("."))


def audit_imports(package_dir: Path, modules: list[str], pythonpath: Path) -> dict:
    """Import ``modules`` in a child with an empty environment; what the hook recorded, and import errors."""
    env = {"PATH": os.environ.get("PATH", os.defpath), "PYTHONPATH": str(pythonpath)}
    done = subprocess.run([sys.executable, "-B", "-c", CHILD], input=json.dumps(
        {"package_dir": str(package_dir), "modules": modules}), env=env, cwd=pythonpath,
        capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    (line,) = [s for s in done.stdout.splitlines() if s.startswith(MARK)]
    return json.loads(line[len(MARK):])


def _report(events: list[dict]) -> str:
    return "\n".join(f"{e['kind']} {e['path']} while importing {e['importing']} "
                     f"(module {e['module']}, at {e['line']})" for e in events)


@pytest.mark.slow  # one child importing all 170+ modules: ~10 CPU-seconds, most of it third-party imports
def test_importing_a_module_below_the_edge_reads_and_writes_nothing() -> None:
    modules = package_modules(PACKAGE_DIR, skip=EDGE)
    assert "codex_pipeline.defs" in modules and "codex_pipeline.defs.definitions" in modules
    assert "codex_pipeline.settings" in modules and not any(m.startswith("codex_pipeline.cli") for m in modules)
    out = audit_imports(PACKAGE_DIR, modules, ROOT)
    assert out["errors"] == {}
    known = [e for e in out["events"] if _known(e)]
    unknown = [e for e in out["events"] if not _known(e)]
    assert unknown == [], "read, listed, wrote or read the environment at import:\n" + _report(unknown)
    assert {_known(e) for e in known} == set(KNOWN), "an entry of KNOWN is no longer needed: remove it"


def _known(event: dict) -> tuple[str, str, str] | None:
    path = Path(event["path"])
    rel = path.relative_to(PACKAGE_DIR).as_posix() if path.is_relative_to(PACKAGE_DIR) else event["path"]
    key = (event["kind"], event["module"], rel)
    return key if key in KNOWN else None


FAKE_MODULE = '''
import os
from pathlib import Path

HERE = Path(__file__).parent
CONFIG = (HERE / "data" / "config.yaml").read_text()
NAMES = sorted(os.listdir(HERE / "data"))
(HERE / "out.txt").write_text("written at import")
HOME = os.environ.get("FAKE_SETTING", "")
'''


def test_the_harness_names_the_module_that_reads_at_import(tmp_path: Path) -> None:
    package = tmp_path / "fakepkg"
    (package / "data").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "clean.py").write_text("import json\nVALUE = json.dumps({'a': 1})\n")
    (package / "reads_yaml.py").write_text(FAKE_MODULE)
    (package / "data" / "config.yaml").write_text("key: value\n")
    modules = package_modules(package)
    assert modules == ["fakepkg", "fakepkg.clean", "fakepkg.reads_yaml"]
    out = audit_imports(package.resolve(), modules, tmp_path)
    assert out["errors"] == {}
    found = {(e["kind"], e["path"], e["importing"], e["module"]) for e in out["events"]}
    data = package.resolve() / "data"
    assert found == {
        ("read", str(data / "config.yaml"), "fakepkg.reads_yaml", "fakepkg.reads_yaml"),
        ("list", str(data), "fakepkg.reads_yaml", "fakepkg.reads_yaml"),
        ("write", str(package.resolve() / "out.txt"), "fakepkg.reads_yaml", "fakepkg.reads_yaml"),
        ("environ", "FAKE_SETTING", "fakepkg.reads_yaml", "fakepkg.reads_yaml"),
    }, _report(out["events"])
    assert all(e["line"].startswith("fakepkg/reads_yaml.py:") for e in out["events"])
