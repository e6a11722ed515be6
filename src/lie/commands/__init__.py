"""One module per ``lie`` subcommand: ``add_arguments(parser)`` and ``run(args) -> int``."""
