"""Shared fixtures: a tiny offline model and a finished run (each built once per test run, shared by pytest-xdist's
workers), a helper that writes recipes, the markers (tests/e2e: ``slow``; ``FAULT_PROBES``: ``fault``) and CI's
no-skip rule."""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, settings

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # `tests.naive_rewards` and `bench` import from the checkout
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
WORKER = os.environ.get("PYTEST_XDIST_WORKER")  # gw0, gw1...: `make test` runs the suite in pytest-xdist workers
if WORKER:  # one torch thread per worker (set before torch loads; subprocesses inherit it): N workers fill N cores
    os.environ.setdefault("OMP_NUM_THREADS", "1")
# hypothesis: no per-example deadline and no too-slow health check, suite-wide (a test's own settings still win): on
# 2 shared cores an example's wall time measures the machine's load, not the code under test
settings.register_profile("shared-cores", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("shared-cores")


def shared_build(tmp_path_factory, name: str, build) -> str:
    """``build(folder)`` once per test run, its result shared by every xdist worker: the first to come builds it
    under a file lock, the others wait and reuse it (read-only, like any session fixture)."""
    from filelock import FileLock

    base = tmp_path_factory.getbasetemp()
    root = (base.parent if WORKER else base) / "shared-builds"
    root.mkdir(exist_ok=True)
    done = root / f"{name}.done"
    with FileLock(str(root / f"{name}.lock")):
        if not done.exists():
            done.write_text(str(build(root / f"{name}-{WORKER or 'main'}")))  # a failed build leaves its own folder
    return done.read_text()


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory) -> str:
    from grpo_trl.models.tiny import build_tiny_model

    return shared_build(tmp_path_factory, "tiny", lambda folder: build_tiny_model(folder / "model"))


def tiny_recipe(tmp_path: Path, model: str, *, rewards=None, trainer=None, data=None, extra=None) -> Path:
    """A small, fast recipe on the tiny model; sections can be replaced or extended."""
    recipe = {
        "model": {"name": model, "dtype": "float32"},
        "data": data or {"builder": "countdown", "source": "generate", "size": 64, "system_prompt": "none"},
        "rewards": rewards or [{"name": "xml_format", "args": {"tags": ["think", "answer"], "per_tag": 0.25}}],
        "trainer": {
            "output_dir": str(tmp_path / "out"),
            "max_steps": 4,
            "num_generations": 4,
            "per_device_train_batch_size": 8,
            "max_completion_length": 12,
            "learning_rate": 1e-3,
            "logging_steps": 1,
            "save_strategy": "no",
            "report_to": "none",
            "seed": 0,
            "use_cpu": True,
            "bf16": False,
            **(trainer or {}),
        },
        **(extra or {}),
    }
    path = tmp_path / "recipe.yaml"
    path.write_text(yaml.safe_dump(recipe, sort_keys=False))
    return path


@pytest.fixture
def make_recipe(tmp_path, tiny_model):
    def make(**kwargs) -> Path:
        return tiny_recipe(tmp_path, tiny_model, **kwargs)

    return make


@pytest.fixture(scope="session")
def tool_model(tmp_path_factory) -> str:
    """``builtin:tiny-tools``: the tiny model warmed to call tools (TRL SFTTrainer, once per test session).

    ``GRPO_TRL_TOOL_MODEL=DIR`` reuses one built earlier (``python -m grpo_trl.models.tiny_tools DIR``)."""
    from grpo_trl.models.tiny_tools import build_tiny_tool_model

    if os.environ.get("GRPO_TRL_TOOL_MODEL"):
        return os.environ["GRPO_TRL_TOOL_MODEL"]
    return shared_build(tmp_path_factory, "tiny-tools", lambda folder: build_tiny_tool_model(folder / "model"))


# A real finished training run (checkpoints 2 and 4, final save) that output-directory tests copy and damage
RUN = {"max_steps": 4, "save_strategy": "steps", "save_steps": 2}


@pytest.fixture(scope="session")
def trained_run(tmp_path_factory, tiny_model) -> Path:
    """Trained once per test run, shared by the xdist workers (tests only copy it)."""
    from grpo_trl.cli import train_main

    def train(base: Path) -> Path:
        base.mkdir()
        path = tiny_recipe(base, tiny_model, trainer=RUN, extra={"logging": {"completions_every": 1}})
        assert train_main([str(path)]) == 0
        return base / "out"

    return Path(shared_build(tmp_path_factory, "trained-run", train))


@pytest.fixture
def run_copy(trained_run, tmp_path, tiny_model):
    """``make(**trainer)`` -> (recipe path, output_dir): a private copy of the finished run and its recipe."""

    def make(trainer: dict | None = None, **kwargs) -> tuple[Path, Path]:
        out = tmp_path / "out"
        shutil.copytree(trained_run, out, symlinks=True)
        extra = {"logging": {"completions_every": 1}, **kwargs.pop("extra", {})}
        return tiny_recipe(tmp_path, tiny_model, trainer={**RUN, **(trainer or {})}, extra=extra, **kwargs), out

    return make


def snapshot(folder: Path) -> dict[str, tuple[str, int]]:
    """Every file under ``folder`` (the lock files aside) with its sha256 and mtime."""
    out = {}
    for p in sorted(folder.rglob("*")):
        rel = str(p.relative_to(folder))
        if p.is_file() and rel not in (".grpo-trl/lock", ".grpo-trl/lock.json"):
            out[rel] = (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
    return out


# Fault probes that live in a unit's test file beside its other tests (the rest of such a file is not a probe)
FAULT_PROBES = {
    "test_a_misbehaving_reset_is_one_error_naming_the_environment",
    "test_a_result_str_cannot_render_costs_the_call",
    "test_a_trickling_answer_is_cut_off_at_timeout_per_attempt",
    "test_an_endless_answer_is_bounded_in_bytes",
    "test_a_malformed_url_is_one_error",
    "test_probe_is_bounded_in_wall_time_against_a_trickling_server",
    "test_each_failure_costs_only_its_row",
}


# Session fixtures that take a minute to build: the tests using one share an xdist group (make test's --dist
# loadgroup), so one worker builds it and runs them while the other goes on with other tests instead of waiting idle
# on the build's lock
GROUPED_FIXTURES = ("tool_model",)
# Module fixtures that train or score for 5-30 s: their users share an xdist group too (not ranked first), so the
# fixture is built once per run, not once in each worker that gets one of its tests
GROUPED_MODULE_FIXTURES = ("rigged_run", "lora_run", "sampled")
# make test's longest units first (its --no-loadscope-reorder keeps this order), then the other slow tests, then the
# rest: the workers end together instead of one finishing a demo alone
LONG_FIRST = ("demo-countdown", "demo-gsm8k", "two-process-launch", *GROUPED_FIXTURES)


def _rank(item) -> int:
    group = item.get_closest_marker("xdist_group")
    if group and group.args and group.args[0] in LONG_FIRST:
        return LONG_FIRST.index(group.args[0])
    return len(LONG_FIRST) + (item.get_closest_marker("slow") is None)


@pytest.hookimpl(tryfirst=True)  # before xdist reads the xdist_group markers
def pytest_collection_modifyitems(items):
    """Markers: each test of ``FAULT_PROBES`` is a ``fault`` probe (``make faults``; whole probe files beside their
    unit say ``pytestmark = pytest.mark.fault``); everything under tests/e2e is ``slow`` (not in make test-fast);
    the users of a ``GROUPED_FIXTURES`` fixture share an ``xdist_group``; in xdist workers the longest come first."""
    e2e = ROOT / "tests" / "e2e"
    for item in items:
        if getattr(item, "originalname", None) in FAULT_PROBES:
            item.add_marker(pytest.mark.fault)
        elif Path(str(item.path)).is_relative_to(e2e):
            item.add_marker(pytest.mark.slow)
        for name in (*GROUPED_FIXTURES, *GROUPED_MODULE_FIXTURES):
            if name in getattr(item, "fixturenames", ()):
                item.add_marker(pytest.mark.xdist_group(name))
    if WORKER:  # the order xdist hands the tests out in (one process: file order, module fixtures built once)
        items.sort(key=_rank)
        for item in items:
            group = item.get_closest_marker("xdist_group")
            if group and hasattr(item, "_id"):
                from _pytest.nodeid import NodeId  # pytest >= 9.2 only

                # pytest >= 9.2 keeps the node id in ``_id``, so xdist 3.8's ``item._nodeid = id@group`` no longer
                # reaches the scheduler and every group was split across the workers (both waited on one build);
                # the suffix set here is what xdist means to set (a second ``@group`` from it is harmless)
                item._id = NodeId.parse(f"{item.nodeid}@{group.args[0]}")


@pytest.fixture(scope="session", autouse=True)
def _token_filter_cache(tmp_path_factory):
    """Token-length filter results go to a per-session folder, never to the user's ~/.cache (subprocesses too)."""
    os.environ["GRPO_TRL_CACHE"] = str(tmp_path_factory.mktemp("grpo-trl-cache"))
    yield


# CI (.ci/run sets GRPO_TRL_CI=1): a skipped test fails the run, except the vLLM tests, which CI runs in .venv-vllm.
# GRPO_TRL_ALLOW_NO_TESTS=1 (.ci/run with PYTEST_ARGS narrowing every step): a step left without tests passes.
IN_CI = os.environ.get("GRPO_TRL_CI") == "1"
CI_SKIPPED: dict[str, None] = {}  # ordered, once each (a test module is also collected for its doctests)
CI_NOT_ROOT: dict[str, None] = {}  # root-only probes skipped because CI ran as another user


def _note_skip(report) -> None:
    from tests.vllm_runs import SKIP_REASON, VERIFIERS_SKIP

    if IN_CI and report.skipped and not hasattr(report, "wasxfail"):
        longrepr = report.longrepr  # (path, line, reason); a list when it came from an xdist worker
        reason = longrepr[2] if isinstance(longrepr, (tuple, list)) else str(longrepr)
        if SKIP_REASON in reason or VERIFIERS_SKIP in reason:
            return
        if os.geteuid() != 0 and ("root" in reason or "namespaces" in reason):
            # CI runs as root on this project's machines; under another user these probes cannot run at all, and
            # failing every such CI run would hide what did run. They are listed, not counted as failures.
            CI_NOT_ROOT[f"{report.nodeid}: {reason}"] = None
            return
        CI_SKIPPED[f"{report.nodeid}: {reason}"] = None


def pytest_collectreport(report):
    _note_skip(report)


def pytest_runtest_logreport(report):
    _note_skip(report)


def pytest_terminal_summary(terminalreporter):
    if CI_NOT_ROOT:
        terminalreporter.write_line(f"CI: NOTE: not root, so {len(CI_NOT_ROOT)} root-only probe(s) did not run:")
        for line in CI_NOT_ROOT:
            terminalreporter.write_line(f"  {line}")
    if CI_SKIPPED:
        terminalreporter.write_line(f"CI: {len(CI_SKIPPED)} skipped test(s), none may skip in CI:", red=True)
        for line in CI_SKIPPED:
            terminalreporter.write_line(f"  {line}", red=True)


def pytest_sessionfinish(session, exitstatus):
    if exitstatus == 5 and os.environ.get("GRPO_TRL_ALLOW_NO_TESTS") == "1":
        session.exitstatus = 0
    if CI_SKIPPED and exitstatus in (0, 5):  # 5: every selected test skipped at collection
        session.exitstatus = 1
