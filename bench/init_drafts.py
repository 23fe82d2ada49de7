"""``codex sources init`` judged as a new user meets it: draft, change nothing but the dataset name, check.

For each real export under ``../shared/corpora/permits`` (when present) and synthetic ones built
here (semicolon Latin-1, UTF-16, UTM-18N Vermont points with a state column, ``$`` money,
``DD-Mon-YYYY`` dates, a crane export with ``CONTRACTOR_n_*`` blocks before its own status and
address), it drafts a ``permit`` mapping, runs ``check`` and prints the share of rows that
would land and the share of landed points inside the city's box, and whether status,
address and applied date came from the right columns.

    python bench/init_drafts.py [--corpora DIR]
"""

from __future__ import annotations

import argparse
import csv
import io
import random
import tempfile
from pathlib import Path

from codex_pipeline.sources.mapping.check import check_file
from codex_pipeline.sources.mapping.draft import draft_mapping
from codex_pipeline.sources.mapping.kinds import load_mapped_dataset

ROOT = Path(__file__).resolve().parents[1]
# export -> (city box lon_min, lat_min, lon_max, lat_max, or None: no coordinates; right status/address/applied columns)
REAL = {
    "calgary_building_permits.csv": ((-114.4, 50.8, -113.8, 51.3), ("statuscurrent", "originaladdress", "applieddate")),
    "seattle_sdci_preapplications.csv": (None, ("Status", "Address", "Created Date")),
    "squamish_bc_building_permits.csv": ((-123.3, 49.6, -123.0, 49.9), ("Status", "House+Street", "Application_Date")),
}
BURLINGTON = (-73.3, 44.4, -73.1, 44.6)
STATUSES = ["ISSUED", "APPROVED", "CLOSED", "FINALED", "IN REVIEW", "EXPIRED"]
STREETS = ["CHURCH ST", "PINE ST", "NORTH AVE", "SHELBURNE RD", "COLLEGE ST", "MAPLE ST", "FLYNN AVE"]


def _csv(rows: list[list[str]], delimiter: str = ",") -> str:
    buf = io.StringIO()
    csv.writer(buf, delimiter=delimiter, lineterminator="\r\n").writerows(rows)
    return buf.getvalue()


def synthetic(folder: Path, n: int = 400) -> dict[str, tuple[tuple[float, float, float, float] | None, tuple[str | None, ...]]]:
    """Odd exports a city might publish, written to ``folder``; the same shape as :data:`REAL`."""
    from pyproj import Transformer

    rng = random.Random(40)
    utm = Transformer.from_crs("EPSG:4326", "EPSG:32618", always_xy=True)
    block = ["NAME", "ADDRESS", "CITY", "STATE", "ZIP", "TYPE", "PHONE"]
    crane = [["PERMIT_NO"] + [f"CONTRACTOR_{k}_{f}" for k in range(1, 16) for f in block]
             + ["STATUS", "SITE_ADDRESS", "INDATE", "ISSUE_DATE", "VALUATION", "X", "Y", "STATE"]]
    for i in range(n):
        lon, lat = rng.uniform(-73.25, -73.18), rng.uniform(44.45, 44.52)
        x, y = utm.transform(lon, lat)
        people = []
        for k in range(1, 16):
            people += ([f"ACME {i % 7} LLC", f"{rng.randint(1, 999)} MAIN ST", "ALBANY", rng.choice(["NY", "VT", "NH"]),
                        f"{rng.randint(1000, 99999):05d}", rng.choice(["GC", "ELEC"]), "802-555-0100"]
                       if k <= 1 + i % 3 else [""] * len(block))
        crane.append([f"CR-{i:05d}"] + people + [rng.choice(STATUSES), f"{rng.randint(1, 400)} {rng.choice(STREETS)}",
                      f"{rng.randint(1, 28):02d}-Jan-2024", f"2024/02/{rng.randint(1, 28):02d}",
                      f"${rng.randint(100, 20000):,}.00", f"{x:.2f}", f"{y:.2f}", "VT"])
    (folder / "burlington_crane_permits.csv").write_text(_csv(crane), encoding="utf-8")
    semi = [["Aktenzeichen", "Straße", "Status", "Eingang", "Kosten"]]
    for i in range(n):
        semi.append([f"BA-{i:04d}", f"{rng.randint(1, 90)} Hauptstraße", rng.choice(["genehmigt", "Approved", "Closed"]),
                     f"{rng.randint(1, 28):02d}.03.2023", f"{rng.randint(1, 900)}"])
    (folder / "semicolon_latin1.csv").write_bytes(_csv(semi, ";").encode("latin-1"))
    u16 = [["Permit Number", "Status", "Address", "Applied Date", "Latitude", "Longitude"]]
    for i in range(n):
        u16.append([f"P{i:05d}", rng.choice(STATUSES), f"{rng.randint(1, 400)} {rng.choice(STREETS)}",
                    f"2025-0{rng.randint(1, 9)}-1{rng.randint(0, 9)} 10:3{rng.randint(0, 9)}:00",
                    f"{rng.uniform(44.45, 44.52):.6f}", f"{rng.uniform(-73.25, -73.18):.6f}"])
    (folder / "utf16_bom.csv").write_text(_csv(u16), encoding="utf-16")
    wa = Transformer.from_crs("EPSG:4326", "EPSG:2926", always_xy=True)  # NAD83(HARN) / Washington North (ftUS)
    sp = [["Application Number", "Current Status", "Site Address", "Application Date", "Issue Date", "X_COORD",
           "Y_COORD", "State"]]
    for i in range(n):
        x, y = wa.transform(rng.uniform(-122.40, -122.26), rng.uniform(47.50, 47.73))
        sp.append([f"63{i:05d}-CN", rng.choice(["Permit Issued", "Completed", "Application Accepted", "Reviews Completed"]),
                   f"{rng.randint(100, 9999)} {rng.choice(['RAINIER AVE S', '15TH AVE NE', 'AURORA AVE N'])}",
                   f"{rng.randint(1, 12)}/{rng.randint(1, 28)}/2023 12:00:00 AM", "", f"{x:.3f}", f"{y:.3f}", "WA"])
    (folder / "seattle_state_plane_feet.csv").write_text(_csv(sp), encoding="utf-8")
    return {"seattle_state_plane_feet.csv": ((-122.45, 47.48, -122.22, 47.74), ("Current Status", "Site Address",
                                                                                  "Application Date")),
            "burlington_crane_permits.csv": (BURLINGTON, ("STATUS", "SITE_ADDRESS", "INDATE")),
            "semicolon_latin1.csv": (None, ("Status", "Straße", "Eingang")),
            "utf16_bom.csv": (BURLINGTON, ("Status", "Address", "Applied Date"))}


def _source(rule: object) -> object:
    """The column a drafted field reads (``A+B`` for joined columns)."""
    if isinstance(rule, dict):
        return rule.get("column") or "+".join(rule.get("columns", ()))
    return rule


def judge(path: Path, box: tuple[float, float, float, float] | None, right: tuple[str | None, ...],
          work: Path, region: tuple[float, float, float, float] | None = None) -> dict[str, object]:
    """Draft (name only; ``region``: as --region), check, and score one export."""
    import yaml

    name = "bench_" + "".join(c if c.isalnum() else "_" for c in path.stem.lower())[:40]
    draft = draft_mapping(path, dataset=name, kind="permit", region=region)
    mpath = work / f"{name}.yaml"
    mpath.write_text(draft.text, encoding="utf-8")
    report = check_file(load_mapped_dataset(mpath), path, 0)
    fields = yaml.safe_load(draft.text)["fields"]
    got = tuple(_source(fields.get(f)) for f in ("status", "address", "applied_date"))
    inside = None
    if box is not None:
        from codex_pipeline.sources.mapping.kinds import kind_parts

        parts = kind_parts(load_mapped_dataset(mpath).mapping, name)
        raw, _ = parts.reader(path, path.parent)
        pts = [(r.data.get("latitude"), r.data.get("longitude")) for r in raw]
        ok = sum(1 for la, lo in pts if la is not None and box[1] <= la <= box[3] and box[0] <= lo <= box[2])
        inside = ok / max(sum(1 for la, _ in pts if la is not None), 1)
    return {"file": path.name, "rows": report.rows, "landed": report.landed,
            "landed_pct": 100 * report.landed / max(report.rows, 1),
            "inside_pct": None if inside is None else 100 * inside,
            "fields_right": [g == r for g, r in zip(got, right) if r is not None], "warnings": draft.warnings}


def main() -> None:
    """Print one line per export, then the totals."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpora", type=Path, default=ROOT.parent / "shared" / "corpora" / "permits")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        cases = {args.corpora / f: v for f, v in REAL.items() if (args.corpora / f).is_file()}
        cases |= {work / f: v for f, v in synthetic(work).items()}
        rows = landed = 0
        print(f"{'export':38} {'rows':>6} {'landed':>7} {'inside city':>11}  status/address/applied right")
        for path, (box, right) in cases.items():
            r = judge(path, box, right, work)
            rows, landed = rows + int(r["rows"]), landed + int(r["landed"])  # type: ignore[call-overload]
            inside = "-" if r["inside_pct"] is None else f"{r['inside_pct']:.1f}%"
            print(f"{path.name:38} {r['rows']:>6} {r['landed_pct']:>6.1f}% {inside:>11}  {r['fields_right']}")
            for w in r["warnings"]:  # type: ignore[attr-defined]
                print(f"    warning: {w[:160]}")
            if box is not None and any("--region" in w for w in r["warnings"]):  # type: ignore[attr-defined]
                again = judge(path, box, right, work, region=box)
                print(f"{'  … again with --region=CITY BOX':38} {'':>6} {again['landed_pct']:>6.1f}% "
                      f"{again['inside_pct'] or 0:>10.1f}%  {again['fields_right']}")
        print(f"{'all':38} {rows:>6} {100 * landed / max(rows, 1):>6.1f}%")
        (work / "one_row_semicolon.csv").write_text("a;b;c\n1;2,5;x\n")
        print("\ndelimiter: init's, csv.Sniffer's, DuckDB sniff_csv's")
        for path in [*cases, work / "one_row_semicolon.csv"]:
            print(f"  {path.name:36} {sniffers(path)}")


def sniffers(path: Path) -> str:
    """The delimiter each sniffer finds in ``path`` (encoding as init sniffs it)."""
    import duckdb

    from codex_pipeline.sources.mapping.sniff import sniff_delimiter, sniff_encoding

    data = path.read_bytes()[: 1 << 20]
    enc = sniff_encoding(data)
    text = data.decode(enc, "replace").lstrip("\ufeff")
    head = text[:65536][: text[:65536].rfind("\n")]
    try:
        theirs = csv.Sniffer().sniff(head, delimiters=",;\t|").delimiter
    except csv.Error:
        theirs = "(none)"
    denc = {"cp1252": "latin-1", "latin-1": "latin-1", "utf-16": "utf-16"}.get(enc, "utf-8")
    try:
        duck = duckdb.execute("select Delimiter from sniff_csv(?, encoding = ?)", [str(path), denc]).fetchall()[0][0]
    except duckdb.Error as exc:
        duck = f"error: {str(exc).splitlines()[0][:40]}"
    return f"encoding {enc:9} init {sniff_delimiter(text)!r:5} csv.Sniffer {theirs!r:5} duckdb {duck!r}"


if __name__ == "__main__":
    main()
