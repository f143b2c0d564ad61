"""The text layer of a PDF as a reader sees it: only text inside each page's box.

PDFium (through pypdfium2) reads the text: about three times faster than
pypdf's pure-Python content-stream parser, with the same text after
normalisation (``bench/bench_pdf.py`` measures both). pypdf still opens the
file first, with lowered decompression limits, to refuse encrypted files and
to measure each page's decoded content stream, so the limits below hold
whichever engine draws the text.
"""

from __future__ import annotations

import bisect
import io
from dataclasses import dataclass, field

import pypdfium2 as pdfium
from pypdf import PdfReader, apply_configuration
from pypdf.errors import PdfReadError, PyPdfError
from pypdf.generic import ArrayObject

MAX_PAGES = 300
MAX_CHARS = 5_000_000
# Per page, the decoded content stream; and per stream, what pypdf may decompress.
MAX_CONTENT_STREAM_BYTES = 8 * 1024 * 1024
MAX_DECODED_STREAM_BYTES = 16 * 1024 * 1024
# Text placed this far outside the box (in points) still counts: glyph origins sit
# a little off the edge on many real pages.
BOX_TOLERANCE = 2.0


class PdfUnreadable(ValueError):
    """The bytes are not a PDF we can read (damaged or encrypted)."""


@dataclass
class PdfText:
    text: str  # pages' text joined by one space; not yet normalised
    page_starts: list[int] = field(default_factory=list)  # offset in text where page i+1 starts
    page_count: int = 0
    pages_read: int = 0
    truncated: bool = False
    skipped_pages: list[int] = field(default_factory=list)  # 1-based, over the stream limit

    def page_at(self, offset: int) -> int:
        """1-based page holding the source offset (a page break belongs to the page before)."""
        return max(1, bisect.bisect_right(self.page_starts, offset))

    def info(self) -> dict:
        return {
            "page_count": self.page_count,
            "pages_read": self.pages_read,
            "truncated": self.truncated,
        }


def _content_size(page) -> int:
    """Bytes of the page's content stream(s) once decoded (pypdf, under its limits)."""
    contents = page.get("/Contents")
    if contents is None:
        return 0
    contents = contents.get_object()
    streams = contents if isinstance(contents, ArrayObject) else [contents]
    return sum(len(stream.get_object().get_data()) for stream in streams)


def _page_text(document: pdfium.PdfDocument, index: int) -> str:
    """Characters PDFium places inside the page's visible box (with the tolerance).

    The visible box is the effective CropBox clipped to the effective MediaBox, each
    inherited from the page tree when the page lacks its own (PDF 32000 §7.7.3.4).
    ``get_bbox`` (FPDF_GetPageBoundingBox) answers that; ``get_cropbox`` reads only the
    page's own dictionary and falls back to US Letter, which cut the top of A4 pages.
    """
    page = document[index]
    try:
        x0, y0, x1, y1 = page.get_bbox()
        textpage = page.get_textpage()
        try:
            return textpage.get_text_bounded(
                min(x0, x1) - BOX_TOLERANCE,
                min(y0, y1) - BOX_TOLERANCE,
                max(x0, x1) + BOX_TOLERANCE,
                max(y0, y1) + BOX_TOLERANCE,
            )
        finally:
            textpage.close()
    finally:
        page.close()


def pdf_text(data: bytes) -> PdfText:
    """Read at most MAX_PAGES pages; a page whose content stream is too big is skipped."""
    with apply_configuration(
        zlib_maximum_output_length=MAX_DECODED_STREAM_BYTES,
        lzw_maximum_output_length=MAX_DECODED_STREAM_BYTES,
        run_length_maximum_output_length=MAX_DECODED_STREAM_BYTES,
        array_based_stream_maximum_output_length=MAX_DECODED_STREAM_BYTES,
        maximum_declared_stream_length=MAX_DECODED_STREAM_BYTES,
    ):
        try:
            reader = PdfReader(io.BytesIO(data), strict=False)
            if reader.is_encrypted:
                raise PdfUnreadable("The PDF is encrypted.")
            count = len(reader.pages)
            document = pdfium.PdfDocument(data)
        except (PdfReadError, PyPdfError, ValueError, KeyError, TypeError) as exc:
            raise PdfUnreadable(str(exc)) from None
        except pdfium.PdfiumError as exc:
            raise PdfUnreadable(f"PDFium cannot read the file: {exc}") from None
        try:
            return _read_pages(reader, document, count)
        finally:
            document.close()


def _read_pages(reader: PdfReader, document: pdfium.PdfDocument, count: int) -> PdfText:
    result = PdfText(text="", page_count=count)
    chunks: list[str] = []
    length = 0
    for index in range(min(count, MAX_PAGES)):
        if length >= MAX_CHARS:
            result.truncated = True
            break
        if index:
            chunks.append(" ")
            length += 1
        result.page_starts.append(length)
        try:
            if _content_size(reader.pages[index]) > MAX_CONTENT_STREAM_BYTES:
                raise ValueError("content stream over the limit")
            text = _page_text(document, index)
        except (
            PdfReadError,
            PyPdfError,
            pdfium.PdfiumError,
            ValueError,
            KeyError,
            TypeError,
            LookupError,
        ):
            result.skipped_pages.append(index + 1)
            text = ""
        text = text[: MAX_CHARS - length]
        chunks.append(text)
        length += len(text)
        result.pages_read = index + 1
    if count > result.pages_read:
        result.truncated = True
    result.text = "".join(chunks)
    return result
