"""``lie data NAME --config config.yaml --out FILE.parquet``: one data set in verl rows.

The source, revision, split, format and selection of NAME come from ``datasets:`` in the config
(see docs/data.md); the file records them in its parquet metadata. ``--limit N`` keeps the first
N rows (smoke runs); ``--bare`` writes an evaluation set's bare questions (its ``bare`` file, else
the question alone), for the models of ``evaluation.bare_questions``. Offline: ``HF_HUB_OFFLINE=1``
reads the hub cache, or set ``local:``. ``--compare-with FILE`` then prints, as JSON, the rows found
in only one of the two files (``lie.stages.data.compare``: e.g. our DAPO set beside the authors').
Example: ``lie data aime24 --out data/aime24.parquet``.
"""

from __future__ import annotations

import argparse
import json

from lie.commands.argtypes import add_config_option, load_config_option
from lie.stages.data.build import build_and_compare


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_option(parser, "the pipeline's config.yaml")
    parser.add_argument("name", help="a data set of config.yaml (datasets.train or datasets.eval)")
    parser.add_argument("--out", required=True, help="output parquet file (written atomically)")
    parser.add_argument("--limit", type=int, default=None, help="keep the first N rows (smoke runs)")
    parser.add_argument(
        "--bare", action="store_true", help="the bare questions (evaluation sets; evaluation.bare_questions)"
    )
    parser.add_argument(
        "--compare-with",
        default=None,
        help="a verl file of the same problems (the authors'): print the differences",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")


def run(args: argparse.Namespace) -> int:
    differences = build_and_compare(
        load_config_option(args),
        args.name,
        args.out,
        limit=args.limit,
        progress=not args.no_progress,
        bare=args.bare,
        compare_with=args.compare_with,
    )
    if differences is not None:
        print(json.dumps(differences, indent=2, ensure_ascii=False))
    return 0
