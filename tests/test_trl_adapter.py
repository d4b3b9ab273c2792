"""The TRL internals grpo-trl relies on (grpo_trl/trl_adapter.py) exist in the installed TRL, and work on a real
trainer. When a TRL release renames one, this fails naming the TRL version and what is gone."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import grpo_trl
from grpo_trl import trl_adapter

# TRL's public modules, the only ones the library outside trl_adapter.py may import from:
# - ``trl``: what ``trl/__init__.py`` exports (its ``_import_structure``), the documented API;
# - ``trl.rewards``: documented as a module (docs/source/rewards.md autodocs ``rewards.accuracy_reward`` etc.);
# - ``trl.data_utils``: documented (docs/source/data_utils.md) and its functions exported from ``trl`` as well.
# ``trl.chat_template_utils`` is documented for two functions only; the names ``trl`` does not export from it go
# through the adapter, like ``trl.trainer.*``, ``trl.scripts.*``, ``trl.extras`` / ``trl.generation`` (internals).
PUBLIC_TRL_MODULES = frozenset({"trl", "trl.rewards", "trl.data_utils"})
TRL_OBJECT_NAMES = frozenset({"trainer", "trl"})  # a variable or attribute holding a TRL trainer, or the module
PACKAGE = Path(grpo_trl.__file__).parent


def test_trl_internals_present():
    from trl import GRPOTrainer

    missing = trl_adapter.check_internals(GRPOTrainer)
    assert not missing, f"TRL {trl_adapter.trl_version()} changed internals grpo-trl uses: " + "; ".join(missing)


def test_check_module_names_detects_a_missing_name():
    assert trl_adapter.check_module_names() == []
    missing = trl_adapter.check_module_names({"trl.trainer.utils:NoSuchSampler": "x", "trl.no_such_module:f": "y"})
    assert missing == [
        "trl.trainer.utils.NoSuchSampler is gone (used for x)",
        "trl.no_such_module.f is gone (used for y)",
    ]


def _private_trl_uses(tree: ast.AST) -> list[tuple[int, str]]:
    """``from trl.<private> import``, ``import trl.<private>``, and ``<trl object>._name`` (also via getattr/setattr/
    hasattr with a literal name) in one module's syntax tree."""
    trl_names = set(TRL_OBJECT_NAMES)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "trl":
            trl_names.update(alias.asname or alias.name for alias in node.names)

    def is_trl(value: ast.AST) -> bool:
        name = value.attr if isinstance(value, ast.Attribute) else getattr(value, "id", None)
        return name in trl_names

    def private(name: str) -> bool:
        return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))

    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "trl":
            if node.module not in PUBLIC_TRL_MODULES:
                found.append((node.lineno, f"from {node.module} import ..."))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, f"import {a.name}") for a in node.names if a.name.startswith("trl.")]
        elif isinstance(node, ast.Attribute) and private(node.attr) and is_trl(node.value):
            found.append((node.lineno, f".{node.attr} on a TRL object"))
        elif (
            isinstance(node, ast.Call)
            and (getattr(node.func, "attr", None) or getattr(node.func, "id", None)) in ("import_module", "__import__")
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and str(node.args[0].value).startswith("trl.")
            and node.args[0].value not in PUBLIC_TRL_MODULES
        ):
            found.append((node.lineno, f"import_module({node.args[0].value!r})"))
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "id", None) in ("getattr", "setattr", "hasattr", "delattr")
            and len(node.args) >= 2
            and is_trl(node.args[0])
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
            and private(node.args[1].value)
        ):
            found.append((node.lineno, f"{node.func.id}(..., {node.args[1].value!r}) on a TRL object"))
    return found


def test_only_the_adapter_touches_trl_internals():
    """Every module but trl_adapter.py imports only TRL's public modules and reads no private TRL attribute."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "trl_adapter.py" and path.parent == PACKAGE:
            continue
        rel = path.relative_to(PACKAGE.parent)
        found += [f"{rel}:{line}: {what}" for line, what in _private_trl_uses(ast.parse(path.read_text()))]
    assert not found, "TRL internals outside grpo_trl/trl_adapter.py (route them through it):\n" + "\n".join(found)


@pytest.mark.parametrize(
    "source",
    [
        "from trl.trainer.utils import RepeatSampler",
        "from trl.scripts.vllm_serve import build_command",
        "from trl.extras.vllm_client import VLLMClient",
        "import trl.chat_template_utils",
        "importlib.import_module('trl.trainer.utils')",
        "trainer._get_train_sampler()",
        "self.trainer._logs = {}",
        "x = getattr(trainer, '_logs', None)",
        "from trl import GRPOTrainer\nGRPOTrainer._generate",
    ],
)
def test_the_scan_sees_each_kind_of_private_use(source):
    assert _private_trl_uses(ast.parse(source))


@pytest.mark.parametrize(
    "source",
    [
        "from trl import GRPOConfig",
        "from trl.rewards import accuracy_reward",
        "trl.__version__",
        "self._x = 1",
        "import_module('trl.rewards')",
    ],
)
def test_the_scan_passes_public_uses(source):
    assert _private_trl_uses(ast.parse(source)) == []


def test_check_internals_detects_a_rename():
    from trl import GRPOTrainer

    renamed = type("Renamed", (GRPOTrainer,), {"_generate": None})
    assert any("_generate" in line for line in trl_adapter.check_internals(renamed))


@pytest.mark.slow
def test_adapter_on_a_real_trainer(make_recipe, tmp_path):
    """Two real steps: the adapter times generation and reads TRL's last batch."""
    from transformers import TrainerCallback

    from grpo_trl.check import load_recipe
    from grpo_trl.train import run

    recipe = load_recipe(make_recipe(trainer={"max_steps": 2}))
    captured = {}

    class Grab(TrainerCallback):
        def __init__(self):
            self.trainer = None

        def on_log(self, args, state, control, logs=None, **kwargs):
            if logs and "loss" in logs and self.trainer is not None:
                captured["batch"] = trl_adapter.last_batch(self.trainer)
                captured["logs"] = dict(logs)

    grab = Grab()
    import trl

    class Spy(trl.GRPOTrainer):
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            grab.trainer = self

    trl.GRPOTrainer, saved = Spy, trl.GRPOTrainer  # run() imports it at call time: the spy hands us the trainer
    try:
        run(recipe, extra_callbacks=[grab])
    finally:
        trl.GRPOTrainer = saved
    built = grab.trainer.generation_config  # the one check builds (trl_adapter.generation_config) is TRL's own
    tokens = {k: getattr(built, k) for k in ("pad_token_id", "bos_token_id", "eos_token_id")}
    assert trl_adapter.generation_config(grab.trainer.args, tokens).to_dict() == built.to_dict()
    batch = captured["batch"]
    assert batch and len(batch["prompt"]) == len(batch["completion"]) == len(batch["advantages"]) > 0
    assert set(batch["rewards"]) == {"xml_format"}
    assert captured["logs"]["timing/generation_s"] > 0, f"TRL {trl_adapter.trl_version()}: generation not timed"


def test_generation_config_is_built_as_trl_builds_it():
    """What check builds (``generation_config``) reads the GRPOConfig fields GRPOTrainer gives GenerationConfig."""
    import inspect

    from trl import GRPOTrainer

    source = inspect.getsource(GRPOTrainer.__init__)
    assert "GenerationConfig(**generation_kwargs, disable_compile=True)" in source
    assert "generation_kwargs.update(args.generation_kwargs)" in source
    for name, key in trl_adapter.GENERATION_CONFIG_FIELDS.items():
        assert f'"{key}": self.{name}' in source or f'"{key}": args.{name}' in source, (name, key)
