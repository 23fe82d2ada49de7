"""A PDF page as a PNG, for the viewer to draw a passage's boxes on.

The PDF is the landed file itself (``landing/<dataset>/<day>/<source_file>``, the day of the
version shown), resolved and refused unless it lies under the data dir's landing folder:
``source_file`` comes from the data, and the data is not trusted to name paths. pdfium
(pypdfium2, what the documents reader parses PDFs with) renders it; Pillow writes the PNG
(both come with the ``[serve]`` install: pypdfium2 is a runtime dependency, Pillow in the extra).
Pages are rendered at most :data:`MAX_SIDE_PX` pixels on their longer side, and cached.
"""

from __future__ import annotations

import datetime as dt
import functools
import io
from pathlib import Path

from codex_pipeline.serve.lookup import LookupFailed
from codex_pipeline.warehouse.storage import Warehouse

MAX_SIDE_PX = 1600
PDF_MAGIC = b"%PDF-"


def landed_pdf(warehouse: Warehouse, dataset: str, day: dt.date, source_file: str) -> Path:
    """The landed PDF of a document version; LookupFailed(404) when it is not a PDF under the landing folder."""
    base = warehouse.landing_dir(dataset, day).resolve()
    path = (base / source_file).resolve()
    if not path.is_relative_to(warehouse.root.resolve() / "landing") or not path.is_relative_to(base):
        raise LookupFailed(404, f"the source file of this document ({source_file[:80]!r}) is not under the landing folder")
    try:
        with path.open("rb") as f:
            if f.read(len(PDF_MAGIC)) != PDF_MAGIC:
                raise LookupFailed(404, f"{source_file[:80]} is not a PDF: only PDF pages have images")
    except OSError:
        raise LookupFailed(404, f"{source_file[:80]} is no longer in the landing folder ({base})") from None
    return path


def page_png(path: Path, number: int) -> bytes:
    """Page ``number`` (1-based) of the PDF at ``path`` as PNG bytes; LookupFailed(404) past its last page."""
    stat = path.stat()
    return _render(str(path), stat.st_mtime_ns, stat.st_size, number)


@functools.lru_cache(maxsize=64)
def _render(path: str, _mtime: int, _size: int, number: int) -> bytes:
    import pypdfium2 as pdfium
    from PIL import Image

    pdf = pdfium.PdfDocument(path)
    try:
        if not 1 <= number <= len(pdf):
            raise LookupFailed(404, f"page {number}: the document has {len(pdf)} page(s)")
        page = pdf[number - 1]
        width, height = page.get_size()
        scale = min(2.0, MAX_SIDE_PX / max(width, height, 1.0))
        pixels = page.render(scale=scale, rev_byteorder=True).to_numpy()
        buf = io.BytesIO()
        Image.fromarray(pixels[:, :, :3]).save(buf, format="PNG", optimize=False)
        return buf.getvalue()
    finally:
        pdf.close()
