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
import ctypes
import io
from dataclasses import dataclass, field

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c
from pypdf import PageObject, PdfReader, apply_configuration
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


def _content_size(page: PageObject) -> int:
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
    ``FPDF_GetPageBoundingBox`` answers that; ``get_cropbox`` reads only the page's own
    dictionary and falls back to US Letter, which cut the top of A4 pages.

    PDFium's C calls are made directly, with one ``FPDFText_GetBoundedText`` call into
    a buffer sized from the page's character count: pypdfium2's ``get_text_bounded``
    makes that call twice (once to size its buffer, and each call tests every
    character's box) and wraps each page and text page in objects with finalizers,
    which together cost more than pypdf's limit checks (``bench/bench_pdf.py``).
    """
    page = pdfium_c.FPDF_LoadPage(document.raw, index)
    if not page:
        raise pdfium.PdfiumError(f"Failed to load page {index + 1}.")
    try:
        box = pdfium_c.FS_RECTF()
        if not pdfium_c.FPDF_GetPageBoundingBox(page, box):
            raise pdfium.PdfiumError(f"Failed to get the bounding box of page {index + 1}.")
        textpage = pdfium_c.FPDFText_LoadPage(page)
        if not textpage:
            raise pdfium.PdfiumError(f"Failed to load the text of page {index + 1}.")
        try:
            return _bounded_text(textpage, box)
        finally:
            pdfium_c.FPDFText_ClosePage(textpage)
    finally:
        pdfium_c.FPDF_ClosePage(page)


def _bounded_text(textpage: pdfium_c.FPDF_TEXTPAGE, box: pdfium_c.FS_RECTF) -> str:
    """The text page's characters inside ``box`` widened by the tolerance, in one call."""
    # A character is at most two UTF-16 code units; one more for a terminating NUL.
    size = 2 * max(pdfium_c.FPDFText_CountChars(textpage), 0) + 1
    buffer = (ctypes.c_ushort * size)()
    written = pdfium_c.FPDFText_GetBoundedText(
        textpage,
        min(box.left, box.right) - BOX_TOLERANCE,
        max(box.top, box.bottom) + BOX_TOLERANCE,
        max(box.left, box.right) + BOX_TOLERANCE,
        min(box.top, box.bottom) - BOX_TOLERANCE,
        buffer,
        size,
    )
    if written <= 0:
        return ""
    # PDFium counts the terminating NUL it copied, when it copied one.
    if written <= size and buffer[written - 1] == 0:
        written -= 1
    return ctypes.string_at(buffer, 2 * written).decode("utf-16-le", errors="ignore")


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


_READ_ERRORS = (
    PdfReadError,
    PyPdfError,
    pdfium.PdfiumError,
    ValueError,
    KeyError,
    TypeError,
    LookupError,
)


def _pages_to_skip(reader: PdfReader, count: int) -> set[int]:
    """Indexes of the first ``count`` pages whose content stream is over the limit or unreadable.

    One pypdf pass before PDFium reads any page: interleaving pypdf's page parsing
    with PDFium's page by page cost about a tenth more time than the two passes.
    """
    skip: set[int] = set()
    for index in range(count):
        try:
            if _content_size(reader.pages[index]) > MAX_CONTENT_STREAM_BYTES:
                skip.add(index)
        except _READ_ERRORS:
            skip.add(index)
    return skip


def _read_pages(reader: PdfReader, document: pdfium.PdfDocument, count: int) -> PdfText:
    result = PdfText(text="", page_count=count)
    skip = _pages_to_skip(reader, min(count, MAX_PAGES))
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
            if index in skip:
                raise ValueError("content stream over the limit or unreadable")
            text = _page_text(document, index)
        except _READ_ERRORS:
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
