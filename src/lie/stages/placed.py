"""Where a command's config places what it writes (a run folder, the report's tables): each command
checks these against its inputs before any work (``lie.formats.overlap.refuse_overlap``)."""

from __future__ import annotations

from pathlib import Path

from lie.config.layout import Layout
from lie.config.typed import Config


def placed_outputs(config: Config, command: str, name: str | None = None) -> dict[str, Path]:
    """What ``lie COMMAND [NAME]`` writes under the config's ``outdir`` without a flag naming it, by
    label; {} for a name the config lacks (the stage's own one line says so)."""
    layout = Layout(config)
    if command == "report":
        return {"the tables": layout.tables, "the figures": layout.figures}
    if command == "train" and name is not None and name in config.experiments:
        return {"the run folder": layout.run_dir(name).root}
    if command == "merge" and name is not None and name in config.experiments:
        return {"the merged model": layout.merged_model(name)}
    if command == "base-model" and name:
        return {"the model folder": config.outdir / "base" / name}
    if command == "preflight":
        return {"--workdir": config.outdir / "preflight"}
    return {}
