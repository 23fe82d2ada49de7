"""Small PDFs written byte by byte for the reader's edge cases (no PDF library needed to make them).

A page is a list of ``(x, y, size, text)`` lines in Helvetica (a standard font every reader
has), or the string ``"image"`` for a page that holds only a 1×1 image (a scan's shape), or raw
content-stream bytes.
"""

from __future__ import annotations

from collections.abc import Sequence

Line = tuple[float, float, float, str]
Page = Sequence[Line] | str | bytes


IMAGE = b"q 200 0 0 200 100 300 cm /Im1 Do Q"
"""Draws the 1×1 image over a 200-point square."""


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def content(lines: Sequence[Line]) -> bytes:
    ops = [f"BT /F1 {size} Tf 1 0 0 1 {x} {y} Tm ({_escape(text)}) Tj ET" for x, y, size, text in lines]
    return "\n".join(ops).encode("latin-1")


def make_pdf(pages: Sequence[Page], *, catalog_extra: str = "", trailer_extra: str = "",
             extra_objects: Sequence[bytes] = (), shared_content: bool = False, page_extra: str = "",
             pages_extra: str = "", media_box: str = "[0 0 612 792]") -> bytes:
    """A PDF with one page per item of ``pages``; ``shared_content``: all pages draw ``pages[0]``; ``page_extra``:
    entries added to every page dictionary (``/Rotate 90``, ``/CropBox [0 100 612 792]``), ``pages_extra`` to the
    page tree's, which its pages inherit; ``media_box`` "" leaves it to the page tree."""
    objs: list[bytes] = []  # objects 1.. in order; 1 catalog, 2 pages, 3 font, 4 image, then extras, then pages

    def add(body: bytes) -> int:
        objs.append(body)
        return len(objs)

    add(b"")  # catalog, filled in below
    add(b"")  # pages
    add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
    add(b"<< /Type /XObject /Subtype /Image /Width 1 /Height 1 /ColorSpace /DeviceGray /BitsPerComponent 8 "
        b"/Length 1 >>\nstream\n\x80\nendstream")
    for extra in extra_objects:
        add(extra)
    kids = []
    shared = None
    for page in pages:
        if shared_content and shared is not None:
            stream_id = shared
        else:
            data = (IMAGE if page == "image" else page if isinstance(page, bytes)
                    else content(page))  # type: ignore[arg-type]
            stream_id = add(b"<< /Length %d >>\nstream\n" % len(data) + data + b"\nendstream")
            shared = stream_id
        box = f"/MediaBox {media_box} " if media_box else ""
        kids.append(add(b"<< /Type /Page /Parent 2 0 R %s/Contents %d 0 R %s"
                        b"/Resources << /Font << /F1 3 0 R >> /XObject << /Im1 4 0 R >> >> >>"
                        % (box.encode(), stream_id, page_extra.encode())))
    objs[0] = ("<< /Type /Catalog /Pages 2 0 R " + catalog_extra + " >>").encode()
    objs[1] = ("<< /Type /Pages /Kids [" + " ".join(f"{k} 0 R" for k in kids) + f"] /Count {len(kids)} "
               + pages_extra + " >>").encode()
    out = bytearray(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for i, body in enumerate(objs, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += f"trailer\n<< /Size {len(objs) + 1} /Root 1 0 R {trailer_extra} >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


def text_page(body: Sequence[str], *, header: str | None = None, footer: str | None = None,
              top: float = 720, size: float = 11, gap_every: int = 0) -> list[Line]:
    """Body lines from ``top`` down, a paragraph gap after every ``gap_every`` lines, optional header/footer."""
    lines: list[Line] = []
    if header:
        lines.append((72, 760, 9, header))
    y = top
    for i, text in enumerate(body):
        lines.append((72, y, size, text))
        y -= size * 1.3
        if gap_every and (i + 1) % gap_every == 0:
            y -= size * 1.5
    if footer:
        lines.append((280, 30, 9, footer))
    return lines
