"""``snakemake --report``: one HTML page with every table and figure of ``lie report``, each with its
caption, opened in a real browser (headless Chromium) to see that it loads and every image shows.

The files are those of the report tests' pipeline run (``report_pipeline``), written by ``lie report``;
Snakemake builds the page from the rule's ``report()`` outputs and ``workflow/report/*.rst``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from report_page import BROWSER, NO_BROWSER, browse, embedded
from report_pipeline import reported
from small import REPO

from lie.report.build import report_paths

pytestmark = pytest.mark.slow

# Run in the page once it has loaded (tests/report_page.py): show each image result as the report's own
# menu does (the app's setView) and record the size the browser decoded.
IMAGES_SEEN = """
  out.images = {};
  for (const [path, entry] of Object.entries(results)) {
    if (!entry.mime_type.startsWith("image/")) continue;
    app.setView({ content: "img", contentPath: entry.data_uri });
    let img = null;
    for (let i = 0; i < 50 && !(img && img.complete && img.naturalWidth > 0); i++) {
      await wait(100);
      img = [...document.querySelectorAll("img")].find((x) => x.src === entry.data_uri);
    }
    out.images[path] = img ? [img.naturalWidth, img.naturalHeight] : null;
  }
"""


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> tuple[Path, object]:
    root = tmp_path_factory.mktemp("snakemake-report")
    copy = reported()  # lie report's files, as tests/test_report.py reads them
    workdir = root / "wf"
    workdir.mkdir()
    for name in ("Snakefile", "workflow"):
        os.symlink(REPO / name, workdir / name)
    (workdir / "config.yaml").write_text(yaml.safe_dump(copy.config, sort_keys=False), encoding="utf-8")
    html = root / "report.html"
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    proc = subprocess.run([sys.executable, "-m", "snakemake", "--report", str(html), "--cores", "1"],
                          cwd=workdir, env=env, capture_output=True, text=True, timeout=600)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return html, copy


def test_one_page_holds_every_table_and_figure_with_a_caption(page):
    html_path, copy = page
    html = html_path.read_text(encoding="utf-8")
    results = embedded(html, "results")
    assert set(results) == {str(p) for p in report_paths(copy.layout)}
    for path, entry in results.items():
        assert entry["caption"].strip(), path
        assert entry["data_uri"].startswith(f"data:{entry['mime_type']}"), path
    main_md = next(e for p, e in results.items() if p.endswith("tables/main.md"))
    assert "95% interval" in main_md["caption"] and "authors' reader" in main_md["caption"]
    assert "LIE reproduction pipeline" in html  # workflow/report/workflow.rst
    assert not re.search(r"<(?:script|link)[^>]+(?:src|href)=\"https?://", html)  # self-contained


@pytest.mark.skipif(BROWSER is None, reason=NO_BROWSER)
def test_the_page_loads_in_a_browser_and_every_image_shows(page, tmp_path):
    html_path, copy = page
    seen = browse(html_path, IMAGES_SEEN, tmp_path)
    assert seen["rendered"] and seen["errors"] == []
    figures = {str(p) for p in report_paths(copy.layout) if p.suffix == ".png"}
    assert set(seen["images"]) == figures
    from matplotlib.image import imread

    for path, size in seen["images"].items():
        height, width = imread(path).shape[:2]
        assert size == [width, height], path  # decoded and shown at the figure's own size
