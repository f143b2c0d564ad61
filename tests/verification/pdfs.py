"""Build small text PDFs with pypdf for tests and benchmarks (no binary fixtures)."""

from __future__ import annotations

import io

from pypdf import PdfWriter
from pypdf.generic import (
    ArrayObject,
    DecodedStreamObject,
    DictionaryObject,
    FloatObject,
    NameObject,
)

PAGE_WIDTH, PAGE_HEIGHT = 612, 792


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def text_pdf(
    pages: list[list[str]],
    *,
    outside: dict[int, str] | None = None,
) -> bytes:
    """A PDF whose page i shows the lines pages[i] in Helvetica.

    ``outside`` maps a page index to text drawn beyond the right edge of the
    page's box, which a reader never sees.
    """
    writer = PdfWriter()
    font = DictionaryObject(
        {
            NameObject("/Type"): NameObject("/Font"),
            NameObject("/Subtype"): NameObject("/Type1"),
            NameObject("/BaseFont"): NameObject("/Helvetica"),
            NameObject("/Encoding"): NameObject("/WinAnsiEncoding"),
        }
    )
    font_ref = writer._add_object(font)
    for index, lines in enumerate(pages):
        page = writer.add_blank_page(width=PAGE_WIDTH, height=PAGE_HEIGHT)
        ops = ["BT", "/F1 11 Tf", "14 TL", "72 720 Td"]
        for line in lines:
            ops.append(f"({_escape(line)}) Tj T*")
        ops.append("ET")
        if outside and index in outside:
            ops += [
                "BT",
                "/F1 11 Tf",
                f"{PAGE_WIDTH + 200} 400 Td",
                f"({_escape(outside[index])}) Tj",
                "ET",
            ]
        stream = DecodedStreamObject()
        stream.set_data("\n".join(ops).encode("cp1252"))
        page[NameObject("/Contents")] = writer._add_object(stream)
        page[NameObject("/Resources")] = DictionaryObject(
            {NameObject("/Font"): DictionaryObject({NameObject("/F1"): font_ref})}
        )
        page[NameObject("/MediaBox")] = ArrayObject(
            [FloatObject(0), FloatObject(0), FloatObject(PAGE_WIDTH), FloatObject(PAGE_HEIGHT)]
        )
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()
