"""``Recipe``: a loaded, coerced recipe (immutable) with read-only accessors, and ``load_recipe``.

The steps are separate functions (load.py, coerce.py, validate.py, plan.py, config.py); ``Recipe`` only holds the
result of load + coerce and forwards to them, so the Python API stays ``recipe.validate()``, ``recipe.plan()``,
``recipe.to_grpo_config()``.
"""

from __future__ import annotations

import copy
import typing
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from grpo_trl.errors import Problem, RecipeError, RewardError
from grpo_trl.recipe import config as _config
from grpo_trl.recipe.coerce import coerce
from grpo_trl.recipe.load import read_recipe


@dataclass(frozen=True)
class Recipe:
    """A resolved recipe (``extends`` merged, overrides applied, types coerced once). Never mutated afterwards.

    ``data`` holds what the user wrote (coerced); section accessors return plain dicts/lists for reading.
    ``problems`` lists what coercion found (``validate`` adds the checks that need registries and TRL).
    """

    data: dict
    path: Path | None = None
    problems: tuple[Problem, ...] = field(default=(), repr=False)

    def __post_init__(self) -> None:
        raw = self.data if isinstance(self.data, dict) else {}
        coerced, problems = coerce(raw, self.file)
        object.__setattr__(self, "data", coerced)
        object.__setattr__(self, "problems", tuple(problems))

    # ------------------------------------------------------------------------------------------------ sections
    @property
    def file(self) -> str:
        return str(self.path) if self.path else "<recipe>"

    @property
    def base_dir(self) -> Path:
        return self.path.resolve().parent if self.path else Path.cwd()

    def _mapping(self, name: str) -> dict:
        value = self.data.get(name)
        return value if isinstance(value, dict) else {}

    @property
    def model(self) -> dict:
        return self._mapping("model")

    @property
    def dataset(self) -> dict:
        return self._mapping("data")

    @property
    def rewards(self) -> list[dict]:
        """The reward entries as mappings (a bare name ``- countdown`` is read as ``{name: countdown}``)."""
        value = self.data.get("rewards")
        if not isinstance(value, list):
            return []
        return [{"name": s} if isinstance(s, str) else s for s in value if isinstance(s, (str, dict))]

    @property
    def trainer(self) -> dict:
        return self._mapping("trainer")

    @property
    def generation(self) -> dict:
        return self._mapping("generation")

    @property
    def logging(self) -> dict:
        """The logging section with every default filled in (defaults live in ``schema.LoggingSection``)."""
        return self.section("logging")

    @property
    def launch(self) -> dict:
        return self.section("launch")

    @property
    def plugins(self) -> list[str]:
        value = self.data.get("plugins")
        return [str(p) for p in value] if isinstance(value, list) else []

    def section(self, name: str) -> dict:
        """Section ``name`` with the schema's defaults filled in (a mapping; empty when the section is invalid)."""
        from grpo_trl.recipe.schema import section_type

        kind = section_type(name)
        value = self._mapping(name)
        try:
            return kind.model_validate(value).model_dump()
        except Exception:  # noqa: BLE001 - an invalid section: its problems are reported by validate()
            return dict(value)

    @property
    def world_size(self) -> int:
        """Training processes the recipe is meant for (``launch.num_processes`` x ``num_machines``), default 1."""
        launch = self.launch
        return int(launch.get("num_processes") or 1) * int(launch.get("num_machines") or 1)

    @property
    def uses_vllm(self) -> bool:
        return self.generation.get("backend") == "vllm" or bool(self.trainer.get("use_vllm"))

    @property
    def vllm_mode(self) -> str:
        return self.generation.get("vllm_mode") or self.trainer.get("vllm_mode") or "colocate"

    # ------------------------------------------------------------------------------------------------ steps
    def validate(self, world_size: int | None = None) -> list[Problem]:
        """Every problem found, without loading a model. Empty list: the recipe can run."""
        from grpo_trl.check.validate import validate

        return validate(self, world_size)

    def column_problems(self, rewards: list, columns: typing.Iterable[str]) -> list[Problem]:
        """One problem per reward that reads a column (``solution``, ``nums``...) that ``columns`` lack."""
        from grpo_trl.check.reward_checks import column_problems

        return column_problems(self, rewards, columns)

    def reward_args(self, spec: dict) -> dict:
        """A reward's args, with the defaults it declares it takes from the trainer filled in."""
        from grpo_trl.check.reward_checks import reward_args

        return reward_args(self, spec)

    def plan(self, world_size: int | None = None, dataset_rows: int | None = None) -> Any:
        """The ``Plan`` (see ``grpo_trl.check.plan``)."""
        from grpo_trl.check.plan import make_plan

        return make_plan(self, world_size, dataset_rows)

    def model_init_kwargs(self) -> dict:
        return _config.model_init_kwargs(self)

    def grpo_kwargs(self) -> dict:
        return _config.grpo_kwargs(self)

    def to_grpo_config(self, *, world_size: int | None = None, planning: bool = False, device_fallback: bool = True):
        """A real ``trl.GRPOConfig``.

        ``device_fallback``: with no CUDA device and no explicit ``use_cpu``/``bf16``, run on CPU in float32 (TRL's
        bf16 default would refuse to start). ``planning``/``world_size``: build it as if ``world_size`` processes were
        launched, for ``grpo-trl check`` (CPU settings forced, nothing else changes).
        """
        return _config.to_grpo_config(self, world_size=world_size, planning=planning, device_fallback=device_fallback)

    def lora_config(self):
        """``peft.LoraConfig`` from ``model.lora`` (task CAUSAL_LM), or None."""
        return _config.lora_config(self)

    def build_rewards(self, output_dir: str | None = None) -> tuple[list, list[float]]:
        """The recipe's rewards, each bound to its args and wrapped in ``SafeReward``, and their weights.

        A reward-model entry becomes the path or id TRL loads as a sequence classifier (see grpo_trl.models.reward_models).
        """
        from grpo_trl.models.reward_models import is_model_entry, resolve_model
        from grpo_trl.rewards.registry import SafeReward, add_import_path, get_reward, load_plugin

        add_import_path(self.base_dir)
        for plugin in self.plugins:
            load_plugin(self.base_dir / plugin)
        funcs, weights = [], []
        for i, spec in enumerate(self.rewards):
            if is_model_entry(spec):
                funcs.append(resolve_model(spec, self.base_dir, output_dir or self.grpo_kwargs()["output_dir"]))
                weights.append(float(spec.get("weight", 1.0)))
                continue
            try:
                reward = get_reward(spec["name"], alias=spec.get("alias"), **self.reward_args(spec))
            except RewardError as exc:  # its factory failed: name the entry
                raise RewardError(
                    [replace(p, file=p.file or self.file, key=f"rewards.{i}.{p.key or 'name'}") for p in exc.problems]
                ) from exc
            funcs.append(SafeReward(reward, timeout=spec.get("timeout")))
            weights.append(float(spec.get("weight", 1.0)))
        return funcs, weights

    def to_yaml(self) -> str:
        return yaml.safe_dump(copy.deepcopy(self.data), sort_keys=False)


def load_recipe(path: str | Path, overrides: typing.Sequence[str] = (), *, validate: bool = True) -> Recipe:
    """Read a recipe (following ``extends``), apply ``--set`` overrides, and validate it (``RecipeError`` if bad)."""
    recipe = Recipe(data=read_recipe(Path(path), list(overrides)), path=Path(path))
    if validate:
        problems = recipe.validate()
        if problems:
            raise RecipeError(problems)
    return recipe
