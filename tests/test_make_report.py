"""``make report``: after ``make smoke``, the Snakemake HTML report of the smoke outdir, written under that
outdir; every table of ``lie report`` is readable in the page (its ``.html``), checked in headless Chromium.

The command as a user types it, ``make report``, with ``SMOKE_CONFIG`` naming the finished smoke DAG of
this pytest run (tests/smoke_run.py, built once for every module that reads it) in a folder of hard links
(make report adds files beside the DAG's, never writes into them; a test here removes one).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from report_page import BROWSER, NO_BROWSER, browse, embedded
from small import REPO

from lie.config import Config
from lie.config.layout import Layout
from lie.report.build import report_paths
from lie.report.groups import TABLES

pytestmark = pytest.mark.slow
STAMP = ".venv/.installed"  # the environment the tests run in: make must not rebuild it under them

# Run in the page once it has loaded (tests/report_page.py): show each HTML result as the report's own
# menu does (the app's setView: the table in a frame) and read the table in the frame.
TABLES_SEEN = """
  out.tables = {};
  for (const [path, entry] of Object.entries(results)) {
    if (entry.mime_type !== "text/html") continue;
    app.setView({ content: "html", contentPath: entry.data_uri, resultPath: path });
    out.tables[path] = null;
    for (let i = 0; i < 50 && out.tables[path] === null; i++) {
      await wait(100);
      const frame = [...document.querySelectorAll("iframe")].find((x) => x.src === entry.data_uri);
      const doc = frame && frame.contentDocument;
      const table = doc && doc.querySelector("table");
      if (!table) continue;
      out.tables[path] = {
        head: [...table.querySelectorAll("thead tr")].map((tr) => [...tr.children].map((c) => c.textContent)),
        body: [...table.querySelectorAll("tbody tr")].map((tr) => [...tr.children].map((c) => c.textContent)),
        caption: table.querySelector("caption")?.textContent || "",
        notes: [...doc.querySelectorAll("ul.notes li")].map((li) => li.textContent),
        shown: [frame.getBoundingClientRect().height, table.getBoundingClientRect().width],
      };
    }
  }
"""


def linked(smoke: SimpleNamespace, root: Path) -> SimpleNamespace:
    """The finished smoke outdir as hard links under ``root``, and a config of the same DAG naming it."""
    out = root / "out"
    shutil.copytree(smoke.out, out, symlinks=True, copy_function=os.link)
    config = root / "smoke.yaml"
    config.write_text(yaml.safe_dump({**smoke.config, "outdir": str(out)}, sort_keys=False), encoding="utf-8")
    return SimpleNamespace(out=out, config=config, name=smoke.config["name"],
                           layout=Layout(Config.of({**smoke.config, "outdir": str(out)})))  # fmt: skip


def make_report(config: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "-o", STAMP, "report", f"SMOKE_CONFIG={config}"], cwd=REPO,
                          capture_output=True, text=True, timeout=600)  # fmt: skip


@pytest.fixture(scope="module")
def page(smoke, tmp_path_factory) -> SimpleNamespace:
    run = linked(smoke, tmp_path_factory.mktemp("make-report"))
    proc = make_report(run.config)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    run.stdout, run.html = proc.stdout, run.out / "report.html"
    return run


def test_make_report_writes_one_page_of_the_smoke_run_under_its_outdir(page):
    assert f"make report: {page.html}" in page.stdout
    assert sorted(p.name for p in page.out.glob("*report*")) == ["report.html"]  # no partial page left
    html = page.html.read_text(encoding="utf-8")
    results = embedded(html, "results")
    assert set(results) == {str(p) for p in report_paths(page.layout)}
    tables = {p for p in report_paths(page.layout) if p.suffix == ".md"}
    assert tables and {p.with_suffix(".html") for p in tables} <= {Path(p) for p in results}
    categories = embedded(html, "categories")
    for md in tables:  # each table's page beside its downloads, under Tables
        assert str(md.with_suffix(".html")) in categories["Tables"][md.stem]
        assert results[str(md.with_suffix(".html"))]["mime_type"] == "text/html"


def md_rows(path: Path) -> tuple[list[list[str]], list[str]]:
    """The body rows of a Markdown table of lie report, and its notes."""
    lines = path.read_text(encoding="utf-8").splitlines()
    rows = [line for line in lines if line.startswith("| ")][1:]  # after the header row
    cells = [
        [plain(c.strip().replace("\\|", "|")) for c in re.split(r"(?<!\\)\|", row)[1:-1]] for row in rows
    ]
    return cells, [plain(line[2:]) for line in lines if line.startswith("- ")]


def plain(markdown: str) -> str:
    """The text a browser shows of a cell or note: a `code` span without its backticks."""
    return re.sub(r"`([^`]+)`", r"\1", markdown)


@pytest.mark.skipif(BROWSER is None, reason=NO_BROWSER)
def test_every_table_reads_in_the_page_in_a_browser(page, tmp_path):
    seen = browse(
        page.html, TABLES_SEEN, tmp_path, "--window-size=1400,900", "--disable-web-security"
    )  # the probe reads the frame (a data: URL, another origin)
    assert seen["rendered"] and seen["errors"] == []
    expected = {p for p in report_paths(page.layout) if p.suffix == ".html"}
    assert set(seen["tables"]) == {str(p) for p in expected}
    for path in expected:
        shown = seen["tables"][str(path)]
        assert shown is not None, f"{path.name}: no table in the page's frame"
        rows, notes = md_rows(path.with_suffix(".md"))
        assert shown["body"] == rows, path.name  # every cell, as in the Markdown table
        assert shown["notes"] == notes, path.name
        height, width = shown["shown"]
        assert height > 100 and width > 100, path.name  # laid out in the page, not a hidden frame
    main = seen["tables"][str(page.layout.tables / "main.html")]
    assert main["caption"].startswith(f"{TABLES['main']}: {page.name} beside the paper")  # Table 1's title
    assert "95% interval" in main["caption"]
    assert main["head"][0][0] == "model" and "arith-test" in main["head"][0]
    assert "tiny" in [row[0] for row in main["body"]] and all(
        len(row) == len(main["body"][0]) for row in main["body"]
    )


def test_a_dag_with_jobs_left_gets_no_page_and_one_line(smoke, tmp_path):
    run = linked(smoke, tmp_path)
    (run.out / "report.html").write_text("an old page\n", encoding="utf-8")
    (run.out / "tables" / "main.html").unlink()  # a table missing: the report job has to run again
    proc = make_report(run.config)
    assert proc.returncode == 2
    lines = [line for line in proc.stderr.splitlines() if not re.match(r"make(\[\d+\])?: \*\*\*", line)]
    assert len(lines) == 1 and lines[0].startswith("make report: the DAG of ") and "make smoke" in lines[0]
    assert not list(run.out.glob("*report*.html"))  # neither a new page nor the stale one
    bad = make_report(tmp_path / "absent.yaml")
    lines = [line for line in bad.stderr.splitlines() if not re.match(r"make(\[\d+\])?: \*\*\*", line)]
    assert bad.returncode == 2 and len(lines) == 1 and "absent.yaml" in lines[0]


def test_a_table_page_escapes_every_text_and_keeps_its_shape():
    from html.parser import HTMLParser

    from lie.report.render import Group, Table, html

    table = Table([Group("model", [""], "l"), Group("AIME <24>", ["ours", "paper", "Δ"])])
    table.add(["<script>alert(1)</script>", "1 & 2", "`x`", "—"])
    table.caption, table.notes = 'caption with "<b>" & `code`', ["a note </li><li>two?"]
    page = html(table, "Title <i>")

    class Cells(HTMLParser):
        def __init__(self):
            super().__init__()
            self.tags, self.cells, self.cell = [], [], None

        def handle_starttag(self, tag, attrs):
            self.tags.append(tag)
            self.cell = "" if tag == "td" else self.cell

        def handle_endtag(self, tag):
            if tag == "td":
                self.cells.append(self.cell)
                self.cell = None

        def handle_data(self, data):
            if self.cell is not None:
                self.cell += data

    parsed = Cells()
    parsed.feed(page)
    assert "script" not in parsed.tags and "b" not in parsed.tags and "i" not in parsed.tags
    assert parsed.tags.count("li") == 1 and parsed.tags.count("tr") == 3  # two header rows, one body row
    assert parsed.cells == ["<script>alert(1)</script>", "1 & 2", "x", "—"]  # `x`: a <code> span
    assert '<th colspan="3" class="c">AIME &lt;24&gt;</th>' in page and "<code>x</code>" in page
