"""PDF text: PDFium (the engine) beside pypdf's own extraction, 200 pages, interleaved.

Two 200-page PDFs of real prose (``bench/corpus.py``) laid out in lines that
fit the page (so plain pypdfium2, which reads every character with no box, gives
the same text), one in Helvetica (a standard Type 1 font, not embedded) and one
in an embedded TrueType font (Liberation Sans or DejaVu Sans from the
machine's fonts). Each round reads each PDF with ``pdf_text`` (pypdf for the
structure and limits, PDFium for the text inside the box), with plain pypdfium2
(``page.get_textpage().get_text_range()`` on every page) and with pypdf alone (its
``extract_text``, keeping text whose origin lies inside the page's visible box,
its CropBox clipped to its MediaBox, each inherited from the page tree when the
page has none); the figure is the median of the rounds, in thread CPU time. Both texts are
compared after normalisation. Then the worker pool's time for the same read.
"""

from __future__ import annotations

import io
import os
import random
import statistics
import time
from pathlib import Path

import pypdfium2 as pdfium
from pypdf import PdfReader

from attest_core.normalise import normalise
from bench.corpus import english_prose
from bench.setup import django_on_a_scratch_database
from tests.verification.pdfs import text_pdf
from verification.engine.pdf_text import BOX_TOLERANCE, pdf_text

PAGES = 200
LINES = 46
LINE_CHARS = 85
ROUNDS = 9
FONTS = (
    Path("/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf"),
    Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"),
)


def _pages() -> list[list[str]]:
    words = english_prose(PAGES * LINES * LINE_CHARS).split(" ")
    rng = random.Random(3)
    pages: list[list[str]] = []
    i = 0
    for _ in range(PAGES):
        lines = []
        for _ in range(LINES):
            limit, line = rng.randint(60, LINE_CHARS), []
            while i < len(words) and sum(len(w) + 1 for w in line) + len(words[i]) < limit:
                line.append(words[i])
                i += 1
            if not line:  # a word longer than the line
                line, i = [words[i][:limit]], i + 1
            lines.append(" ".join(line))
        pages.append(lines)
    return pages


def visible_box(page) -> tuple[float, float, float, float]:
    """The page's CropBox clipped to its MediaBox (pypdf's reader applies inherited boxes)."""

    def edges(box):
        xs, ys = (float(box.left), float(box.right)), (float(box.bottom), float(box.top))
        return min(xs), min(ys), max(xs), max(ys)

    media, crop = edges(page.mediabox), edges(page.cropbox)
    return (
        max(media[0], crop[0]),
        max(media[1], crop[1]),
        min(media[2], crop[2]),
        min(media[3], crop[3]),
    )


def pypdf_text(data: bytes) -> str:
    """pypdf's extraction, origin inside the crop box, pages joined by a space."""
    texts = []
    for page in PdfReader(io.BytesIO(data), strict=False).pages:
        left, bottom, right, top = visible_box(page)
        parts: list[str] = []

        def inside(text, cm, tm, font, size, parts=parts, box=(left, bottom, right, top)):
            x = tm[4] * cm[0] + tm[5] * cm[2] + cm[4]
            y = tm[4] * cm[1] + tm[5] * cm[3] + cm[5]
            if (
                text
                and box[0] - BOX_TOLERANCE <= x <= box[2] + BOX_TOLERANCE
                and box[1] - BOX_TOLERANCE <= y <= box[3] + BOX_TOLERANCE
            ):
                parts.append(text)

        page.extract_text(visitor_text=inside)
        texts.append("".join(parts))
    return " ".join(texts)


def pdfium_plain(data: bytes) -> str:
    """Plain pypdfium2, as its documentation reads a page's text: no box, no limits."""
    document = pdfium.PdfDocument(data)
    try:
        texts = []
        for index in range(len(document)):
            page = document[index]
            textpage = page.get_textpage()
            texts.append(textpage.get_text_range())
            textpage.close()
            page.close()
        return " ".join(texts)
    finally:
        document.close()


def main() -> None:
    pages = _pages()
    font = next((f for f in FONTS if f.exists()), None)
    documents = {"Helvetica (Type 1, not embedded)": text_pdf(pages)}
    if font is None:
        print(f"no TrueType font found at {', '.join(map(str, FONTS))}: that row is left out")
    else:
        documents[f"{font.stem} (TrueType, embedded)"] = text_pdf(pages, font_file=font)
    print(
        f"\n{PAGES}-page PDFs of real prose, ms of thread CPU time, medians of {ROUNDS} "
        f"interleaved rounds; load average {os.getloadavg()[0]:.1f} at the start\n"
    )
    print("| font | PDF size | characters | pdf_text | plain pypdfium2 `get_text_range` "
          "| plain / pdf_text | pypdf alone | pypdf / pdf_text | same text as plain "
          "| same text as pypdf (normalised) |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|")
    readers = {"ours": lambda d: pdf_text(d).text, "plain": pdfium_plain, "pypdf": pypdf_text}
    for label, data in documents.items():
        times: dict[str, list[float]] = {name: [] for name in readers}
        texts: dict[str, str] = {}
        for _ in range(ROUNDS):
            for name, read in readers.items():
                start = time.thread_time()
                texts[name] = read(data)
                times[name].append((time.thread_time() - start) * 1000)
        a, p, b = (statistics.median(times[name]) for name in ("ours", "plain", "pypdf"))
        ours = normalise(texts["ours"]).text
        print(
            f"| {label} | {len(data) / 1024:.0f} KB | {len(ours):,} | {a:.0f} | {p:.0f} "
            f"| {p / a:.2f}x | {b:.0f} | {b / a:.1f}x "
            f"| {'yes' if texts['ours'] == texts['plain'] else 'NO'} "
            f"| {'yes' if ours == normalise(texts['pypdf']).text else 'NO'} |"
        )
    data = next(iter(documents.values()))
    # The pool takes its turn in the shared PDF queue, kept in the database without Redis.
    django_on_a_scratch_database("pdf")
    from verification.capacity.pdf_pool import read_pdf

    read_pdf(data)  # start the pool's workers
    pooled = []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        read_pdf(data)
        pooled.append(time.perf_counter() - start)
    print(f"\nThrough the worker pool (Helvetica PDF): {statistics.median(pooled):.2f} s (median)")


if __name__ == "__main__":
    main()
