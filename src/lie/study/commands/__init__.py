"""The CPU study's ``lie study-*`` subcommands, one argparse shim each (``lie.cli`` registers them): it
parses its flags and calls a stage of ``lie.study.stages``."""
