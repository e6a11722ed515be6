# The LIE reproduction pipeline: one rule per arrow of README's data flow ("What comes out"), each calling the `lie` CLI.
#
# Launch through `lie snakemake` (README: it reads every --configfile with lie's bounded YAML reader
# first, so a bad file is one line), with .venv/bin on PATH (the Makefile's targets do):
#   lie snakemake -n                                             # the paper's matrix (config.yaml), dry run
#   lie snakemake --profile profiles/slurm                       # on a Slurm cluster of 4xH100 nodes
#   lie snakemake --configfile workflow/configs/smoke.yaml -c2   # the whole DAG on a CPU (make smoke)
#   lie snakemake --config 'runs=[qwen3-4b-base_dapo_gspo]'      # a subset of the runs
#   lie snakemake --configfile workflow/configs/study.yaml -c2 study   # the CPU study (make study)
from snakemake.utils import min_version

min_version("9.0")


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/report.smk"
include: "workflow/rules/study.smk"


rule all:
    input:
        report_outputs(),
    default_target: True
