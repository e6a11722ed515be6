"""The floating-point setting every job of a study runs under, so that two x86-64 machines compute the same
supervised models, probes and runs.

On one machine the study is bit-reproducible; across machines the numbers can part where a library picks
its kernels by the CPU it finds: torch's own vectorised kernels (``ATEN_CPU_CAPABILITY``: AVX-512 on one
CPU, AVX2 on another), MKL's matrix products (its code path and blocking follow the CPU: ``MKL_CBWR``
fixes them, MKL's conditional numerical reproducibility), oneDNN's (``ONEDNN_MAX_CPU_ISA``), and the number
of threads a reduction is split over. The study's Snakemake rules (workflow/rules/study.smk) put
:data:`STUDY_ENV` into the environment of every job of a config with a ``study:`` section, whatever the
caller's environment says; the supervised stage also runs one torch thread and records what it ran under
(``lie.stages.sft``). An x86-64 CPU without AVX2 cannot run these settings.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping

STUDY_ENV = {
    "ATEN_CPU_CAPABILITY": "avx2",  # torch's kernels: the AVX2 ones, also on an AVX-512 CPU
    "MKL_CBWR": "AVX2,STRICT",  # MKL: the AVX2 code path, the same bits on every CPU that has it
    "ONEDNN_MAX_CPU_ISA": "AVX2",  # oneDNN: at most AVX2
    "OMP_NUM_THREADS": "1",  # one thread a job (Snakemake also sets it from the rule's threads)
    "MKL_NUM_THREADS": "1",
}


def pin(environ: MutableMapping[str, str]) -> None:
    """Set :data:`STUDY_ENV` in ``environ`` (a process's environment, inherited by the jobs it starts)."""
    environ.update(STUDY_ENV)


def pinned(environ: Mapping[str, str]) -> bool:
    """Whether ``environ`` holds the study's setting."""
    return all(environ.get(k) == v for k, v in STUDY_ENV.items())
