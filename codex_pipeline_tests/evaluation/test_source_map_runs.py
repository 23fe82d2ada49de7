"""Source maps join lines that follow each other in both texts, so a passage of several lines maps whole.

Before issue 26 each line was its own segment: the newlines between the lines of an
email answer mapped to nothing, and a gold span over two paragraphs could never be
recalled fully (35 of the 49 email dev references were capped at 96-99%).
"""

from __future__ import annotations

from pathlib import Path

from codex_pipeline.evaluation.gold import read_source
from codex_pipeline.evaluation.metrics import score
from codex_pipeline.evaluation.source_map import build_source_map
from codex_pipeline.sources.email.reader import load_email_day

MBOX = """From ana at example.org  Mon Apr  3 10:00:00 2017
From: ana at example.org (Ana Ruiz)
Date: Mon, 3 Apr 2017 10:00:00 +0000
Subject: [list] Sidewalk budget
Message-ID: <a1@example.org>

The sidewalk list has 212 panels at 61 addresses.
We estimate $184,000 against a budget of $200,000.

Curb ramps at Elm and 4th take the remaining $16,000.
"""


def test_a_passage_over_lines_and_paragraphs_maps_to_one_file_range(tmp_path: Path) -> None:
    (tmp_path / "list.mbox").write_text(MBOX)
    file_text = read_source(tmp_path / "list.mbox")
    (doc,) = load_email_day(tmp_path).documents
    smap = build_source_map(doc, {"list.mbox": file_text})
    first, last = "The sidewalk list has 212 panels", "the remaining $16,000."
    c0, c1 = doc.text.index(first), doc.text.index(last) + len(last)
    f0, f1 = file_text.index(first), file_text.index(last) + len(last)
    assert smap.map([(c0, c1)]) == {"list.mbox": [(f0, f1)]}  # newlines and the blank line included
    assert score(smap.map([(c0, c1)]), {"list.mbox": [(f0, f1)]}).recall == 1.0
    # a line the file does not hold verbatim (the rendered header) still breaks the run: it maps to nothing
    header = doc.text.index("Subject:") if "Subject:" in doc.text else None
    if header is not None:
        assert smap.map([(header, header + 8)]) == {}
