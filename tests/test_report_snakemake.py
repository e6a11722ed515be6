"""``snakemake --report``: one HTML page with every table and figure of ``lie report``, each with its
caption, opened in a real browser (headless Chromium) to see that it loads and every image shows.

The files are those of the report tests' pipeline run (``report_pipeline``), written by ``lie report``;
Snakemake builds the page from the rule's ``report()`` outputs and ``workflow/report/*.rst``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from report_pipeline import reported
from small import REPO

from lie.report.build import report_paths

pytestmark = pytest.mark.slow
BROWSER = shutil.which("chromium") or shutil.which("chromium-browser")

# Run in the page once it has loaded: show each image result as the report's own menu does
# (the app's setView) and record the size the browser decoded; then write what it saw into the DOM.
PROBE = """
window.addEventListener("error", (e) => (window.lieErrors = [...(window.lieErrors || []), String(e.message)]));
window.addEventListener("load", async () => {
  const wait = (ms) => new Promise((r) => setTimeout(r, ms));
  for (let i = 0; i < 100 && !document.querySelector("#app")?.children.length; i++) await wait(100);
  await wait(300);
  const out = { rendered: document.querySelector("#app").children.length > 0, images: {} };
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
  out.errors = window.lieErrors || [];
  const pre = document.createElement("pre");
  pre.id = "lie-probe";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
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


def embedded(html: str, name: str) -> dict:
    match = re.search(rf'<script id="{name}">\s*var \w+ = (.*?);?\s*</script>', html, re.S)
    assert match, name
    return json.loads(match.group(1).rstrip().rstrip(";"))


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


@pytest.mark.skipif(BROWSER is None, reason="chromium is not installed (.ci/run installs Debian's chromium)")
def test_the_page_loads_in_a_browser_and_every_image_shows(page, tmp_path):
    html_path, copy = page
    html = html_path.read_text(encoding="utf-8")
    end = html.rindex("</body>")  # the last: scripts of the page hold the string too
    probed = tmp_path / "probed.html"
    probed.write_text(html[:end] + f"<script>{PROBE}</script>" + html[end:], encoding="utf-8")
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--virtual-time-budget=60000",
    ]
    proc = subprocess.run([BROWSER, *flags, "--dump-dom", probed.as_uri()], capture_output=True, text=True,
                          timeout=300)  # fmt: skip
    match = re.search(r'<pre id="lie-probe">(.*?)</pre>', proc.stdout, re.S)
    assert match, proc.stderr[-3000:]
    seen = json.loads(match.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    assert seen["rendered"] and seen["errors"] == []
    figures = {str(p) for p in report_paths(copy.layout) if p.suffix == ".png"}
    assert set(seen["images"]) == figures
    from matplotlib.image import imread

    for path, size in seen["images"].items():
        height, width = imread(path).shape[:2]
        assert size == [width, height], path  # decoded and shown at the figure's own size
