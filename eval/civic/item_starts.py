"""Score predicted agenda-item starts against hand labels (eval/civic/*.item-starts.jsonl).

A label file holds one agenda item a line, in agenda order::

    {"item": "9.a", "title": "...", "start_line": 173, "start_char": 9876, "quote": "...", "note": "..."}

``start_line`` is 1-based in the caption file; ``start_char`` is the offset of that line's first
character in ``open(path, encoding="utf-8").read()``. Items with ``"start_line": null`` were
skipped, deleted or had no business; they are left out of recall. Items taken in a consent group
carry ``"grouped_with": "<leader item>"`` and a null start: naming one of them near the group's
start counts as naming the group.

Distances are counted in caption lines: the bare ``[HH:MM:SS]`` stamps and blank lines are not
captions, and a stamp or blank line counts as the caption after it.

Scores (a prediction is an ``(item, start_char)`` pair):

* item precision: predictions naming a labelled item (or a member of its group) whose labelled
  start is within ``tolerance_lines`` caption lines of the prediction's line, over all predictions;
* item recall: labelled (non-null) items named by at least one correct prediction, over them all;
* boundary precision: predictions within tolerance of any labelled start, whatever they name;
* boundary recall: distinct labelled start lines with a prediction within tolerance, over the
  distinct labelled start lines (4 and 4.a share a line and count once here).

Usage::

    python eval/civic/item_starts.py --labels eval/civic/huntsville-2026-06-11.item-starts.jsonl \
        --predicted pred.jsonl [--text CAPTIONS] [--tolerance 3] [--json]
    python eval/civic/item_starts.py --labels ... --check      # verify start_char / quote

``--predicted`` is a JSONL of ``{"item": "9.a", "start_char": 9876}``. ``--text`` defaults to the
Huntsville captions file the labels were made on (``CAPTIONS`` below).
"""

from __future__ import annotations

import argparse
import bisect
import json
import re
import sys
from pathlib import Path

CORPORA = Path(__file__).resolve().parents[3] / "shared" / "corpora"  # ../shared beside the repository
CAPTIONS = CORPORA / "council_captions/huntsville-al/2026-06-11-city-council-meeting.captions.txt"
_STAMP = re.compile(r"^\[\d{2}:\d{2}:\d{2}\]$")


def load_labels(path) -> list[dict]:
    """The label objects of a JSONL file, in file (agenda) order."""
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _line_starts(text: str) -> list[int]:
    starts = [0]
    for i, ch in enumerate(text):
        if ch == "\n":
            starts.append(i + 1)
    return starts


def _caption_index(text: str) -> list[int]:
    """For each 1-based file line (index 0 unused), its caption-line number.

    Caption lines are numbered 0, 1, 2 ... skipping blank lines and [HH:MM:SS] stamps; such a
    line gets the number of the caption after it.
    """
    lines = text.split("\n")
    index = [0] * (len(lines) + 1)
    count = sum(1 for line in lines if line.strip() and not _STAMP.match(line.strip()))
    nxt = count  # past the last caption
    for n in range(len(lines), 0, -1):
        line = lines[n - 1].strip()
        if line and not _STAMP.match(line):
            nxt -= 1
        index[n] = nxt
    return index


def line_of(offset: int, starts: list[int]) -> int:
    """1-based line of a character offset."""
    return bisect.bisect_right(starts, offset)


def check_labels(labels: list[dict], text: str) -> list[str]:
    """Problems with the labels' offsets and quotes (empty when all agree with the text)."""
    starts = _line_starts(text)
    lines = text.split("\n")
    known = {lab["item"] for lab in labels}
    problems = []
    for lab in labels:
        ln = lab.get("start_line")
        if ln is None:
            if not lab.get("note") and not lab.get("grouped_with"):
                problems.append(f"{lab['item']}: null start without a reason")
            if lab.get("grouped_with") and lab["grouped_with"] not in known:
                problems.append(f"{lab['item']}: grouped_with an unknown item")
            continue
        sc, quote = lab["start_char"], lab["quote"]
        if sc != starts[ln - 1]:
            problems.append(f"{lab['item']}: start_char {sc} is not the start of line {ln}")
        if not text[sc:].startswith(quote) or lines[ln - 1] != quote:
            problems.append(f"{lab['item']}: quote does not match line {ln}")
    return problems


def score(predicted: list[tuple[str, int]], labels: list[dict], tolerance_lines: int = 3,
          text: str | None = None) -> dict:
    """Precision and recall of predicted (item, char offset) starts; see the module docstring."""
    if text is None:
        text = CAPTIONS.read_text(encoding="utf-8")
    starts = _line_starts(text)
    cap = _caption_index(text)
    by_item = {lab["item"]: lab for lab in labels}
    labelled = {lab["item"]: lab["start_line"] for lab in labels if lab.get("start_line") is not None}
    start_lines = sorted(set(labelled.values()))

    def near(pred_line: int, label_line: int) -> bool:
        return abs(cap[pred_line] - cap[label_line]) <= tolerance_lines

    item_hits, found_items, boundary_hits, found_lines = 0, set(), 0, set()
    details = []
    for item, offset in predicted:
        pl = line_of(offset, starts)
        target = item
        lab = by_item.get(item)
        if lab is not None and lab.get("start_line") is None and lab.get("grouped_with"):
            target = lab["grouped_with"]
        ok_item = target in labelled and near(pl, labelled[target])
        if ok_item:
            item_hits += 1
            found_items.add(target)
        close = [sl for sl in start_lines if near(pl, sl)]
        if close:
            boundary_hits += 1
            found_lines.update(close)
        details.append({"item": item, "start_char": offset, "line": pl,
                        "item_correct": ok_item, "boundary_correct": bool(close)})

    def ratio(a: int, b: int) -> float:
        return a / b if b else 0.0

    n = len(predicted)
    return {
        "tolerance_lines": tolerance_lines,
        "predicted": n,
        "labelled_items": len(labelled),
        "labelled_start_lines": len(start_lines),
        "item_precision": ratio(item_hits, n),
        "item_recall": ratio(len(found_items), len(labelled)),
        "boundary_precision": ratio(boundary_hits, n),
        "boundary_recall": ratio(len(found_lines), len(start_lines)),
        "missed_items": [i for i in labelled if i not in found_items],
        "details": details,
    }


def load_predicted(path) -> list[tuple[str, int]]:
    with open(path, encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    return [(str(row["item"]), int(row["start_char"])) for row in rows]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--labels", required=True)
    parser.add_argument("--predicted", help='JSONL of {"item", "start_char"}')
    parser.add_argument("--text", default=str(CAPTIONS), help="the captions file labelled")
    parser.add_argument("--tolerance", type=int, default=3, help="caption lines (default 3)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--check", action="store_true", help="verify the labels' offsets")
    args = parser.parse_args(argv)

    labels = load_labels(args.labels)
    text = Path(args.text).read_text(encoding="utf-8")
    if args.check:
        problems = check_labels(labels, text)
        for p in problems:
            print(p)
        n = sum(1 for lab in labels if lab.get("start_line") is not None)
        print(f"{len(labels)} items, {n} with a start, {len(problems)} problems")
        if not args.predicted:
            return 1 if problems else 0
    if not args.predicted:
        parser.error("--predicted is required unless --check")
    result = score(load_predicted(args.predicted), labels, args.tolerance, text)
    if args.json:
        print(json.dumps({k: v for k, v in result.items() if k != "details"}, indent=2))
    else:
        print(f"tolerance {result['tolerance_lines']} caption lines; "
              f"{result['predicted']} predicted, {result['labelled_items']} labelled items "
              f"({result['labelled_start_lines']} distinct start lines)")
        print(f"item      precision {100 * result['item_precision']:5.1f}  "
              f"recall {100 * result['item_recall']:5.1f}")
        print(f"boundary  precision {100 * result['boundary_precision']:5.1f}  "
              f"recall {100 * result['boundary_recall']:5.1f}")
        if result["missed_items"]:
            print("missed: " + " ".join(result["missed_items"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
