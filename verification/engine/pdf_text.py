"""The text layer of a PDF as a reader sees it: only text inside each page's box."""

from __future__ import annotations

import bisect
import io
from dataclasses import dataclass, field

from pypdf import PdfReader, apply_configuration
from pypdf.errors import PdfReadError, PyPdfError

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


def _page_text(page) -> str:
    box = page.cropbox
    left, bottom = float(min(box.left, box.right)), float(min(box.bottom, box.top))
    right, top = float(max(box.left, box.right)), float(max(box.bottom, box.top))
    parts: list[str] = []

    def keep_inside(text, cm, tm, font, size) -> None:
        if not text:
            return
        x = tm[4] * cm[0] + tm[5] * cm[2] + cm[4]
        y = tm[4] * cm[1] + tm[5] * cm[3] + cm[5]
        inside_x = left - BOX_TOLERANCE <= x <= right + BOX_TOLERANCE
        inside_y = bottom - BOX_TOLERANCE <= y <= top + BOX_TOLERANCE
        if inside_x and inside_y:
            parts.append(text)

    page.extract_text(visitor_text=keep_inside)
    return "".join(parts)


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
        except (PdfReadError, PyPdfError, ValueError, KeyError, TypeError) as exc:
            raise PdfUnreadable(str(exc)) from None
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
                page = reader.pages[index]
                contents = page.get_contents()
                size = len(contents.get_data()) if contents is not None else 0
                if size > MAX_CONTENT_STREAM_BYTES:
                    result.skipped_pages.append(index + 1)
                    text = ""
                else:
                    text = _page_text(page)
            except (PdfReadError, PyPdfError, ValueError, KeyError, TypeError, LookupError):
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
