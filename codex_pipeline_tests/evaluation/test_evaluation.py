"""codex eval's parts: character-level scores, canonical → file offsets, gold validation, evidence units."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path

import pytest

from codex_pipeline.datasets.registry import DatasetRegistry
from codex_pipeline.evaluation.gold import GoldError, load_gold, read_source
from codex_pipeline.evaluation.metrics import score, summarize
from codex_pipeline.evaluation.runner import CorpusPart, land_corpus, source_maps
from codex_pipeline.evaluation.source_map import build_source_map
from codex_pipeline.retrieval.units import split_units
from codex_pipeline.settings import CodexSettings
from codex_pipeline.sources.email.reader import load_email_day
from codex_pipeline.warehouse.storage import Warehouse

MBOX = """From ana at example.org  Mon Apr  3 10:00:00 2017
From: ana at example.org (Ana Ruiz)
Date: Mon, 3 Apr 2017 10:00:00 +0000
Subject: [list] Sidewalk budget
Message-ID: <a1@example.org>

The sidewalk list has 212 panels at 61 addresses.
We estimate $184,000 against a budget of $200,000.

From ben at example.org  Mon Apr  3 11:00:00 2017
From: ben at example.org (Ben Cho)
Date: Mon, 3 Apr 2017 11:00:00 +0000
Subject: Re: [list] Sidewalk budget
Message-ID: <b2@example.org>
In-Reply-To: <a1@example.org>

> The sidewalk list has 212 panels at 61 addresses.
> We estimate $184,000 against a budget of $200,000.

Curb ramps at Elm and 4th take the remaining $16,000.
"""


def test_scores_are_character_sets_per_file() -> None:
    s = score({"a.txt": [(0, 10), (5, 15)]}, {"a.txt": [(10, 20)]})  # retrieved 0..15 (overlap counted once)
    assert (s.recall, s.precision, s.hit) == (0.5, 5 / 15, True)
    assert s.iou == pytest.approx(5 / 20)
    miss = score({"b.txt": [(10, 20)]}, {"a.txt": [(10, 20)]})  # same offsets, other file: no credit
    assert (miss.recall, miss.iou, miss.hit) == (0.0, 0.0, False)
    summary = summarize([s, miss])
    assert summary.recall == pytest.approx(25.0) and summary.hit_at_k == pytest.approx(50.0)


def test_identity_map_for_a_file_that_is_its_canonical_text(tmp_path: Path) -> None:
    from codex_pipeline.core.documents import SourceDocument

    text = "# Title\n\nBody line.\n"
    doc = SourceDocument("urn:aprs:docs:a.md", "a.md", text, "a.md")
    smap = build_source_map(doc, {"docs/a.md": text}, "docs")
    assert smap.coverage == 1.0
    assert smap.map([(9, 19)]) == {"docs/a.md": [(9, 19)]}


def test_email_thread_maps_body_lines_back_to_the_mbox(tmp_path: Path) -> None:
    day = tmp_path / "corpus"
    day.mkdir()
    (day / "list.mbox").write_text(MBOX)
    file_text = read_source(day / "list.mbox")
    (doc,) = load_email_day(day).documents
    smap = build_source_map(doc, {"list.mbox": file_text})
    for line in ("We estimate $184,000 against a budget of $200,000.", "Curb ramps at Elm and 4th take the remaining $16,000."):
        at = doc.text.index(line)
        ((f, ranges),) = smap.map([(at, at + len(line))]).items()
        assert f == "list.mbox" and [file_text[s:e] for s, e in ranges] == [line]
    # the reply's quote is a reference line in the thread text: it has no place in the file and maps to nothing
    quote_ref = next(line for line in doc.text.splitlines() if line.startswith("[quoting"))
    at = doc.text.index(quote_ref)
    assert smap.map([(at, at + len(quote_ref))]) == {}
    # the first message's line maps into the first message, not into the reply's quoted copy
    first = doc.text.index("The sidewalk list has 212 panels")
    (ranges,) = smap.map([(first, first + 10)]).values()
    assert ranges[0][0] < file_text.index("From ben")


def test_gold_errors_name_the_line_and_the_fix(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("hello world\n")
    gold = tmp_path / "gold.jsonl"
    gold.write_text(json.dumps({"question": "q", "references": [{"source": "a.txt", "start": 0, "end": 5}]}) + "\n")
    assert load_gold(gold, tmp_path)[0].references[0].end == 5
    gold.write_text(json.dumps({"question": "q", "references": [{"source": "a.txt", "start": 0, "end": 99}]}) + "\n")
    with pytest.raises(GoldError, match=r"gold.jsonl:1 reference 1: end 99 is past the end of a.txt"):
        load_gold(gold, tmp_path)
    gold.write_text(json.dumps({"question": "q", "references": [{"source": "b.txt", "start": 0, "end": 1}]}) + "\n")
    with pytest.raises(GoldError, match="is not a file under"):
        load_gold(gold, tmp_path)


def test_units_pack_sentences_and_keep_the_gap_between_turns() -> None:
    text = " ".join(f"Sentence number {i} says something about the budget." for i in range(40))
    units = split_units(text, [(0, len(text))], budget=40)
    assert len(units) > 1
    covered = [text[s:e] for u in units for s, e in u]
    assert " ".join(covered) == text  # every sentence in exactly one unit, in order
    turns = "A:\nText: one.\n---\nA:\nText: two."
    spans = [(turns.index("one."), turns.index("one.") + 4), (turns.index("two."), len(turns))]
    assert split_units(turns, spans) == [tuple(spans)]  # a gap with text stays a gap


def test_one_dataset_landed_from_two_folders_maps_each_file_under_its_own(tmp_path: Path) -> None:
    fixtures = Path(__file__).resolve().parents[1] / "fixtures" / "meetings"
    corpus = tmp_path / "corpus"
    for folder, name in (("agendas", "2026-03-10-riverton-agenda.txt"),
                         ("captions", "2026-03-10-riverton-meeting.captions.txt")):
        (corpus / folder).mkdir(parents=True)
        shutil.copy(fixtures / name, corpus / folder / name)
    parts = [CorpusPart.parse("civic_intelligence=captions"), CorpusPart.parse("civic_intelligence=agendas")]
    wh = Warehouse(tmp_path / "data")
    day = dt.date(2026, 11, 24)
    assert land_corpus(wh, parts, corpus, day) == {"civic_intelligence": 2}
    maps = source_maps(wh, DatasetRegistry.build(CodexSettings(data_dir=wh.root)), parts, corpus, day)
    files = sorted(f for smap in maps.values() for f in smap.map([(0, 20)]))
    assert files == ["agendas/2026-03-10-riverton-agenda.txt", "captions/2026-03-10-riverton-meeting.captions.txt"]
