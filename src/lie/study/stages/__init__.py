"""The CPU study's stages: the logic of its ``lie study-*`` commands (``lie.study.commands``).

They sample through the pipeline's stages (``probe``: ``lie.stages.generate``) and read and write the
study's files with the read-only modules of ``lie.study`` (``steps``: responses, gates, report). Nothing
of the reproduction imports them.
"""
