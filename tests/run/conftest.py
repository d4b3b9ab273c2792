"""The finished training run the output-directory probes copy and damage (shared with tests/faults)."""

from tests.faults.conftest import run_copy, trained_run  # noqa: F401 - fixtures
