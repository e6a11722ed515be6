"""A model folder checked before any library loads it: one line naming the folder and the file.

transformers, tokenizers and safetensors answer a cut-short download, a ``config.json`` that is
``[]`` or 100,000 levels deep, or a tokenizer file of random bytes with a ``TypeError``,
``RecursionError`` or ``KeyError`` from deep inside. Here every file the loaders read is checked
by lie's own readers first: ``config.json`` a JSON object with a ``model_type``; each weights file's
safetensors header readable, its tensors' sizes filling the file exactly; the tokenizer's JSON files
JSON objects; the chat template UTF-8. Loading the tokenizer, rendering the chat template and the
weights' values (NaN) are checked where the libraries load them (``lie.engines.generation``).
"""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path
from typing import Any

from lie.core.errors import LieError
from lie.formats.jsonl import FIX, loads_line, read_bounded

CONFIG_LIMIT = 16 << 20  # config.json, tokenizer_config.json: a few KiB in every released model
TOKENIZER_LIMIT = 512 << 20  # tokenizer.json (Qwen3: 11 MB; the largest vocabularies: ~100 MB)
HEADER_LIMIT = 100 << 20  # safetensors' own bound on a header (MAX_HEADER_SIZE)
JSON_FILES = ("tokenizer_config.json", "tokenizer.json", "special_tokens_map.json", "generation_config.json")
WEIGHTS = "model.safetensors"
INDEX = "model.safetensors.index.json"
REFETCH = "fetch or copy the model again (`lie base-model`), or point --model at a complete folder"


def _json_object(path: Path, limit: int) -> dict[str, Any]:
    """The JSON object of ``path`` by lie's strict reader (bounded size and depth, UTF-8, finite)."""
    data = read_bounded(path, limit)
    try:
        value = loads_line(data, str(path))
    except LieError as exc:
        raise LieError(f"{str(exc).removesuffix('; ' + FIX)}; {REFETCH}") from None
    if not isinstance(value, dict):
        raise LieError(f"{path}: holds a JSON {type(value).__name__}, not an object; {REFETCH}")
    return value


def _safetensors_problem(path: Path) -> str | None:
    """Why the safetensors file ``path`` cannot be loaded (its header, read by the safetensors library,
    and the file's size against the tensors it declares), else None."""
    from safetensors import SafetensorError, safe_open

    size = path.stat().st_size
    if size < 8:
        return f"{size} bytes, shorter than a safetensors header"
    with open(path, "rb") as handle:
        declared = int.from_bytes(handle.read(8), "little")
    if declared > min(HEADER_LIMIT, size - 8):
        return f"its header claims {declared:,} bytes of a {size:,}-byte file: not safetensors, or cut short"
    try:
        with safe_open(str(path), framework="numpy"):
            pass
    except (SafetensorError, OSError, ValueError) as exc:
        return f"not a readable safetensors file ({str(exc).strip()[:200]})"
    return None


def _weights(folder: Path) -> list[Path]:
    """The safetensors files the folder's loader reads (one file, or the shards of its index)."""
    if (folder / INDEX).is_file():
        index = _json_object(folder / INDEX, CONFIG_LIMIT)
        weight_map = index.get("weight_map")
        if not isinstance(weight_map, dict) or not all(isinstance(v, str) for v in weight_map.values()):
            raise LieError(f"model folder {folder}: {INDEX} has no weight_map of file names; {REFETCH}")
        shards = sorted(set(weight_map.values()))
        for name in shards:
            if Path(name).name != name:
                raise LieError(f"model folder {folder}: {INDEX} names {name!r}, not a file of the folder")
            if not (folder / name).is_file():
                raise LieError(f"model folder {folder}: {name} (named by {INDEX}) is missing; {REFETCH}")
        return [folder / name for name in shards]
    if (folder / WEIGHTS).is_file():
        return [folder / WEIGHTS]
    if any((folder / name).is_file() for name in ("pytorch_model.bin", "pytorch_model.bin.index.json")):
        return []  # pickled weights: the loader's own checks (lie's pipeline writes safetensors)
    raise LieError(f"model folder {folder}: no weights ({WEIGHTS} or {INDEX}); {REFETCH}")


def check_model_folder(path: str | os.PathLike[str], weights: bool = True) -> dict[str, Any] | None:
    """Refuse, in one line naming the folder and file, a model folder a loader would fail on.

    ``weights=False`` checks what a tokenizer needs (``config.json`` then optional). Returns the
    parsed ``config.json`` (None where a tokenizer-only check found none).
    """
    folder = Path(path)
    if not folder.is_dir():
        what = "is not a folder" if folder.exists() else "does not exist"
        raise LieError(f"model folder {folder} {what}")
    if not any(folder.iterdir()):
        raise LieError(f"model folder {folder} is empty; {REFETCH}")
    config = None
    if (folder / "config.json").exists() or weights:
        if not (folder / "config.json").exists():
            raise LieError(f"model folder {folder}: config.json is missing; {REFETCH}")
        config = _json_object(folder / "config.json", CONFIG_LIMIT)
        if not isinstance(config.get("model_type"), str) or not config["model_type"]:
            raise LieError(f"{folder / 'config.json'}: names no model_type; {REFETCH}")
        problem = _config_problem(config)
        if problem:
            raise LieError(f"{folder / 'config.json'}: {problem}; {REFETCH}")
    for name in JSON_FILES:
        if (folder / name).exists():
            _json_object(folder / name, TOKENIZER_LIMIT if name == "tokenizer.json" else CONFIG_LIMIT)
    if (folder / "chat_template.jinja").exists():
        try:
            read_bounded(folder / "chat_template.jinja", CONFIG_LIMIT).decode("utf-8")
        except UnicodeDecodeError:
            raise LieError(f"{folder / 'chat_template.jinja'}: not UTF-8 text; {REFETCH}") from None
    if weights:
        files = _weights(folder)
        for file in files:
            problem = _safetensors_problem(file)
            if problem:
                raise LieError(f"{file}: {problem}; {REFETCH}")
        if files and config is not None:
            check_weights_match(folder, files, config)
    return config


def _config_problem(config: dict[str, Any]) -> str | None:
    """Why transformers cannot read ``config`` (a field of the wrong type: ``"vocab_size": "abc"``), for
    a ``model_type`` it knows; else None. Without this the tokenizer's loader, which reads it too,
    reported it as a tokenizer problem."""
    from transformers import AutoConfig
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    if config["model_type"] not in CONFIG_MAPPING:
        return None  # the folder's own code (trust_remote_code) or an unknown type: the loader's line
    try:
        AutoConfig.for_model(**config)
    except Exception as exc:  # transformers' strict dataclass validation, a TypeError or ValueError
        lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
        return f"transformers cannot read it ({lines[-1][:300] if lines else type(exc).__name__})"
    return None


def _saved_shapes(files: list[Path]) -> dict[str, tuple[int, ...]]:
    """Every tensor's name and shape in the safetensors ``files``, read from their headers only."""
    from safetensors import safe_open

    shapes: dict[str, tuple[int, ...]] = {}
    for file in files:
        with safe_open(str(file), framework="numpy") as handle:
            for name in handle.keys():  # noqa: SIM118 (a safetensors handle, not a dict)
                shapes[name] = tuple(handle.get_slice(name).get_shape())
    return shapes


def _expected_shapes(config: dict[str, Any]) -> tuple[dict[str, tuple[int, ...]], str, set[str]] | None:
    """The parameters the architecture ``config`` describes (built on the meta device: no memory, no
    weights read), its base model's prefix and the names tied to another (the output embedding); None
    where transformers cannot build it (its loader then says why)."""
    import logging

    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    quiet = logging.getLogger("transformers")
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    try:
        settings = AutoConfig.for_model(**config)
        with torch.device("meta"):
            model = AutoModelForCausalLM.from_config(settings, trust_remote_code=False)
    except Exception:  # an architecture only the folder's own code builds, or none transformers knows
        return None
    finally:
        quiet.setLevel(level)
    tied: set[str] = set()
    if getattr(settings, "tie_word_embeddings", False):
        output = model.get_output_embeddings()
        tied = {
            f"{name}.weight"
            for name, module in model.named_modules()
            if output is not None and module is output
        }
    import re

    ignored = [re.compile(p) for p in getattr(model, "_keys_to_ignore_on_load_missing", None) or []]
    shapes = {name: tuple(t.shape) for name, t in model.state_dict().items()
              if not any(p.search(name) for p in ignored)}  # fmt: skip
    return shapes, str(getattr(model, "base_model_prefix", "") or ""), tied


def _listed(names: list[str]) -> str:
    shown = ", ".join(sorted(names)[:3])
    return shown + (f" and {len(names) - 3} more" if len(names) > 3 else "")


def check_weights_match(folder: str | os.PathLike[str], files: list[Path], config: dict[str, Any]) -> None:
    """The weights hold exactly the parameters ``config.json``'s architecture has, of its shapes: none
    missing (the output embedding aside where tied to the input's), none unexpected, one line naming
    the first of each. transformers would otherwise load such a folder with the missing parameters
    randomly initialised and only a table in its log (a one-tensor file, a layer missing, every name
    prefixed, ``model_type: llama`` over Qwen weights); vLLM's loader differs again. Every engine that
    loads a folder goes through :func:`check_model_folder`, which calls this."""
    built = _expected_shapes(config)
    if built is None:
        return
    expected, prefix, tied = built
    saved = _saved_shapes(files)
    if prefix and not any(n.startswith(prefix + ".") for n in saved):  # a base model's own checkpoint?
        bare = {n.removeprefix(prefix + "."): s for n, s in expected.items()}
        if len(bare.keys() & saved.keys()) > len(expected.keys() & saved.keys()):
            expected, tied = bare, {n.removeprefix(prefix + ".") for n in tied}
    missing = [n for n in expected if n not in saved and n not in tied]
    unexpected = [n for n in saved if n not in expected]
    wrong = [f"{n} {list(saved[n])} (expected {list(expected[n])})" for n in expected
             if n in saved and saved[n] != expected[n]]  # fmt: skip
    problems = []
    if missing:
        problems.append(f"{len(missing)} parameter(s) missing ({_listed(missing)})")
    if unexpected:
        problems.append(f"{len(unexpected)} unexpected ({_listed(unexpected)})")
    if wrong:
        problems.append(f"{len(wrong)} of another shape ({_listed(wrong)})")
    if problems:
        names = ", ".join(f.name for f in files)
        raise LieError(
            f"model folder {folder}: the weights ({names}) do not match config.json's "
            f"{config.get('model_type')} architecture: {'; '.join(problems)}; {REFETCH}"
        )


# what torch ("file write failed"), safetensors ("os error 28") and Python say when a disk is full
_FULL = re.compile(
    r"No space left on device|File too large|Disk quota exceeded|Read-only file system|file write failed"
    r"|os error (?:28|27|122|30)\b",
    re.IGNORECASE,
)
_TORCH_WRITER = re.compile(r"inline_container|PytorchStreamWriter|iostream error")
_FULL_ERRNOS = frozenset(
    getattr(errno, name) for name in ("ENOSPC", "EDQUOT", "EFBIG", "EROFS") if hasattr(errno, name)
)


def write_failure(exc: BaseException) -> str | None:
    """The reason, if ``exc`` (or what caused it) is a write the file system refused: a full disk, a
    quota, a file-size limit (EFBIG), a read-only file system; also when torch or safetensors wrap
    it in their own error (no errno, no file name), else None."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, OSError) and cause.errno is not None and cause.errno in _FULL_ERRNOS:
            return cause.strerror or os.strerror(cause.errno)
        match = _FULL.search(str(cause))
        if match:
            text = match.group(0)
            if text.lower().startswith("os error"):
                return os.strerror(int(text.split()[-1]))
            return "the disk is full or the file too large" if text == "file write failed" else text
        cause = cause.__cause__ or cause.__context__
    return None


def failed_file(exc: BaseException, folder: str | os.PathLike[str]) -> Path:
    """The file a failed save into ``folder`` was writing: the one the error names, the weights when
    safetensors failed (its error names no file), else the folder."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, OSError) and cause.filename is not None:
            return Path(os.fsdecode(cause.filename2 if cause.filename2 is not None else cause.filename))
        if type(cause).__module__.startswith("safetensors"):
            return Path(folder) / WEIGHTS
        if _TORCH_WRITER.search(str(cause)):  # torch.save: the newest pickle in the folder
            pickles = [p for p in Path(folder).glob("*.p*") if p.suffix in (".pt", ".pth", ".bin")]
            if pickles:
                return max(pickles, key=lambda p: p.stat().st_mtime_ns)
        cause = cause.__cause__ or cause.__context__
    return Path(folder)
