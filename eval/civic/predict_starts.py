"""Codex's agenda-item starts in a transcript, as ``item_starts.py --predicted`` reads them.

    python eval/civic/predict_starts.py --agenda AGENDA.pdf --transcript CAPTIONS.txt > pred.jsonl
    python eval/civic/item_starts.py --labels eval/civic/huntsville-2026-06-11.item-starts.jsonl --predicted pred.jsonl

Lands the agenda and the transcript in one civic_intelligence landing day (a temporary folder)
and runs the reader (``sources.civic.load_civic_day``), as the raw step does; prints the start of
every ``agenda_item`` block of the transcript but the opening stretch, one JSON object a line.
Defaults: the Huntsville 2026-06-11 agenda and captions the hand labels were made on.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

from codex_pipeline.sources.civic import load_civic_day
from codex_pipeline.sources.meetings.reader import OPENING

CORPORA = Path(__file__).resolve().parents[3] / "shared" / "corpora"  # ../shared beside the repository
AGENDA = CORPORA / "pdf/huntsville-al/2026-06-11-city-council-meeting_agenda.pdf"
CAPTIONS = CORPORA / "council_captions/huntsville-al/2026-06-11-city-council-meeting.captions.txt"


def predicted_starts(agenda: Path, transcript: Path) -> list[dict]:
    """``{"item", "start_char"}`` of each item the reader found in ``transcript`` landed beside ``agenda``."""
    with tempfile.TemporaryDirectory() as tmp:
        day = Path(tmp)
        for f in (agenda, transcript):
            shutil.copy(f, day / f.name)
        loaded = load_civic_day(day)
    doc = next(d for d in loaded.documents if d.source_file == transcript.name)
    return [{"item": b.key, "start_char": b.start} for b in doc.blocks_of("agenda_item") if b.key != OPENING]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--agenda", type=Path, default=AGENDA)
    ap.add_argument("--transcript", type=Path, default=CAPTIONS)
    args = ap.parse_args(argv)
    for row in predicted_starts(args.agenda, args.transcript):
        print(json.dumps(row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
