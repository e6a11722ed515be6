"""Where a data set's files come from, pinned: the hub, a URL, or a local file or mirror.

- hub: ``huggingface_hub.snapshot_download`` at the configured revision (progress bars, the
  hub cache, ``HF_HUB_OFFLINE=1`` served from that cache); the resolved commit is recorded;
- url: a raw file pinned to a commit (Qwen2.5-Math's OlympiadBench and Minerva), cached under
  ``$HF_HOME/lie/urls`` and checked against its git blob id;
- local: a file, or a directory laid out like the hub repo (``hf download --local-dir``).

A directory's files for the config and split are found the way ``datasets`` does (the README's
``configs:`` block, else its file-name conventions), so a hub snapshot and a mirror read alike.
"""

from __future__ import annotations

import hashlib
import logging
import os
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lie.config.datasets import DatasetSpec
from lie.core.errors import LieError
from lie.formats.jsonl import atomic_output

log = logging.getLogger(__name__)

SUFFIXES = (".parquet", ".jsonl", ".json", ".csv")


@dataclass
class Resolved:
    files: list[Path]
    origin: dict[str, Any] = field(default_factory=dict)  # recorded in the output's metadata


def resolve(spec: DatasetSpec) -> Resolved:
    """The data files of ``spec`` on this machine, downloading them first if needed."""
    if spec.source_kind == "local":
        return _resolve_local(spec)
    if spec.source_kind == "url":
        assert spec.url is not None  # source_kind "url": url is set
        path = fetch_url(spec.url, spec.sha1, spec.where)
        return Resolved([path], {"type": "url", "url": spec.url, "sha1": spec.sha1})
    snapshot, commit = fetch_hub(spec)
    files = files_for_split(snapshot, spec.config, spec.split, spec.where)
    origin = {
        "type": "hub",
        "hf_id": spec.hf_id,
        "revision": spec.revision,
        "commit": commit,
        "config": spec.config,
        "split": spec.split,
        "files": [str(f.relative_to(snapshot)) for f in files],
    }
    return Resolved(files, origin)


def _resolve_local(spec: DatasetSpec) -> Resolved:
    assert spec.local is not None  # source_kind "local": local is set
    path = Path(spec.local).expanduser()
    if not path.exists():
        raise LieError(
            f"{spec.where}.local is {spec.local!r}, which does not exist (relative paths start in "
            f"{Path.cwd()}); point it at a file or a mirror of the hub repo, or set it to null to download"
        )
    files = [path] if path.is_file() else files_for_split(path, spec.config, spec.split, spec.where)
    origin: dict[str, Any] = {
        "type": "local",
        "path": str(spec.local),
        "config": spec.config,
        "split": spec.split,
    }
    if path.is_dir():
        origin["files"] = [str(f.relative_to(path)) for f in files]
    return Resolved(files, origin)


def hub_offline() -> bool:
    from huggingface_hub import constants

    return bool(constants.HF_HUB_OFFLINE)


def _token(spec: DatasetSpec) -> str | None:
    """HF_TOKEN (or a stored login) for a gated repo; never logged, never written."""
    if not spec.gated:
        return None
    token = os.environ.get("HF_TOKEN")
    if not token:
        from huggingface_hub import get_token

        token = get_token()
    return token or None


def _gated_message(spec: DatasetSpec) -> str:
    assert spec.hf_id is not None  # a hub source names hf_id (spec._check)
    label = "GPQA" if "gpqa" in spec.hf_id.lower() else spec.hf_id
    return (
        f"data set {spec.name!r} ({spec.hf_id}) is gated: set HF_TOKEN to a token that has accepted the "
        f"{label} terms at https://huggingface.co/datasets/{spec.hf_id}"
    )


def fetch_hub(spec: DatasetSpec) -> tuple[Path, str]:
    """Download (or find in the hub cache) the repo at the pinned revision: (folder, commit)."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import (
        GatedRepoError,
        HfHubHTTPError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    assert spec.hf_id is not None  # a hub source names hf_id (spec._check)
    offline = hub_offline()
    token = _token(spec)
    if spec.gated and token is None and not offline:
        raise LieError(_gated_message(spec))
    if not spec.pinned:
        log.warning(
            "%s.revision is %r, not a commit SHA: the commit it resolves to is recorded in the output; "
            "pin that SHA in config.yaml for a fixed data set",
            spec.where,
            spec.revision,
        )
    where = f"data set {spec.name!r} ({spec.hf_id} at revision {spec.revision})"
    log.info("%s: fetching from the hub%s", where, " (offline: hub cache only)" if offline else "")
    try:
        folder = snapshot_download(
            repo_id=spec.hf_id,
            repo_type="dataset",
            revision=spec.revision,
            token=token,
            local_files_only=offline,
        )
    except GatedRepoError:
        raise LieError(_gated_message(spec)) from None
    except RevisionNotFoundError:
        raise LieError(
            f"{where}: the revision does not exist on the hub; fix {spec.where}.revision"
        ) from None
    except RepositoryNotFoundError:
        hint = " (a gated repo also reads as missing without a valid HF_TOKEN)" if spec.gated else ""
        raise LieError(
            f"{where}: no such data set on the hub{hint}; fix {spec.where}.hf_id, or set "
            f"{spec.where}.local to a local copy"
        ) from None
    except LocalEntryNotFoundError:
        raise LieError(
            f"{where} is not in the hub cache and the hub cannot be reached"
            f"{' (HF_HUB_OFFLINE is set)' if offline else ''}; download it once with network access "
            f"(`lie data` or `hf download --repo-type dataset {spec.hf_id} --revision {spec.revision}`), "
            f"or set {spec.where}.local to a local mirror"
        ) from None
    except HfHubHTTPError as exc:
        status = getattr(getattr(exc, "response", None), "status_code", None)
        if spec.gated and status in (401, 403):
            raise LieError(_gated_message(spec)) from None
        raise LieError(
            f"{where}: the hub answered HTTP {status}; try again later or use {spec.where}.local"
        ) from None
    folder_path = Path(folder)
    log.info("%s: commit %s in %s", where, folder_path.name, folder_path)
    return folder_path, folder_path.name


def files_for_split(folder: Path, config: str | None, split: str | None, where: str) -> list[Path]:
    """The files of ``config``/``split`` in a repo folder, resolved as ``datasets`` does."""
    import tempfile

    import datasets

    split = split or "train"
    try:
        with tempfile.TemporaryDirectory(prefix="lie-data-") as scratch:  # datasets' lock files go here
            builder = datasets.load_dataset_builder(str(folder), name=config, cache_dir=scratch)
            data_files = dict(builder.config.data_files or {})
    except (ValueError, FileNotFoundError, RuntimeError) as exc:
        fallback = _files_named(folder, config) if config else []
        if fallback:
            return fallback
        raise LieError(
            f"{where}: cannot find the files of config {config!r} in {folder} ({str(exc).splitlines()[0]}); "
            f"fix {where}.config"
        ) from None
    files = {str(k): v for k, v in data_files.items()}
    if split not in files:
        raise LieError(
            f"{where}: split {split!r} is not in {folder} (config {config!r}); it has "
            f"{', '.join(sorted(files)) or 'no data files'}; fix {where}.split"
        )
    return [Path(f) for f in files[split]]


def _files_named(folder: Path, stem: str) -> list[Path]:
    return sorted(
        p for p in folder.rglob(f"{stem}*") if p.is_file() and p.suffix in SUFFIXES and p.stem == stem
    )


def git_blob_sha1(data: bytes) -> str:
    """The git blob id of ``data`` (what GitHub lists for a file at a commit)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def url_cache_dir() -> Path:
    from huggingface_hub import constants

    return Path(os.environ.get("LIE_URL_CACHE") or Path(constants.HF_HOME) / "lie" / "urls")


def url_cache_path(url: str) -> Path:
    key = hashlib.sha256(url.encode()).hexdigest()[:16]
    name = url.rstrip("/").rsplit("/", 1)[-1] or "file"
    return url_cache_dir() / key / name


def fetch_url(url: str, sha1: str | None, where: str) -> Path:
    """The file at ``url``, from the cache or downloaded (with progress), checked against ``sha1``."""
    path = url_cache_path(url)
    if path.exists():
        _check_blob(path.read_bytes(), sha1, url, where, path)
        return path
    if hub_offline():
        raise LieError(
            f"{where}: {url} is not in the download cache ({path}) and HF_HUB_OFFLINE is set; "
            f"download it with network access, or set {where}.local to a copy of that file"
        )
    data = _download(url, where)
    _check_blob(data, sha1, url, where, None)

    with atomic_output(path, "wb") as out:
        out.write(data)
    return path


def _download(url: str, where: str) -> bytes:
    from tqdm import tqdm

    try:
        with urllib.request.urlopen(url, timeout=60) as response:  # noqa: S310 (a pinned https URL)
            total = int(response.headers.get("Content-Length") or 0) or None
            chunks = []
            with tqdm(total=total, unit="B", unit_scale=True, desc=url.rsplit("/", 1)[-1]) as bar:
                while chunk := response.read(1 << 16):
                    chunks.append(chunk)
                    bar.update(len(chunk))
    except OSError as exc:
        raise LieError(
            f"{where}: cannot download {url} ({exc}); set {where}.local to a copy of the file"
        ) from None
    return b"".join(chunks)


def _check_blob(data: bytes, sha1: str | None, url: str, where: str, cached: Path | None) -> None:
    if sha1 is None:
        log.warning("%s: no sha1 for %s, the file is not checked", where, url)
        return
    got = git_blob_sha1(data)
    if got != sha1:
        extra = f" (cached copy {cached}: delete it to download again)" if cached else ""
        raise LieError(
            f"{where}: {url} has git blob id {got}, expected {sha1}{extra}; fix {where}.sha1 or url"
        )
