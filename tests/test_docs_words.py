"""README.md and docs/ speak to a reader who has none of their writers' context.

A reader cannot know which machine "this CPU" or "the quiet box" was, what "here" stood for, or what
an issue number of ours refers to: a page names a machine by its kind ("a 2-vCPU x86-64 VM", "a
single-H200 machine with a stock CUDA image") and says what changed instead of citing an issue. The
check is a list of phrases that only make sense to the writer, a pattern for our issue numbers (an
upstream project's issue, named with its project, is a reference a reader can follow), and "here",
which is allowed only where it points into the page itself ("shown here", "stops here").
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# the registrations of the CPU study are kept as they were registered (their text is the record)
FROZEN = {
    "docs/study/preregistration.md",
    "docs/study/preregistration-v2.md",
    "docs/study/preregistration-v3.md",
}

WRITERS_PHRASES = re.compile(
    r"\b(this|the quiet) (cpu|box|vm|machine|host|workplace|workplace's|laptop)\b(?! (kind|class|of))"
    r"|\bquiet box\b|\bthe machine this\b|\bthis session\b|\bthe session's machine\b|\bthis sitting\b"
    r"|\blent (h100|h200|gpu|machine)\b|\bfrom here\b|\bno route here\b",
    re.I,
)
# an issue of ours: "issue 30", "issues 19-22", "#12", or a heading anchor made of one ("...-issue-30")
OUR_ISSUE = re.compile(
    r"(?P<before>[\w.-]+\s+)?(?P<cite>\bissues?\s+#?\d+|(?<![\w/&])#\d+\b|\bissue-\d+)", re.I
)
UPSTREAM = {"open-r1", "pytest-xdist"}  # projects whose issues a page may cite by number, with the name
# "here" as the page itself; anywhere else it stood for the writer's machine or checkout
HERE_IN_THE_PAGE = re.compile(
    r"\b(shown|stated|quoted|named|listed|read|given) here\b|\bhere\b (below|above)|\b(stops?|ends?) here\b"
    r"|\bnothing here\b",
    re.I,
)


def pages() -> list[Path]:
    found = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    return [p for p in found if str(p.relative_to(REPO)) not in FROZEN]


def writers_words(text: str) -> list[str]:
    """Each phrase of ``text`` that only its writer could read, as ``line N: the phrase``."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        hits = [m.group(0) for m in WRITERS_PHRASES.finditer(line)]
        hits += [
            m.group("cite")
            for m in OUR_ISSUE.finditer(line)
            if (m.group("before") or "").strip().lower() not in UPSTREAM
        ]
        allowed = [m.span() for m in HERE_IN_THE_PAGE.finditer(line)]
        for m in re.finditer(r"\bhere\b", line, re.I):
            if not any(start <= m.start() < end for start, end in allowed):
                hits.append(line[max(0, m.start() - 30) : m.end() + 10].strip())
        found += [f"line {number}: {hit}" for hit in hits]
    return found


@pytest.mark.parametrize(
    "text",
    [
        "It has never run on a GPU; on this CPU every row passes.",
        "37 min 46 s on the quiet box",
        "a GPU (one H200, this workplace's CUDA image)",
        "The hub cannot be reached from the machine this was written on.",
        "the suite on the same VM before issue 30",
        "after issues 19-22 (vLLM for smoke_grpo)",
        "([docs/benchmarks.md](docs/benchmarks.md#make-tests-length-issue-30))",
        "fixed in #12",
        "Measured here: a four-step run is about 2 min 20 s",
        "`make preflight` here",
        "another lent H200 with the same image",
    ],
)
def test_a_writers_phrase_is_found(text):
    assert writers_words(text), text


@pytest.mark.parametrize(
    "text",
    [
        "on a 2-vCPU x86-64 VM (2026-12-04), 8 min 19 s",
        "a single-H200 machine with a stock CUDA image",
        "the gold answer parses to nothing (open-r1 #293)",
        "pytest-xdist issue 1386: the marks are silently ignored",
        "`main` shown here, the others alike",
        "then the gates, which stop here if one fails",
        "the target stands missed on this machine class",
        "\\boxed{} and a boxed answer",
        "There is more, said the writer",
    ],
)
def test_a_readers_phrase_is_not(text):
    assert writers_words(text) == []


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(REPO)))
def test_no_page_speaks_to_its_writer(page):
    found = writers_words(page.read_text(encoding="utf-8"))
    assert not found, (
        f"{page.relative_to(REPO)}: name the machine by its kind, say what changed:\n" + "\n".join(found)
    )


def heading_anchors(text: str) -> set[str]:
    """The anchors GitHub makes of a page's headings: lower case, punctuation dropped, spaces as dashes."""
    return {
        re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
        for h in re.findall(r"^#+ (.*)$", text, re.M)
    }


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(REPO)))
def test_every_link_of_a_page_leads_somewhere(page):
    """A link to a file of the repository names one that exists, and its #anchor a heading there."""
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists():
            broken.append(target)
        elif (
            anchor
            and linked.suffix == ".md"
            and anchor not in heading_anchors(linked.read_text(encoding="utf-8"))
        ):
            broken.append(target)
    assert not broken, f"{page.relative_to(REPO)}: links to nothing: {broken}"
