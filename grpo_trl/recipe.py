"""YAML recipes: load (``extends``, ``--set`` overrides), validate before any model loads, map onto TRL's GRPOConfig.

A recipe has the sections ``model``, ``data``, ``rewards``, ``trainer`` (any ``trl.GRPOConfig`` field, passed
through), and optionally ``generation`` (transformers or vLLM), ``plugins`` (reward files), ``logging`` and
``launch`` (how many training processes the recipe is meant for).

Example:
    >>> from grpo_trl.recipe import load_recipe
    >>> recipe = load_recipe("recipes/demo/tiny-cpu.yaml", overrides=["trainer.learning_rate=1e-4"])
    >>> recipe.trainer["learning_rate"]
    0.0001
    >>> recipe.to_grpo_config().learning_rate
    0.0001
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import math
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

TOP_KEYS = ("extends", "model", "data", "rewards", "plugins", "generation", "trainer", "logging", "launch")
MODEL_KEYS = ("name", "dtype", "attn_implementation", "chat_template", "trust_remote_code", "revision", "lora", "tiny")
REWARD_KEYS = ("name", "weight", "args", "alias", "timeout")
LOGGING_KEYS = ("completions_every", "completions_samples", "alerts", "alert_patience")
LAUNCH_KEYS = ("num_processes", "num_machines", "accelerate_config", "vllm_gpus")
DTYPES = ("auto", "bfloat16", "float16", "float32")
BUILTIN_TINY = "builtin:tiny"

# generation: key -> GRPOConfig field
GENERATION_FIELDS = {
    "vllm_mode": "vllm_mode",
    "server_host": "vllm_server_host",
    "server_port": "vllm_server_port",
    "server_base_url": "vllm_server_base_url",
    "server_timeout": "vllm_server_timeout",
    "gpu_memory_utilization": "vllm_gpu_memory_utilization",
    "tensor_parallel_size": "vllm_tensor_parallel_size",
    "enable_sleep_mode": "vllm_enable_sleep_mode",
    "max_model_length": "vllm_max_model_length",
}
GENERATION_KEYS = ("backend", "health_timeout", *GENERATION_FIELDS)

# Fields TRL removed or renamed: old name -> the fix. Only reported when the installed GRPOConfig lacks the old name.
REMOVED_FIELDS = {
    "max_prompt_length": "removed in TRL 1.x (prompts are no longer truncated); bound prompts with "
    "data.max_prompt_tokens, which drops longer rows before training",
    "use_liger_loss": "renamed: use trainer.use_liger_kernel",
    "vllm_device": "removed: run vLLM colocated (generation.vllm_mode: colocate) or on its own GPU in server mode "
    "(generation.vllm_mode: server, started with `grpo-trl serve`)",
    "torch_dtype": "moved: set model.dtype (bfloat16, float16, float32 or auto)",
    "wandb_log_unique_prompts": "renamed: use trainer.log_unique_prompts",
    "vllm_guided_decoding_regex": "renamed: use trainer.vllm_structured_outputs_regex",
    "warmup_ratio": "removed in transformers 5: trainer.warmup_steps takes a float in [0, 1) as a ratio",
}

# GRPOConfig fields the recipe's other sections set: one place for each value.
MANAGED_FIELDS = {
    "reward_weights": "set `weight:` on each entry of rewards: instead",
    "model_init_kwargs": "set through the model: section (dtype, attn_implementation, trust_remote_code, revision)",
}

# Enum fields TRL only checks mid-run (the first step that reaches them): checked here before anything loads.
ENUM_FIELDS: dict[str, tuple] = {
    "loss_type": ("grpo", "dr_grpo", "dapo", "bnpo", "cispo", "sapo", "luspo", "vespo"),
    "scale_rewards": ("group", "batch", "none", True, False),
    "vllm_mode": ("server", "colocate"),
    "importance_sampling_level": ("token", "sequence"),
    "multi_objective_aggregation": ("sum_then_normalize", "normalize_then_sum"),
    "vllm_importance_sampling_mode": ("token_truncate", "token_mask", "sequence_truncate", "sequence_mask"),
}


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a recipe: where (file and dotted key) and what to do about it."""

    file: str
    key: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}: {self.key}: {self.message}"


class RecipeError(ValueError):
    """A recipe that cannot run. ``problems`` lists every issue found, one line each."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


def suggest(word: str, choices: typing.Iterable[str]) -> str:
    close = difflib.get_close_matches(str(word), list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


# --------------------------------------------------------------------------------------------------------- loading
def deep_merge(base: dict, override: dict) -> dict:
    """``override`` on top of ``base``: mappings merge key by key, anything else (lists included) replaces."""
    out = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _read_yaml(path: Path) -> dict:
    try:
        text = path.read_text()
    except OSError as exc:
        raise RecipeError([Problem(str(path), "-", f"cannot read the recipe: {exc.strerror or exc}")]) from exc
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise RecipeError([Problem(str(path), "-", f"not valid YAML: {exc}")]) from exc
    if not isinstance(data, dict):
        raise RecipeError([Problem(str(path), "-", "a recipe must be a YAML mapping of sections")])
    return data


def _resolve_extends(path: Path, seen: tuple[Path, ...] = ()) -> dict:
    path = path.resolve()
    if path in seen:
        chain = " -> ".join(p.name for p in (*seen, path))
        raise RecipeError([Problem(str(path), "extends", f"circular extends: {chain}")])
    data = _read_yaml(path)
    parent = data.pop("extends", None)
    if parent is None:
        return data
    parent_path = (path.parent / parent).resolve()
    if not parent_path.is_file():
        raise RecipeError([Problem(str(path), "extends", f"{parent!r} not found (looked at {parent_path})")])
    return deep_merge(_resolve_extends(parent_path, (*seen, path)), data)


def apply_override(data: dict, assignment: str) -> dict:
    """Apply ``section.key=value`` (YAML-typed value; list items by index, e.g. ``rewards.0.weight=2``)."""
    if "=" not in assignment:
        raise RecipeError([Problem("--set", assignment, "expected KEY=VALUE, e.g. trainer.learning_rate=1e-6")])
    key, _, raw = assignment.partition("=")
    try:
        value = yaml.safe_load(raw)
    except yaml.YAMLError as exc:
        raise RecipeError([Problem("--set", key, f"value is not valid YAML: {exc}")]) from exc
    parts = key.strip().split(".")
    node: Any = data
    for i, part in enumerate(parts[:-1]):
        if isinstance(node, list):
            if not part.isdigit() or int(part) >= len(node):
                raise RecipeError([Problem("--set", key, f"{'.'.join(parts[: i + 1])}: no list item {part}")])
            node = node[int(part)]
        else:
            node = node.setdefault(part, {})
            if not isinstance(node, (dict, list)):
                raise RecipeError([Problem("--set", key, f"{'.'.join(parts[: i + 1])} is not a section")])
    last = parts[-1]
    if isinstance(node, list):
        if not last.isdigit() or int(last) >= len(node):
            raise RecipeError([Problem("--set", key, f"no list item {last}")])
        node[int(last)] = value
    else:
        node[last] = value
    return data


def load_recipe(path: str | Path, overrides: typing.Sequence[str] = (), *, validate: bool = True) -> Recipe:
    """Read a recipe (following ``extends``), apply ``--set`` overrides, and validate it (``RecipeError`` if bad)."""
    path = Path(path)
    data = _resolve_extends(path)
    for assignment in overrides:
        data = apply_override(data, assignment)
    recipe = Recipe(data=data, path=path)
    if validate:
        problems = recipe.validate()
        if problems:
            raise RecipeError(problems)
    return recipe


# ------------------------------------------------------------------------------------------------------ the recipe
def _grpo_fields() -> dict[str, dataclasses.Field]:
    from trl import GRPOConfig

    return {f.name: f for f in dataclasses.fields(GRPOConfig) if f.init}


def _expected_types(f: dataclasses.Field) -> tuple[type, ...] | None:
    """Python types a YAML value may have for this dataclass field, or None when anything goes."""
    from trl import GRPOConfig

    hint = typing.get_type_hints(GRPOConfig).get(f.name, f.type)
    args = typing.get_args(hint) or (hint,)
    out: list[type] = []
    for a in args:
        origin = typing.get_origin(a) or a
        if origin in (int, float, bool, str, list, dict, type(None)):
            out.append(origin)
        elif isinstance(origin, type) and issubclass(origin, str):  # str enums (IntervalStrategy...)
            out.append(str)
        else:
            return None
    if float in out:
        out.append(int)
    return tuple(out)


@dataclass
class Recipe:
    """A resolved recipe (``extends`` merged, overrides applied). Sections are plain dicts/lists."""

    data: dict
    path: Path | None = None
    _problems: list[Problem] = field(default_factory=list, repr=False)

    # sections
    @property
    def file(self) -> str:
        return str(self.path) if self.path else "<recipe>"

    @property
    def base_dir(self) -> Path:
        return self.path.resolve().parent if self.path else Path.cwd()

    @property
    def model(self) -> dict:
        return self.data.get("model") or {}

    @property
    def dataset(self) -> dict:
        return self.data.get("data") or {}

    @property
    def rewards(self) -> list[dict]:
        """The reward entries, a bare name ``- countdown`` read as ``{name: countdown}``."""
        return [{"name": s} if isinstance(s, str) else s for s in self.data.get("rewards") or []]

    @property
    def trainer(self) -> dict:
        return self.data.get("trainer") or {}

    @property
    def generation(self) -> dict:
        return self.data.get("generation") or {}

    @property
    def logging(self) -> dict:
        return self.data.get("logging") or {}

    @property
    def launch(self) -> dict:
        return self.data.get("launch") or {}

    @property
    def plugins(self) -> list[str]:
        return list(self.data.get("plugins") or [])

    @property
    def world_size(self) -> int:
        """Training processes the recipe is meant for (``launch.num_processes`` x ``num_machines``), default 1."""
        return int(self.launch.get("num_processes", 1)) * int(self.launch.get("num_machines", 1))

    @property
    def uses_vllm(self) -> bool:
        return self.generation.get("backend") == "vllm" or bool(self.trainer.get("use_vllm"))

    @property
    def vllm_mode(self) -> str:
        return self.generation.get("vllm_mode") or self.trainer.get("vllm_mode") or "colocate"

    # ------------------------------------------------------------------------------------------------ validation
    def _p(self, key: str, message: str) -> None:
        self._problems.append(Problem(self.file, key, message))

    def validate(self, world_size: int | None = None) -> list[Problem]:
        """Every problem found, without loading a model or a dataset. Empty list: the recipe can run."""
        self._problems = []
        for key in self.data:
            if key not in TOP_KEYS:
                self._p(key, f"unknown section{suggest(key, TOP_KEYS)}; sections: {', '.join(TOP_KEYS)}")
        self._check_section("model", MODEL_KEYS)
        self._check_model()
        self._check_data()
        self._check_plugins_and_rewards()
        self._check_section("generation", GENERATION_KEYS)
        self._check_generation()
        self._check_section("logging", LOGGING_KEYS)
        self._check_section("launch", LAUNCH_KEYS)
        trainer_ok = self._check_trainer()
        if not self._problems:
            self._check_columns()
        if trainer_ok and not self._problems:
            self._check_with_trl(world_size or self.world_size)
        return list(self._problems)

    def _check_section(self, name: str, keys: tuple[str, ...]) -> None:
        section = self.data.get(name)
        if section is None:
            return
        if not isinstance(section, dict):
            self._p(name, f"must be a mapping with keys among: {', '.join(keys)}")
            return
        for key in section:
            if key not in keys:
                self._p(f"{name}.{key}", f"unknown key{suggest(key, keys)}; {name} keys: {', '.join(keys)}")

    def _check_model(self) -> None:
        model = self.data.get("model")
        if not isinstance(model, dict) or not model.get("name"):
            self._p("model.name", "missing: a Hugging Face model id, a local path, or builtin:tiny")
            return
        dtype = model.get("dtype")
        if dtype is not None and dtype not in DTYPES:
            self._p("model.dtype", f"{dtype!r} is not a dtype{suggest(dtype, DTYPES)}; use one of {', '.join(DTYPES)}")
        template = model.get("chat_template")
        if template is not None and "{" not in str(template) and not (self.base_dir / str(template)).is_file():
            self._p(
                "model.chat_template",
                f"file {template!r} not found; give a path to a .jinja file or the template text",
            )
        lora = model.get("lora")
        if lora is not None:
            if not isinstance(lora, dict):
                self._p("model.lora", "must be a mapping of peft.LoraConfig fields (r, lora_alpha, target_modules...)")
                return
            from peft import LoraConfig

            names = [f.name for f in dataclasses.fields(LoraConfig) if f.init]
            for key in lora:
                if key not in names:
                    self._p(f"model.lora.{key}", f"not a peft.LoraConfig field{suggest(key, names)}")

    def _check_data(self) -> None:
        if "data" not in self.data:
            self._p("data", "missing: name a dataset builder, e.g. data: {builder: gsm8k}")
            return
        from grpo_trl.data.registry import validate_data_config

        for key, message in validate_data_config(self.data["data"]):
            self._p(key, message)

    def _check_plugins_and_rewards(self) -> None:
        from grpo_trl.rewards.registry import RewardError, check_reward_args, load_plugin, reward_label

        for i, plugin in enumerate(self.plugins):
            try:
                load_plugin(self.base_dir / plugin)
            except RewardError as exc:
                self._p(f"plugins.{i}", str(exc))
        rewards = self.data.get("rewards")
        if not isinstance(rewards, list) or not rewards:
            self._p("rewards", "missing: a list of {name, weight, args}, e.g. - {name: accuracy, weight: 1.0}")
            return
        names: dict[str, int] = {}
        for i, spec in enumerate(self.rewards):
            key = f"rewards.{i}"
            if not isinstance(spec, dict) or "name" not in spec:
                self._p(key, "must be a mapping with a 'name' (and optional weight, args, alias, timeout)")
                continue
            for k in spec:
                if k not in REWARD_KEYS:
                    self._p(
                        f"{key}.{k}", f"unknown key{suggest(k, REWARD_KEYS)}; reward keys: {', '.join(REWARD_KEYS)}"
                    )
            weight = spec.get("weight", 1.0)
            if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not math.isfinite(weight):
                self._p(f"{key}.weight", f"must be a number, got {weight!r}")
            timeout = spec.get("timeout")
            if timeout is not None and (not isinstance(timeout, (int, float)) or timeout <= 0):
                self._p(f"{key}.timeout", f"must be a positive number of seconds, got {timeout!r}")
            args = spec.get("args") or {}
            if not isinstance(args, dict):
                self._p(f"{key}.args", "must be a mapping of argument names to values")
                continue
            try:
                check_reward_args(spec["name"], self._reward_args(spec))
            except RewardError as exc:
                self._p(
                    f"{key}.name" if "unknown reward" in str(exc) or "cannot import" in str(exc) else f"{key}.args",
                    str(exc),
                )
                continue
            label = reward_label(spec["name"], spec.get("alias"))
            if label in names:
                self._p(
                    f"{key}.alias",
                    f"reward name {label!r} is already used by rewards.{names[label]}; TRL logs rewards by name, so "
                    "give one of them an alias",
                )
            names[label] = i

    def _check_columns(self) -> None:
        """Local data files exist and have their columns; every reward's columns are in the dataset."""
        from grpo_trl.data.registry import DataError, dataset_columns
        from grpo_trl.rewards.registry import get_reward

        try:
            columns = dataset_columns(self.dataset, self.base_dir)
        except DataError as exc:
            self._p("data", str(exc))
            return
        rewards = [get_reward(s["name"], alias=s.get("alias"), **self._reward_args(s)) for s in self.rewards]
        self._problems += self.column_problems(rewards, columns)

    def column_problems(self, rewards: list, columns: typing.Iterable[str]) -> list[Problem]:
        """One problem per reward that reads a column (``solution``, ``nums``...) that ``columns`` lack."""
        from grpo_trl.rewards.registry import required_columns

        columns = set(columns) - {"prompt"}
        source = self.dataset.get("builder", "mixture")
        problems = []
        for i, reward in enumerate(rewards):
            missing = [c for c in required_columns(reward) if c not in columns]
            if missing:
                problems.append(
                    Problem(
                        self.file,
                        f"rewards.{i}",
                        f"reward {reward.__name__!r} reads column(s) {', '.join(missing)} that data ({source}) does "
                        f"not provide (it gives: {', '.join(sorted(columns)) or 'nothing'}); "
                        "use a builder with those columns",
                    )
                )
        return problems

    def _reward_args(self, spec: dict) -> dict:
        """The reward's args, with ``max_completion_len`` / ``max_len`` filled from the trainer when not given."""
        args = dict(spec.get("args") or {})
        max_len = self.trainer.get("max_completion_length", 256)
        if spec.get("name") == "soft_overlong":
            args.setdefault("max_completion_len", max_len)
        if spec.get("name") == "cosine":
            args.setdefault("max_len", max_len)
        return args

    def _check_generation(self) -> None:
        gen = self.generation
        backend = gen.get("backend", "transformers")
        if backend not in ("transformers", "vllm"):
            self._p(
                "generation.backend",
                f"{backend!r} is not a backend{suggest(backend, ('transformers', 'vllm'))}; use transformers or vllm",
            )
        for key, trl_name in GENERATION_FIELDS.items():
            if key in gen and trl_name in self.trainer and gen[key] != self.trainer[trl_name]:
                self._p(f"generation.{key}", f"conflicts with trainer.{trl_name}; set it in one place")
        if "backend" in gen and "use_vllm" in self.trainer and self.trainer["use_vllm"] != (backend == "vllm"):
            self._p("generation.backend", "conflicts with trainer.use_vllm; set generation.backend only")
        if backend == "transformers" and gen.get("vllm_mode"):
            self._p("generation.vllm_mode", "only applies with generation.backend: vllm")
        mode = gen.get("vllm_mode")
        if mode is not None and mode not in ENUM_FIELDS["vllm_mode"]:
            self._p(
                "generation.vllm_mode",
                f"{mode!r} is not one of server, colocate{suggest(mode, ('server', 'colocate'))}",
            )

    def _check_trainer(self) -> bool:
        trainer = self.data.get("trainer") or {}
        if not isinstance(trainer, dict):
            self._p("trainer", "must be a mapping of trl.GRPOConfig fields")
            return False
        fields = _grpo_fields()
        ok = True
        for key, value in trainer.items():
            where = f"trainer.{key}"
            if key in MANAGED_FIELDS:
                ok = False
                self._p(where, MANAGED_FIELDS[key])
                continue
            if key not in fields:
                ok = False
                if key in REMOVED_FIELDS:
                    self._p(where, REMOVED_FIELDS[key])
                else:
                    self._p(
                        where, f"not a trl.GRPOConfig field{suggest(key, fields)} (checked against the installed TRL)"
                    )
                continue
            if key in ("output_dir",) and value is None:
                continue
            if key in ENUM_FIELDS and value not in ENUM_FIELDS[key]:
                ok = False
                choices = ", ".join(str(c) for c in ENUM_FIELDS[key])
                self._p(
                    where,
                    f"{value!r} is not allowed{suggest(value, [str(c) for c in ENUM_FIELDS[key]])}; "
                    f"use one of {choices}",
                )
                continue
            types = _expected_types(fields[key])
            if types is not None and value is not None:
                value = self._coerce(key, value, types)
                if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
                    ok = False
                    names = "/".join(dict.fromkeys(t.__name__ for t in types if t is not type(None)))
                    self._p(where, f"expected {names}, got {type(value).__name__} {value!r}")
        return ok

    def _coerce(self, key: str, value: Any, types: tuple[type, ...]) -> Any:
        # YAML 1.1 reads an unquoted `no` as False: for string fields (save_strategy: no) it meant "no".
        if value is False and str in types and bool not in types:
            self.data["trainer"][key] = "no"
            return "no"
        # PyYAML reads 1e-6 (no dot) as a string; accept it for float fields.
        if isinstance(value, str) and float in types and str not in types:
            try:
                value = float(value)
            except ValueError:
                return value
            self.data["trainer"][key] = value
        return value

    def _check_with_trl(self, world_size: int) -> None:
        """Let TRL's own ``GRPOConfig.__post_init__`` check the batch arithmetic for ``world_size`` processes."""
        try:
            self.to_grpo_config(world_size=world_size, planning=True)
        except ValueError as exc:
            msg = str(exc).strip().split("\n")[0]
            hint = ""
            if "divisible" in msg or "num_generations" in msg:
                hint = (
                    f" (world size {world_size}: per_device_train_batch_size x {world_size} processes x "
                    "steps_per_generation must be a multiple of num_generations; change "
                    "trainer.per_device_train_batch_size, "
                    "trainer.gradient_accumulation_steps or trainer.num_generations)"
                )
            self._p("trainer", msg + hint)

    # ------------------------------------------------------------------------------------------------ mapping
    def model_init_kwargs(self) -> dict:
        """``GRPOConfig.model_init_kwargs`` from the model section."""
        model = self.model
        kwargs: dict[str, Any] = {}
        if model.get("dtype"):
            kwargs["dtype"] = model["dtype"]
        for key in ("attn_implementation", "trust_remote_code", "revision"):
            if model.get(key) is not None:
                kwargs[key] = model[key]
        return kwargs

    def grpo_kwargs(self) -> dict:
        """Keyword arguments for ``trl.GRPOConfig``: trainer fields, generation mapping, model kwargs, weights."""
        kwargs = dict(self.trainer)
        gen = self.generation
        if gen.get("backend") == "vllm":
            kwargs["use_vllm"] = True
        elif gen.get("backend") == "transformers":
            kwargs["use_vllm"] = False
        for key, trl_name in GENERATION_FIELDS.items():
            if key in gen:
                kwargs[trl_name] = gen[key]
        init = self.model_init_kwargs()
        if init:
            kwargs["model_init_kwargs"] = init
        kwargs["reward_weights"] = [float(s.get("weight", 1.0)) for s in self.rewards]
        kwargs.setdefault("output_dir", "outputs/" + (self.path.stem if self.path else "run"))
        return kwargs

    def to_grpo_config(self, *, world_size: int | None = None, planning: bool = False, device_fallback: bool = True):
        """A real ``trl.GRPOConfig``.

        ``device_fallback``: with no CUDA device and no explicit ``use_cpu``/``bf16``, run on CPU in float32 (TRL's
        bf16 default would refuse to start). ``planning``/``world_size``: build it as if ``world_size`` processes were
        launched, for ``grpo-trl check`` (CPU settings forced, nothing else changes).
        """
        import torch
        from trl import GRPOConfig

        kwargs = self.grpo_kwargs()
        no_gpu = not torch.cuda.is_available()
        if planning and no_gpu:
            kwargs.update(use_cpu=True, bf16=False, fp16=False)
        elif device_fallback and no_gpu and "use_cpu" not in kwargs:
            kwargs["use_cpu"] = True
            kwargs.setdefault("bf16", False)
        cls = GRPOConfig
        if world_size is not None:
            cls = type("PlannedGRPOConfig", (GRPOConfig,), {"world_size": property(lambda self: world_size)})
        return cls(**kwargs)

    def lora_config(self):
        """``peft.LoraConfig`` from ``model.lora`` (task CAUSAL_LM), or None."""
        lora = self.model.get("lora")
        if not lora:
            return None
        from peft import LoraConfig

        return LoraConfig(**{"task_type": "CAUSAL_LM", **lora})

    def build_rewards(self) -> tuple[list, list[float]]:
        """The recipe's rewards, each bound to its args and wrapped in ``SafeReward``, and their weights."""
        from grpo_trl.rewards.registry import SafeReward, get_reward, load_plugin

        for plugin in self.plugins:
            load_plugin(self.base_dir / plugin)
        funcs, weights = [], []
        for spec in self.rewards:
            reward = get_reward(spec["name"], alias=spec.get("alias"), **self._reward_args(spec))
            funcs.append(SafeReward(reward, timeout=spec.get("timeout")))
            weights.append(float(spec.get("weight", 1.0)))
        return funcs, weights

    # ------------------------------------------------------------------------------------------------ the plan
    def plan(self, world_size: int | None = None, dataset_rows: int | None = None) -> dict:
        """What a run would do: batch sizes per step, total optimizer steps, generation backend, GPU split."""
        from grpo_trl.data.registry import expected_size

        ws = world_size or self.world_size
        cfg = self.to_grpo_config(world_size=ws, planning=True)
        exact = True
        if dataset_rows is None:
            dataset_rows, exact = expected_size(self.dataset)
        per_step = cfg.per_device_train_batch_size * ws * cfg.gradient_accumulation_steps
        if cfg.max_steps and cfg.max_steps > 0:
            total = cfg.max_steps
        elif dataset_rows is not None:
            completions = cfg.num_train_epochs * dataset_rows * cfg.num_generations * cfg.num_iterations
            total = math.ceil(completions / per_step)
        else:
            total = None
        return {
            "world_size": ws,
            "num_generations": cfg.num_generations,
            "completions_per_optimizer_step": per_step,
            "prompts_per_optimizer_step": per_step / cfg.num_generations,
            "generation_batch_size": cfg.generation_batch_size,
            "prompts_per_generation": cfg.generation_batch_size // cfg.num_generations,
            "steps_per_generation": cfg.steps_per_generation,
            "num_iterations": cfg.num_iterations,
            "dataset_rows": dataset_rows,
            "dataset_rows_exact": exact,
            "total_optimizer_steps": total,
            "generation": self.describe_generation(ws),
            "output_dir": cfg.output_dir,
            "config": cfg,
        }

    def describe_generation(self, world_size: int) -> str:
        if not self.uses_vllm:
            return "transformers generate() on the training processes (no vLLM)"
        if self.vllm_mode == "server":
            gpus = self.launch.get("vllm_gpus", 1)
            return (
                f"vLLM server mode: {gpus} GPU(s) for vLLM (`grpo-trl serve`), {world_size} for training; "
                f"launch training with num_processes={world_size}"
            )
        return f"vLLM colocate mode: vLLM shares each of the {world_size} training GPU(s)"

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.data, sort_keys=False)
