"""A pre-filled Hugging Face hub cache for tests: the layout ``snapshot_download`` leaves behind.

``datasets--owner--name/blobs/<sha256>`` holds the bytes, ``snapshots/<commit>/<path>`` links to
them, ``refs/<branch or tag>`` names the commit. With ``HF_HUB_OFFLINE=1`` huggingface_hub serves
a revision from here exactly as it would after a real download.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.server
import io
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from standins import http_server

REPO = Path(__file__).resolve().parents[1]


def to_bytes(content: Any) -> bytes:
    if isinstance(content, bytes):
        return content
    if isinstance(content, str):
        return content.encode("utf-8")
    if isinstance(content, pa.Table):
        buffer = io.BytesIO()
        pq.write_table(content, buffer)
        return buffer.getvalue()
    if isinstance(content, list):  # JSON lines
        return "".join(json.dumps(r) + "\n" for r in content).encode("utf-8")
    raise TypeError(type(content))


def pinned_revision(repo_id: str) -> str | None:
    """The commit config.yaml pins for ``repo_id`` (a data set or a model), if it pins one."""
    import re

    config = repo_config()
    entries = [*config["models"].values()] + [e for g in config["datasets"].values() for e in g.values()]
    for entry in entries:
        if entry.get("hf_id") == repo_id and re.fullmatch(r"[0-9a-f]{40}", entry.get("revision") or ""):
            return entry["revision"]
    return None


def add_dataset(
    cache: Path,
    repo_id: str,
    files: dict[str, Any],
    refs: tuple[str, ...] = ("main",),
    commit: str | None = "config",
    repo_type: str = "datasets",
) -> str:
    """Put ``files`` (path -> bytes, text, Arrow table or list of JSON rows) in as one commit.

    ``commit="config"`` uses the commit config.yaml pins for the repo (so that the real config
    finds it), ``None`` a hash of the content, any other string that commit.
    """
    repo = Path(cache) / f"{repo_type}--{repo_id.replace('/', '--')}"
    blobs = {path: to_bytes(content) for path, content in files.items()}
    if commit == "config":
        commit = pinned_revision(repo_id)
    if commit is None:
        commit = hashlib.sha1(repo_id.encode() + b"".join(sorted(blobs.values()))).hexdigest()
    for path, data in blobs.items():
        blob = repo / "blobs" / hashlib.sha256(data).hexdigest()
        blob.parent.mkdir(parents=True, exist_ok=True)
        blob.write_bytes(data)
        link = repo / "snapshots" / commit / path
        link.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(os.path.relpath(blob, link.parent), link)
    (repo / "refs").mkdir(exist_ok=True)
    for ref in refs:
        (repo / "refs" / ref).write_text(commit)
    return commit


def readme_configs(configs: dict[str, dict[str, str]]) -> str:
    """A dataset card whose ``configs:`` block maps config -> split -> file pattern."""
    lines = ["---", "configs:"]
    for name, splits in configs.items():
        lines += [f"- config_name: {name}", "  data_files:"]
        for split, pattern in splits.items():
            lines += [f"  - split: {split}", f"    path: {pattern}"]
    return "\n".join(lines + ["---", "# test card", ""])


def repo_config() -> dict[str, Any]:
    """A fresh copy of the repository's config.yaml, as a mapping to edit (``Config.of`` types it)."""
    from lie.config import read_config

    return read_config(REPO / "config.yaml")


@contextlib.contextmanager
def standin_hub_api(monkeypatch: Any) -> Iterator[dict[str, Any]]:
    """A stand-in for the hub's HTTP API on 127.0.0.1, huggingface_hub's endpoint pointed at it, online,
    with a token set: every request is answered with the ``status`` and ``X-Error-Code`` (``code``) of
    the yielded dict, as the hub answers for a missing repo or revision or a gated one, so that the real
    client raises its own errors."""
    from huggingface_hub import constants

    answer: dict[str, Any] = {"status": 404, "code": "RepoNotFound"}

    class Handler(http.server.BaseHTTPRequestHandler):
        def _answer(self) -> None:
            body = b'{"error": "stand-in"}'
            self.send_response(answer["status"])
            if answer["code"]:
                self.send_header("X-Error-Code", answer["code"])
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        do_GET = do_HEAD = _answer

        def log_message(self, *args: Any) -> None:
            pass

    with http_server(Handler) as (url, _):
        monkeypatch.setattr(constants, "ENDPOINT", url)
        monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
        monkeypatch.setenv("HF_TOKEN", "hf_standin_not_a_secret")
        yield answer
