"""OCR character error rate of the documents reader on the Rivergrove typewritten scans.

Every page of the seven transcribed PDFs of ``../shared/corpora/pdf/rivergrove-or`` (four scans
with no text layer, three with a noisy OCR layer, which is ignored here: its page image is read) is
rendered and read by ``codex_pipeline.sources.pdf_ocr`` under each setting of a grid (render DPI,
Otsu binarization, tesseract ``--psm``, the fallback ``--psm``, the confidence under which a word with
no letter or digit is dropped); the OCR pages' lines are joined as the reader's canonical
text joins them and compared with the hand transcriptions in ``transcriptions/``. Both sides are
lower-cased, Markdown marks and ``{{…}}`` wrappers removed (``{{filled:12th}}`` keeps ``12th``),
whitespace collapsed.

- ``CER`` = edit distance / reference length (the issue's measure; OCR of what the transcriptions
  leave out, stamps, signature blocks, a second page, counts as insertions);
- ``on transcribed`` = the same with insertions free (errors on the text the transcriptions hold).

The transcriptions are per document, so the CER is per document (its pages listed) and overall
(summed edit distances / summed lengths). For the OCR-layer files the layer's own CER is printed
too (what the reader would keep without re-reading). Settings are chosen by leave-one-document-out:
for each document the setting with the lowest overall CER on the other six is scored on it; the LOCO CER
sums those held-out scores, once choosing by CER and once by the on-transcribed error. Nothing is
tuned on the gold text beyond choosing among the grid. Tesseract's TSV of every page is cached by
image and ``--psm`` under ``--cache``, so settings that differ only after tesseract cost nothing.

    python bench/bench_ocr.py --jobs 2                     # the whole grid
    python bench/bench_ocr.py --grid 300:3:0,400:6:0:3:80:3  # dpi:psm:otsu[:fallback psm[:noise confidence[:columns psm]]]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pypdfium2 as pdfium

from codex_pipeline.sources.pdf_ocr import SETTINGS, OcrSettings, engine_version, ocr_pgm, render_pgm, tesseract_tsv

CORPUS = Path(__file__).resolve().parents[2] / "shared/corpora/pdf/rivergrove-or"
DOCS = sorted(p.stem for p in (CORPUS / "transcriptions").glob("*.md"))
GRID = [OcrSettings(dpi, psm, otsu) for dpi in (300, 400) for otsu in (False, True) for psm in (3, 4, 6)] + [
    OcrSettings(400, 6, fallback_psm=3, noise_confidence=noise) for noise in (0, 20, 40, 60, 80, 101)]


TsvOf = Callable[[bytes, str, int], str]
"""What ``ocr_pgm`` calls to run tesseract: (page image, language, --psm) -> TSV."""


def pdf_of(name: str) -> Path:
    return next(CORPUS.glob(f"{name}_*.pdf"))


def cached_tesseract(cache_dir: Path) -> TsvOf:
    """Tesseract's TSV for a page image and --psm, kept on disk by the image's hash."""
    cache_dir.mkdir(parents=True, exist_ok=True)

    def tsv_of(pgm: bytes, lang: str, psm: int) -> str:
        path = cache_dir / f"{hashlib.sha256(pgm).hexdigest()[:24]}-{lang}-psm{psm}.tsv"
        if not path.exists():
            started = time.perf_counter()
            path.write_text(tesseract_tsv(pgm, lang, psm))
            TESSERACT_SECONDS.append(time.perf_counter() - started)
        return path.read_text()
    return tsv_of


TESSERACT_SECONDS: list[float] = []
"""Seconds of every tesseract run this process made (uncached), for the speed of a setting."""


def layer_text(name: str) -> str | None:
    """The text of an OCR-layer file's own layer (None for a scan with no text)."""
    if "_OCRLAYER" not in pdf_of(name).name:
        return None
    pdf = pdfium.PdfDocument(pdf_of(name))
    text = "\n\n".join(pdf[i].get_textpage().get_text_range() for i in range(len(pdf)))
    pdf.close()
    return text


def normalize(text: str) -> str:
    text = re.sub(r"\{\{filled:([^}]*)\}\}", r"\1", text)
    return " ".join(re.sub(r"\{\{[^}]*\}\}|[#*_>|`]", " ", text).lower().split())


def edit_distance(hyp: str, ref: str, insertion: int = 1) -> int:
    """Levenshtein distance, one numpy row per reference character (``insertion=0``: extra OCR text free)."""
    h = np.frombuffer(hyp.encode("utf-32-le"), dtype=np.uint32)
    cols = np.arange(len(h) + 1, dtype=np.int64)
    row = cols * insertion
    for i, c in enumerate(ref, 1):
        code = ord(c)
        tmp = np.empty_like(row)
        tmp[0] = i
        tmp[1:] = np.minimum(row[1:] + 1, row[:-1] + (h != code))
        # insertions chain along the row: row[j] = min(tmp[j], row[j-1] + insertion)
        row = np.minimum.accumulate(tmp - cols * insertion) + cols * insertion
    return int(row[-1])


def read_doc(name: str, settings: OcrSettings, pool: ThreadPoolExecutor, tsv_of: TsvOf) -> tuple[str, int, float]:
    """The document's OCR text (pages joined by an empty line), its page count, seconds."""
    pdf = pdfium.PdfDocument(pdf_of(name))
    started = time.perf_counter()
    jobs = []
    for i in range(len(pdf)):
        page = pdf[i]
        pgm = render_pgm(page, settings)
        jobs.append(pool.submit(ocr_pgm, pgm, page.get_size()[1], "eng", settings, tsv_of))
        page.close()
    pages = ["\n".join(line.text for line in job.result().lines) for job in jobs]
    n = len(pdf)
    pdf.close()
    return "\n\n".join(pages), n, time.perf_counter() - started


def scores(hyp: str, name: str) -> dict:
    ref = normalize((CORPUS / "transcriptions" / f"{name}.md").read_text())
    hyp = normalize(hyp)
    return {"ref": len(ref), "edits": edit_distance(hyp, ref), "edits_transcribed": edit_distance(hyp, ref, 0)}


def measure(settings: OcrSettings, cache: dict, pool: ThreadPoolExecutor, tsv_of: TsvOf) -> dict[str, dict]:
    out = {}
    for name in DOCS:
        key = f"{settings.tag}|{name}"
        if key not in cache:
            text, pages, secs = read_doc(name, settings, pool, tsv_of)
            cache[key] = {"pages": pages, "seconds": round(secs, 2), **scores(text, name)}
        out[name] = cache[key]
    return out


def overall(results: dict[str, dict], names: list[str], field: str = "edits") -> float:
    return sum(results[n][field] for n in names) / sum(results[n]["ref"] for n in names)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--grid", help="dpi:psm:otsu[:fallback psm[:noise confidence[:columns psm]]],… "
                    "(default: 300/400 × psm 3/4/6 × grey/Otsu, and the adopted one × noise 0–101)")
    ap.add_argument("--jobs", type=int, default=1, help="pages read at once (tesseract processes)")
    ap.add_argument("--cache", type=Path, default=Path("/tmp/bench_ocr_cache"), help="folder of scores and TSVs")
    args = ap.parse_args()
    grid = GRID if not args.grid else [
        OcrSettings(int(f[0]), int(f[1]), f[2] == "1", int(f[3]) if len(f) > 3 and f[3] else None,
                    float(f[4]) if len(f) > 4 and f[4] else 0.0, int(f[5]) if len(f) > 5 and f[5] else None)
        for f in (g.split(":") for g in args.grid.split(","))]
    scores_file = args.cache / "scores.json"
    tsv_of = cached_tesseract(args.cache / "tsv")
    cache = json.loads(scores_file.read_text()) if scores_file.exists() else {}
    print(f"{engine_version()}; adopted in pdf_ocr: {SETTINGS.tag}")
    for name in DOCS:
        layer = layer_text(name)
        if layer is not None:
            if f"layer|{name}" not in cache:  # (setdefault would score it on every run)
                cache[f"layer|{name}"] = scores(layer, name)
            got = cache[f"layer|{name}"]
            print(f"{name}: its own OCR layer CER {got['edits'] / got['ref']:.3f}, on transcribed "
                  f"{got['edits_transcribed'] / got['ref']:.3f}")
    table: dict[str, dict[str, dict]] = {}
    with ThreadPoolExecutor(args.jobs) as pool:
        for settings in grid:
            TESSERACT_SECONDS.clear()
            table[settings.tag] = measure(settings, cache, pool, tsv_of)
            if TESSERACT_SECONDS:
                print(f"  {len(TESSERACT_SECONDS)} tesseract runs, {sum(TESSERACT_SECONDS) / len(TESSERACT_SECONDS):.2f} s each")
            scores_file.write_text(json.dumps(cache))
            r = table[settings.tag]
            pages = sum(v["pages"] for v in r.values())
            secs = sum(v["seconds"] for v in r.values())
            per_doc = "  ".join(f"{n[:12]}({r[n]['pages']}p) {r[n]['edits'] / r[n]['ref']:.3f}" for n in DOCS)
            print(f"{settings.tag:<18} CER {overall(r, DOCS):.3f}  on transcribed "
                  f"{overall(r, DOCS, 'edits_transcribed'):.3f}  {pages / secs:.2f} pages/s  | {per_doc}", flush=True)
    ref_total = sum(table[next(iter(table))][n]["ref"] for n in DOCS)
    for field, label in (("edits", "CER"), ("edits_transcribed", "on transcribed")):
        loco_edits = loco_ins = 0
        for held in DOCS:
            rest = [n for n in DOCS if n != held]
            best = min(table, key=lambda tag: overall(table[tag], rest, field))  # noqa: B023 - used at once
            loco_edits += table[best][held]["edits"]
            loco_ins += table[best][held]["edits_transcribed"]
            print(f"choosing by {label}: held out {held}: chosen on the others {best}, its CER "
                  f"{table[best][held]['edits'] / table[best][held]['ref']:.3f}, on transcribed "
                  f"{table[best][held]['edits_transcribed'] / table[best][held]['ref']:.3f}")
        print(f"choosing by {label}: LOCO CER {loco_edits / ref_total:.3f}  on transcribed {loco_ins / ref_total:.3f}  "
              f"({ref_total} reference characters); chosen on all: "
              f"{min(table, key=lambda tag: overall(table[tag], DOCS, field))}")

if __name__ == "__main__":
    main()
