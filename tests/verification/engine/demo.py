"""The published demo page, rebuilt from the passages and offsets the quote seed shows.

The seed gives three of its sentences with their offsets (0-114, 115-271,
357-513); the fourth sentence fills 272-356 with no claim word, and a sixth
unit ends the page, which is what the published scores imply.
"""

DEMO_UNITS = [
    "Regional climate report 2025 This is a demo page served by AttestPage so that agents "
    "can try every route for free.",
    "It is not a real report and its numbers are made up.",
    "In its annual summary the agency said that emissions fell 12 % in 2025, after two years "
    "of slow growth.",
    "Forest cover grew in the north while rainfall stayed close to the long-term average.",
    "The agency also noted that the share of renewable power rose to 41 percent, and that the "
    "next report will cover water use and air quality across the region.",
    "Questions about this page go to the editors.",
]
DEMO_PAGE = " ".join(DEMO_UNITS)
