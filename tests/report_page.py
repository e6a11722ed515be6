"""Snakemake's HTML report read as a reader sees it: its embedded data, and what headless Chromium shows.

tests/test_report_snakemake.py (the figures) and tests/test_make_report.py (the tables) both open a page
in Debian's chromium (.ci/run installs it) with a probe script added: the probe waits for the report's
app to render, runs a body of its own (``out`` is the object it fills), then writes ``out`` as JSON into
the DOM, which ``--dump-dom`` returns.
"""

from __future__ import annotations

import html as html_text
import json
import re
import shutil
import subprocess
from pathlib import Path

BROWSER = shutil.which("chromium") or shutil.which("chromium-browser")
NO_BROWSER = "chromium is not installed (.ci/run installs Debian's chromium)"

_PROBE = """
window.addEventListener("error", (e) => (window.lieErrors = [...(window.lieErrors || []), String(e.message)]));
window.addEventListener("load", async () => {
  const wait = (ms) => new Promise((r) => setTimeout(r, ms));
  for (let i = 0; i < 100 && !document.querySelector("#app")?.children.length; i++) await wait(100);
  await wait(300);
  const out = { rendered: document.querySelector("#app").children.length > 0 };
BODY
  out.errors = window.lieErrors || [];
  const pre = document.createElement("pre");
  pre.id = "lie-probe";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
"""


def embedded(html: str, name: str) -> dict:
    """The JSON object the page embeds as ``<script id="NAME">var x = ...</script>``."""
    match = re.search(rf'<script id="{name}">\s*var \w+ = (.*?);?\s*</script>', html, re.S)
    assert match, name
    return json.loads(match.group(1).rstrip().rstrip(";"))


def browse(page: Path, body: str, workdir: Path, *flags: str) -> dict:
    """What the probe saw in ``page`` (``rendered``, ``errors`` and what ``body`` put in ``out``)."""
    assert BROWSER, NO_BROWSER
    html = page.read_text(encoding="utf-8")
    end = html.rindex("</body>")  # the last: scripts of the page hold the string too
    probed = workdir / "probed.html"
    probed.write_text(
        html[:end] + f"<script>{_PROBE.replace('BODY', body)}</script>" + html[end:], encoding="utf-8"
    )
    base = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--virtual-time-budget=60000",
            f"--user-data-dir={workdir / 'profile'}"]  # fmt: skip
    proc = subprocess.run([BROWSER, *base, *flags, "--dump-dom", probed.as_uri()], capture_output=True,
                          text=True, timeout=300)  # fmt: skip
    match = re.search(r'<pre id="lie-probe">(.*?)</pre>', proc.stdout, re.S)
    assert match, proc.stderr[-3000:]
    return json.loads(html_text.unescape(match.group(1)))
