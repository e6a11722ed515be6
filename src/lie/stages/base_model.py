"""Base models: fetched from the hub at a pinned revision, or built locally (tiny models).

Every stage then reads the model from a local folder (``lie.config.layout.Layout.base_model``), so that
one download serves data, reference lengths, training and evaluation, and the revision is
recorded beside the weights (``lie_source.json``).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from lie.config.layout import Layout
from lie.config.typed import Config, ModelEntry
from lie.core.errors import LieError
from lie.engines.generation import load_tokenizer
from lie.formats.jsonl import dumps
from lie.formats.model_folder import failed_file, write_failure
from lie.formats.outputs import check_output_folder, partial_folder, replace_folder
from lie.formats.rows import ground_truth, prompt_messages, read_rows
from lie.stages.data.sources import hub_offline
from lie.stages.sft import run_sft, tokenizer_corpus
from lie.stages.tiny import build_tiny

log = logging.getLogger(__name__)
MODEL_FILES = ["*.json", "*.safetensors", "*.txt", "*.model", "*.jinja", "*.tiktoken", "*.py"]


SOURCE = "lie_source.json"  # beside the weights: what they were made from (also marks the folder as lie's)


def check_out(out: Path, inputs: list[Path] | None = None) -> None:
    """Before any work: ``out`` is new, empty, or a model folder lie built (never a folder of the user's)."""
    check_output_folder(out, inputs or [], legacy=SOURCE)


def _replace_dir(tmp: Path, out: Path, source: dict[str, Any]) -> None:
    (tmp / SOURCE).write_text(dumps(source, indent=2), encoding="utf-8")
    replace_folder(tmp, out, {"command": "base-model", **source}, legacy=SOURCE)


def snapshot(name: str, entry: ModelEntry) -> Path:
    """The hub cache's folder of the entry's ``hf_id`` at its ``revision``, downloading it if needed."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import (
        GatedRepoError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    hf_id, revision = entry.hf_id, entry.revision
    if not hf_id or not revision:
        raise LieError(f"models.{name}: set hf_id and revision (a commit SHA, tag or branch), or path")
    where = f"models.{name}: {hf_id}@{revision}"
    try:
        return Path(
            snapshot_download(
                repo_id=hf_id, revision=revision, allow_patterns=MODEL_FILES, local_files_only=hub_offline()
            )
        )
    except (RepositoryNotFoundError, GatedRepoError) as exc:
        raise LieError(
            f"{where} not found or not accessible ({type(exc).__name__}); check the id, or set HF_TOKEN"
        ) from None
    except RevisionNotFoundError:
        raise LieError(f"{where}: that revision does not exist") from None
    except LocalEntryNotFoundError:
        raise LieError(
            f"{where} is not in the local hub cache and the hub is unreachable (HF_HUB_OFFLINE=1?); "
            f"download it once on a connected machine, or set models.{name}.path"
        ) from None


def resolve_model(config: Config, model: str) -> tuple[str, ModelEntry | None]:
    """A local folder for ``model`` (a name of config ``models:``, or a folder) and its config entry.

    A name resolves to its ``path``, else the folder ``lie base-model`` made for it, else (hub
    models) the pinned snapshot in the hub cache; a tiny model must have been built first.
    """
    if model in config.models:
        entry = config.model(model)
        if entry.path:
            return str(entry.path), entry
        built = Layout(config).base_model(model)
        if built.is_dir():
            return str(built), entry
        if entry.tiny:
            raise LieError(f"models.{model} is a tiny model not built yet: run `lie base-model {model}`")
        return str(snapshot(model, entry)), entry
    if Path(model).is_dir():
        return model, None
    raise LieError(
        f"model {model!r} is neither a model of the config ({', '.join(config.models)}) nor a folder"
    )


def tokenizer_for(config: Config, model: str) -> Any:
    """The tokenizer of ``model`` (a name of config ``models:``, or a folder), remote code only if the config allows."""
    path, _ = resolve_model(config, model)
    return load_tokenizer(str(path), trust_remote_code=config.trust_remote_code)


def file_sha256(path: str | Path) -> str:
    """Content digest of an input, recorded beside what was made from it."""
    import hashlib

    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def fetch_model(name: str, entry: ModelEntry, out: Path) -> Path:
    """The entry's ``hf_id`` at its ``revision`` into the hub cache, linked file by file from ``out``.

    The weights stay in the hub cache (``HF_HOME``, shared on a cluster); ``out`` holds links to
    them and ``lie_source.json`` with the commit. Offline (``HF_HUB_OFFLINE=1``) the cache alone
    serves it.
    """
    check_out(out)
    folder = snapshot(name, entry)
    where = f"models.{name}: {entry.hf_id}@{entry.revision}"
    hf_id, revision = entry.hf_id, entry.revision
    tmp = partial_folder(out)
    with _writing(tmp, out):
        for path in folder.rglob("*"):
            if path.is_file():
                link = tmp / path.relative_to(folder)
                link.parent.mkdir(parents=True, exist_ok=True)
                link.symlink_to(path.resolve())
        _replace_dir(tmp, out, {"hf_id": hf_id, "revision": revision, "commit": folder.name})
    log.info("%s: commit %s, linked from %s", where, folder.name, out)
    return out


def corpus_texts(files: list[Path]) -> list[str]:
    """Prompt texts and answers of data files (parquet in verl's format), to train a tiny tokenizer."""
    texts: list[str] = []
    for path in files:
        for number, row in enumerate(read_rows(path, ("prompt", "reward_model"), only=True)):
            where = f"{path} row {number}"
            texts.extend(m["content"] for m in prompt_messages(row, where))
            texts.append(f"The answer is \\boxed{{{ground_truth(row, where)}}}.")
    return texts


def build_tiny_model(
    name: str,
    entry: ModelEntry,
    out: Path,
    corpus_files: list[Path],
    template: str | None = None,
    sft_cache: str | Path | None = None,
) -> Path:
    """A tiny model built here; with ``sft:`` in its entry, taught by the supervised stage (lie.stages.sft).

    ``template`` is the config's ``prompt.math``: the supervised stage prompts as the pipeline does.
    Without ``sft`` (or ``sft: null``) the model keeps its random weights (the smoke run).
    ``sft_cache``: the config's folder of full-solution states, shared by models that differ only in
    their shallow phase (None: none).
    """
    check_out(out, corpus_files)
    tiny = entry.tiny
    if tiny is None:
        raise LieError(f"models.{name}: not a tiny model (no tiny:)")
    corpus = corpus_texts(corpus_files)
    source: dict[str, Any] = {"tiny": entry.tiny_as_written()}
    train = None
    if entry.sft is not None:
        settings = entry.sft
        if not template:
            raise LieError(f"models.{name}.sft needs the config's prompt.math template")
        corpus += tokenizer_corpus(settings, template)

        def train(model: Any, tokenizer: Any) -> None:
            source["sft"] = run_sft(model, tokenizer, settings, template, sft_cache)

    tmp = partial_folder(out)
    with _writing(tmp, out):
        build_tiny(
            tmp,
            corpus,
            seed=tiny.seed,
            vocab_size=tiny.vocab_size,
            hidden=tiny.hidden,
            layers=tiny.layers,
            train=train,
            head_dim=tiny.head_dim or None,
        )
        _replace_dir(tmp, out, source)
    return out


@contextlib.contextmanager
def _writing(tmp: Path, out: Path) -> Iterator[None]:
    """A model folder the file system refused (full disk, quota, file-size limit) is one line naming
    the file; the folder stays ``.partial`` (the output never appears, a rerun starts it again)."""
    try:
        yield
    except LieError:
        raise
    except Exception as exc:  # safetensors and tokenizers wrap a full disk in their own errors
        reason = write_failure(exc)
        if reason is None:
            raise
        raise LieError(
            f"cannot write {failed_file(exc, tmp)} ({reason}) while building {out}; free space (or choose "
            "another place) and rerun"
        ) from exc


def make_base_model(
    config: Config, name: str, out: str | Path | None = None, corpus: Sequence[str] = ()
) -> Path:
    """``lie base-model``: model ``name`` of the config in ``out`` (default ``<outdir>/base/<name>``):
    fetched at its revision, or built (``tiny:``, then taught by ``sft:`` if given)."""
    entry = config.model(name)
    folder = Path(out) if out else Layout(config).root / "base" / name
    folder.parent.mkdir(parents=True, exist_ok=True)
    if entry.sft is not None and not entry.tiny:
        raise LieError(f"models.{name}.sft: the supervised stage is for tiny models; add tiny: or drop sft:")
    if entry.tiny:
        template = config.prompt.math
        build_tiny_model(name, entry, folder, [Path(p) for p in corpus], template, config.sft_cache)
    elif entry.path:
        raise LieError(f"models.{name} points at a local folder ({entry.path}); there is nothing to fetch")
    else:
        fetch_model(name, entry, folder)
    return folder
