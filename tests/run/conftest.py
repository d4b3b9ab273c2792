"""The finished training run the output-directory probes copy and damage: ``trained_run`` and ``run_copy`` in
tests/conftest.py (shared with the fault probes beside other units)."""
