"""Columns in OCR readings (``sources.ocr_layout``): a one-block reading across a gutter, confirmed by the
automatic segmentation, is replaced by it; pages that only look like it keep their one-block reading."""

from __future__ import annotations

import re
import shutil
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pypdfium2 as pdfium
import pytest

from codex_pipeline.sources.ocr_layout import gutter, side_by_side, tsv_words
from codex_pipeline.sources.pdf_ocr import SETTINGS, OcrError, OcrSettings, ocr_pgm, render_pgm, tesseract_tsv
from codex_pipeline_tests.conftest import CORPORA, needs_corpus

HEAD = "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext"
FEDERAL_REGISTER = CORPORA / "pdf" / "pdfplumber-fixtures" / "federal-register-2020-17221.pdf"


def _tsv(words: list[tuple[int, int, int, int, str]]) -> str:
    """Words as (block, line, left, top, text), 40 px wide, 30 px high, confidence 90."""
    rows = [f"5\t1\t{b}\t1\t{ln}\t{i}\t{left}\t{top}\t40\t30\t90\t{text}" for i, (b, ln, left, top, text) in enumerate(words)]
    return "\n".join([HEAD, *rows])


def _two_columns_as_one_block(lines: int = 20) -> str:
    """What --psm 6 makes of a two-column page: each line runs from the left column into the right one."""
    words = []
    for ln in range(lines):
        words += [(1, ln, x, 100 + 40 * ln, "word") for x in (100, 150, 200, 250)]  # left column: 100-290
        words += [(1, ln, x, 100 + 40 * ln, "text") for x in (500, 550, 600, 650)]  # right column: 500-690
    return _tsv(words)


def _two_columns_as_blocks(lines: int = 20) -> str:
    """What --psm 3 makes of it: one block per column, in reading order."""
    left = [(1, ln, x, 100 + 40 * ln, "word") for ln in range(lines) for x in (100, 150, 200, 250)]
    right = [(2, ln, x, 100 + 40 * ln, "text") for ln in range(lines) for x in (500, 550, 600, 650)]
    return _tsv(left + right)


def test_a_one_block_reading_across_a_gutter_is_found_and_a_single_column_is_not() -> None:
    assert gutter(tsv_words(_two_columns_as_one_block()))
    ragged = [(1, ln, 100 + ln * 13 % 45 + 50 * k, 100 + 40 * ln, "word") for ln in range(20) for k in range(12)]
    assert not gutter(tsv_words(_tsv(ragged)))  # word gaps move from line to line: no strip stays empty
    # a gutter with almost every word on one side (a page number off to the right) is no column break
    lopsided = _tsv([(1, ln, 100 + ln * 13 % 45 + 50 * k, 100 + 40 * ln, "word") for ln in range(20) for k in range(4)]
                    + [(1, 20, 650, 900, "word")])
    assert not gutter(tsv_words(lopsided))


def test_blocks_side_by_side_hold_the_lines_of_a_page_in_columns_and_not_of_stacked_or_short_blocks() -> None:
    assert side_by_side(tsv_words(_two_columns_as_blocks())) == 1.0
    stacked = _tsv([(1, ln, x, 100 + 40 * ln, "word") for ln in range(10) for x in (100, 150)]
                   + [(2, ln, x, 600 + 40 * ln, "text") for ln in range(10) for x in (100, 150)])
    assert side_by_side(tsv_words(stacked)) == 0.0
    signatures = _tsv([(1, ln, x, 100 + 40 * ln, "body") for ln in range(20) for x in range(100, 700, 50)]
                      + [(2, ln, 100, 1000 + 40 * ln, "Mayor") for ln in range(3)]
                      + [(3, ln, 500, 1000 + 40 * ln, "Recorder") for ln in range(3)])
    assert side_by_side(tsv_words(signatures)) == 0.0  # two short blocks side by side: a signature page


def test_the_automatic_reading_replaces_the_one_block_reading_only_when_both_see_columns() -> None:
    calls: list[int] = []

    def reads(automatic: str) -> Callable[[bytes, str, int], str]:
        def tsv_of(pgm: bytes, lang: str, psm: int) -> str:
            calls.append(psm)
            return _two_columns_as_one_block() if psm == 6 else automatic
        return tsv_of

    got = ocr_pgm(b"", 792, settings=SETTINGS, tsv_of=reads(_two_columns_as_blocks()))
    assert got.columns and calls == [6, 3]
    assert [ln.text for ln in got.lines[:2]] == ["word word word word"] * 2  # column by column
    calls.clear()
    single = _tsv([(1, 0, x, 100, "word") for x in range(100, 700, 50)])
    got = ocr_pgm(b"", 792, settings=SETTINGS, tsv_of=reads(single))
    assert not got.columns and calls == [6, 3] and got.lines[0].text == "word word word word text text text text"
    calls.clear()
    assert not ocr_pgm(b"", 792, settings=OcrSettings(400, 6), tsv_of=reads(_two_columns_as_blocks())).columns
    assert calls == [6]  # columns_psm unset: the one-block reading stands, no second run


def test_a_columns_reading_under_the_confidence_floor_is_not_kept_and_no_segmentation_runs_twice() -> None:
    calls: list[int] = []

    def low(conf: int, automatic: str) -> Callable[[bytes, str, int], str]:
        def tsv_of(pgm: bytes, lang: str, run: int) -> str:
            calls.append(run)
            return _two_columns_as_one_block() if run == 6 else automatic.replace("\t90\t", f"\t{conf}\t")
        return tsv_of

    got = ocr_pgm(b"", 792, settings=SETTINGS, tsv_of=low(30, _two_columns_as_blocks()))
    assert not got.columns and got.confidence == 90.0 and calls == [6, 3]  # the one-block reading stands
    calls.clear()

    def dim(pgm: bytes, lang: str, run: int) -> str:  # one block read at 40 (under the floor), --psm 3 at 60
        calls.append(run)
        tsv = _two_columns_as_one_block() if run == 6 else _tsv([(1, 0, x, 100, "word") for x in range(100, 700, 50)])
        return tsv.replace("\t90\t", "\t40\t" if run == 6 else "\t60\t")

    got = ocr_pgm(b"", 792, settings=SETTINGS, tsv_of=dim)
    assert got.confidence == 60.0 and not got.columns and calls == [6, 3]  # the fallback reuses the --psm 3 run


def test_a_missing_tesseract_is_named_in_the_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(OcrError, match="tesseract could not run \\(not found on PATH"):
        tesseract_tsv(b"P5 1 1 255 ", "eng", 6)


def _bigram_f1(a: str, b: str) -> float:
    def grams(t: str) -> Counter[tuple[str, str]]:
        w = re.findall(r"\w+", t.lower())
        return Counter(zip(w, w[1:]))
    x, y = grams(a), grams(b)
    return 2 * sum((x & y).values()) / (sum(x.values()) + sum(y.values()))


@pytest.mark.skipif(shutil.which("tesseract") is None, reason="tesseract-ocr not installed (scripts/install_ocr.sh)")
@needs_corpus(FEDERAL_REGISTER)
def test_a_three_column_page_rendered_and_read_by_ocr_follows_its_columns() -> None:
    """Page 1 of the Federal Register notice, rendered as a scan would be: its text layer is the reference."""
    pdf = pdfium.PdfDocument(FEDERAL_REGISTER)
    page = pdf[1]
    tp = page.get_textpage()
    layer = tp.get_text_range()
    tp.close()
    pgm, height = render_pgm(page), page.get_size()[1]
    page.close()
    runs: dict[int, str] = {}

    def tsv_of(image: bytes, lang: str, psm: int) -> str:  # each segmentation run once
        return runs.setdefault(psm, tesseract_tsv(image, lang, psm)) if psm not in runs else runs[psm]

    got = ocr_pgm(pgm, height, tsv_of=tsv_of)
    one_block = ocr_pgm(pgm, height, settings=OcrSettings(400, 6, fallback_psm=3, noise_confidence=80), tsv_of=tsv_of)
    pdf.close()
    text = "\n".join(ln.text for ln in got.lines)
    assert got.columns and not one_block.columns
    assert _bigram_f1(text, layer) > 0.9 > _bigram_f1("\n".join(ln.text for ln in one_block.lines), layer)
