"""A mapped dataset's documentation page, written from its mapping (``codex sources page``).

The page has the header every dataset page carries (landing folder, assets, ``doc_id``,
chunk types, ``chunker_revision``, ``source_version``) and a table of what happens to each
column, so a dataset added with no Python gets its page with no writing either.
"""

from __future__ import annotations

from pathlib import Path

from codex_pipeline.sources.mapping.schema import FieldRule, SourceMapping

CHUNK_TYPES = {
    "permit": "`permit_summary` (parent), `permit_scope_section`, `condition` (children)",
    "event": "`event` (descriptions over 800 tokens: 800/50-token windows under the event)",
    "record": "`record_view`",
}
ID_FIELD = {"permit": "permit_number", "event": "event_id", "record": "record_id"}


def _c(v: str) -> str:
    """A value in backticks, safe inside a table cell."""
    return "an empty cell" if v == "" else "`" + v.replace("|", "\\|") + "`"


def _conversion(rule: FieldRule) -> str:
    out = []
    if rule.value is not None:
        return f"constant {_c(rule.value)}"
    if rule.block is not None:
        b = rule.block
        out.append(f"blocks {b.first}–{b.last}, one object ({', '.join(b.parts)}) per block with a value")
    if rule.optional:
        out.append("optional: a value that does not convert is nulled and noted")
    if rule.columns:
        out.append(f"joined with {_c(rule.join)}")
    if rule.formats:
        out.append("dates read as " + ", ".join(_c(f) for f in rule.formats))
    if rule.timezone:
        out.append(f"local times in {rule.timezone}")
    if rule.separator is not None:
        out.append(f"several values split at {_c(rule.separator)}")
    if rule.vocabulary:
        pairs = ", ".join(f"{_c(k)} → {_c(v)}" for k, v in rule.vocabulary.items())
        out.append(f"vocabulary {pairs}" + (" (other values rejected)" if rule.unknown == "reject" else " (others kept)"))
    if rule.strip or rule.decimal != ".":
        out.append(f"numbers without {_c(rule.strip)}" + (f", decimal mark {_c(rule.decimal)}" if rule.decimal != "." else ""))
    if rule.type:
        out.append(rule.type)
    return "; ".join(out) or "as given, spacing collapsed"


def _cols(rule: FieldRule) -> str:
    if rule.block is not None:
        return _c(rule.block.pattern)
    return " + ".join(_c(c) for c in rule.source_columns()) or "–"


def render_page(m: SourceMapping, path: Path, chunker_revision: str, source_version: str) -> str:
    """The Markdown page of the dataset ``m`` registers (``docs/datasets/<dataset>.md``)."""
    ds = m.dataset
    assets = f"`[{ds}, raw]` → `[{ds}, chunks]` → `[{ds}, embeddings]` → `[{ds}, search_index]`"
    lines = [
        f"# `{ds}`", "",
        f"{m.description or m.title} Read through the mapping file `{path.name}` "
        f"([source mappings](mappings.md)), kind `{m.kind}`: no Python of its own.", "",
        "| | |", "| --- | --- |",
        f"| landing folder | `landing/{ds}/<YYYY-MM-DD>/`: `*.{m.format}` ({m.title} export) |",
        f"| assets | {assets} |",
        f"| `doc_id` | `urn:aprs:{ds}:{{{m.id}}}` |",
        f"| chunk types | {CHUNK_TYPES[m.kind]} |",
        f"| mapping | `{path}` |",
        f"| chunker_revision | `{chunker_revision}` |",
        f"| source_version | `{source_version}` (mapping reader revision + the mapping's digest) |",
        "", "## Columns", "",
        "| export column | field | conversion |", "| --- | --- | --- |",
        f"| {_c(m.id)} | `{ID_FIELD[m.kind]}` (id) | {'runs of other characters → `-`' if m.id_clean else 'as given'} |",
    ]
    lines += [f"| {_cols(r)} | `{name}` | {_conversion(r)} |" for name, r in m.fields.items()]
    lines += [f"| {_cols(r)} | `details` → `{label}: …` line | {_conversion(r)} |" for label, r in m.details.items()]
    if m.scope is not None:
        lines.append(f"| {_c(m.scope.column)} | `scope_sections` | mode `{m.scope.mode}`, split at {_c(m.scope.separator)} |")
    if m.conditions is not None:
        lines.append(f"| {_c(m.conditions.column)} | `conditions` | one condition per part, split at {_c(m.conditions.separator)} |")
    if m.coordinates is not None:
        c = m.coordinates
        cols = _c(c.point) + " (point)" if c.point else f"{_c(str(c.x))}, {_c(str(c.y))}"
        lines.append(f"| {cols} | `longitude`, `latitude` | {c.crs} → WGS 84 |")
    lines += [f"| {_c(f.column)} | filter | rows kept only when it passes (others counted as filtered) |" for f in m.filters]
    if m.duplicates.mode != "reject":
        order = f"latest by {_c(m.duplicates.order.column)}" if m.duplicates.order else "latest in file order"
        lines.append(f"| {_c(m.id)} | duplicates | {m.duplicates.mode}: {order}"
                     + (f", union of {', '.join(m.duplicates.union)}" if m.duplicates.union else "") + " |")
    lines += [f"| {_c(col)} | dropped | – |" for col in m.drop]
    empties = ", ".join(_c(v) for v in m.empty_values)
    lines += ["", f"Cells meaning no value: {empties}. "
              + ("A file with columns the mapping neither reads nor drops is rejected whole, naming them."
                 if m.unexpected_columns == "reject" else "Columns the mapping does not name are ignored."),
              "Rows that do not fit are rejected naming the row, the column and the rule "
              f"(`codex.{ds}_rejects`); try a file first with `codex sources check FILE --mapping {path.name}`.", ""]
    return "\n".join(lines)
