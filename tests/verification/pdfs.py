"""Build small text PDFs with pypdf for tests and benchmarks (no binary fixtures)."""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

from pypdf import PdfWriter
from pypdf.generic import (
    ArrayObject,
    DecodedStreamObject,
    DictionaryObject,
    FloatObject,
    NameObject,
    NumberObject,
)

PAGE_WIDTH, PAGE_HEIGHT = 612, 792


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def _truetype_font(writer: PdfWriter, font_file: Path) -> DictionaryObject:
    """A simple TrueType font dictionary with ``font_file`` embedded (FontFile2), WinAnsi."""
    program = DecodedStreamObject()
    program.set_data(font_file.read_bytes())
    program[NameObject("/Length1")] = NumberObject(len(program.get_data()))
    name = NameObject("/" + font_file.stem.replace(" ", ""))
    descriptor = DictionaryObject(
        {
            NameObject("/Type"): NameObject("/FontDescriptor"),
            NameObject("/FontName"): name,
            NameObject("/Flags"): NumberObject(32),
            NameObject("/FontBBox"): ArrayObject(
                [NumberObject(v) for v in (-600, -300, 2000, 1000)]
            ),
            NameObject("/ItalicAngle"): NumberObject(0),
            NameObject("/Ascent"): NumberObject(900),
            NameObject("/Descent"): NumberObject(-200),
            NameObject("/CapHeight"): NumberObject(700),
            NameObject("/StemV"): NumberObject(80),
            NameObject("/FontFile2"): writer._add_object(program),
        }
    )
    return DictionaryObject(
        {
            NameObject("/Type"): NameObject("/Font"),
            NameObject("/Subtype"): NameObject("/TrueType"),
            NameObject("/BaseFont"): name,
            NameObject("/FirstChar"): NumberObject(32),
            NameObject("/LastChar"): NumberObject(255),
            NameObject("/Widths"): ArrayObject([NumberObject(556)] * 224),
            NameObject("/Encoding"): NameObject("/WinAnsiEncoding"),
            NameObject("/FontDescriptor"): writer._add_object(descriptor),
        }
    )


def text_pdf(
    pages: list[list[str]],
    *,
    outside: dict[int, str] | None = None,
    font_file: Path | None = None,
) -> bytes:
    """A PDF whose page i shows the lines pages[i] in Helvetica.

    ``outside`` maps a page index to text drawn beyond the right edge of the
    page's box, which a reader never sees. ``font_file`` is a TrueType font
    to embed and draw with instead of Helvetica.
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
    if font_file is not None:
        font = _truetype_font(writer, font_file)
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


A4 = (0, 0, 595, 842)
LETTER = (0, 0, 612, 792)


@dataclass
class LaidOutPage:
    """A page for ``laid_out_pdf``: each line drawn at its own (x, y) in user space.

    ``mediabox`` and ``cropbox`` go in the page's own dictionary when given; left out, the
    page inherits whatever ``laid_out_pdf`` puts on the page tree. ``rotate`` is /Rotate.
    """

    lines: list[tuple[float, float, str]]
    mediabox: tuple[float, float, float, float] | None = None
    cropbox: tuple[float, float, float, float] | None = None
    rotate: int = 0


def _box(values) -> ArrayObject:
    return ArrayObject([FloatObject(v) for v in values])


def laid_out_pdf(
    pages: list[LaidOutPage],
    *,
    tree_mediabox: tuple[float, float, float, float] | None = None,
    tree_cropbox: tuple[float, float, float, float] | None = None,
) -> bytes:
    """A PDF of Helvetica lines at given places, its boxes on the page tree or on each page.

    Producers such as fpdf2 write the MediaBox once on /Pages and never on a page
    (PDF 32000 §7.7.3.4: MediaBox, CropBox and Rotate are inherited by the pages).
    """
    writer = PdfWriter()
    font_ref = writer._add_object(
        DictionaryObject(
            {
                NameObject("/Type"): NameObject("/Font"),
                NameObject("/Subtype"): NameObject("/Type1"),
                NameObject("/BaseFont"): NameObject("/Helvetica"),
                NameObject("/Encoding"): NameObject("/WinAnsiEncoding"),
            }
        )
    )
    tree = writer._root_object["/Pages"].get_object()
    for key, box in (("/MediaBox", tree_mediabox), ("/CropBox", tree_cropbox)):
        if box is not None:
            tree[NameObject(key)] = _box(box)
    for spec in pages:
        page = writer.add_blank_page(width=PAGE_WIDTH, height=PAGE_HEIGHT)
        del page[NameObject("/MediaBox")]
        for key, box in (("/MediaBox", spec.mediabox), ("/CropBox", spec.cropbox)):
            if box is not None:
                page[NameObject(key)] = _box(box)
        if spec.rotate:
            page[NameObject("/Rotate")] = NumberObject(spec.rotate)
        ops = []
        for x, y, line in spec.lines:
            ops += ["BT", "/F1 11 Tf", f"{x} {y} Td", f"({_escape(line)}) Tj", "ET"]
        stream = DecodedStreamObject()
        stream.set_data("\n".join(ops).encode("cp1252"))
        page[NameObject("/Contents")] = writer._add_object(stream)
        page[NameObject("/Resources")] = DictionaryObject(
            {NameObject("/Font"): DictionaryObject({NameObject("/F1"): font_ref})}
        )
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()
