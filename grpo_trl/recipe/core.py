"""``Recipe``: a loaded recipe coerced into typed sections once (pydantic's errors become ``Problem`` s; only what the
user wrote is kept, so ``GRPOConfig`` gets exactly the user's fields), its accessors and TRL's configs made from it."""

from __future__ import annotations

import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from grpo_trl.errors import Problem, suggest
from grpo_trl.fields import Hints, validate_value
from grpo_trl.recipe import schema
from grpo_trl.recipe.load import read_recipe, secrets
from grpo_trl.recipe.trl_schema import BACKENDS, BOUND_REASONS, GENERATION_FIELDS, MANAGED_FIELDS
from grpo_trl.tables import REMOVED_FIELDS, peer_config_problems, top_level_hint


def _unknown_trainer_key(last: str, choices: list[str]) -> str:
    if fix := MANAGED_FIELDS.get(last) or REMOVED_FIELDS.get(last):
        return fix
    return f"not a trl.GRPOConfig field{suggest(last, choices)} (checked against the installed TRL)"


def _unknown_lora_key(last: str, choices: list[str]) -> str:
    return f"not a peft.LoraConfig field{suggest(last, choices)}; e.g. r, lora_alpha, lora_dropout, target_modules"


HINTS = Hints(  # what the recipe's messages add: required sections, what each holds, TRL's field notes and bounds
    required=schema.REQUIRED_SECTIONS,
    sections=schema.SECTION_HINTS,
    unknown={"trainer": _unknown_trainer_key, "model.lora": _unknown_lora_key},
    bounds=BOUND_REASONS,
)


def coerce(data: dict, file: str) -> tuple[dict, list[Problem]]:
    """``(coerced mapping, every problem)``; a section with problems keeps its raw value (later checks skip it)."""
    peer = peer_config_problems(data, file)  # a flat TRL/open-r1 config: one line pointing at `grpo-trl import`
    if peer:
        return dict(data), peer
    out: dict = {}
    problems: list[Problem] = []
    for name, value in data.items():
        if name not in schema.SECTIONS:
            fix = f" ({hint})" if (hint := top_level_hint(str(name))) else suggest(name, schema.SECTIONS)
            why = f"unknown section{fix}; sections: {', '.join(schema.SECTIONS)}"
            problems.append(Problem(file, str(name), why))
        elif value is not None or name in schema.REQUIRED_SECTIONS:  # an empty `logging:` is the defaults
            coerced, found = validate_value(schema.section_type(name), value, file, name, HINTS)
            problems += found
            out[name] = value if found else coerced
    for name, hint in schema.REQUIRED_SECTIONS.items():
        if data.get(name) is None and not any(p.key == name for p in problems):
            problems.append(Problem(file, name, f"missing: {hint}"))
    model = out.get("model")
    if isinstance(model, dict) and not any(p.key.startswith("model") for p in problems):
        for key, kind in (("tiny", schema.tiny_model), ("lora", schema.lora_model)):  # typed from their library
            if model.get(key) is not None:
                typed, found = validate_value(kind(), model[key], file, f"model.{key}", HINTS)
                problems += found
                model = model if found else {**model, key: typed}
        out["model"] = model
    return out, problems


@dataclass(frozen=True)
class Recipe:
    """A resolved recipe: ``data`` holds what the user wrote (coerced), ``problems`` what coercion found."""

    data: dict
    path: Path | None = None
    problems: tuple[Problem, ...] = field(default=(), repr=False)

    def __post_init__(self) -> None:
        raw = self.data if isinstance(self.data, dict) else {}
        secrets(raw)  # the values of its secret keys: never shown from now on (errors.redact)
        coerced, problems = coerce(raw, self.file)
        object.__setattr__(self, "data", coerced)
        object.__setattr__(self, "problems", tuple(problems))

    @property
    def file(self) -> str:
        return str(self.path) if self.path else "<recipe>"

    @property
    def base_dir(self) -> Path:
        return self.path.resolve().parent if self.path else Path.cwd()

    def _mapping(self, name: str) -> dict:
        value = self.data.get(name)
        return value if isinstance(value, dict) else {}

    model = property(lambda self: self._mapping("model"), doc="The model section as written (coerced).")
    dataset = property(lambda self: self._mapping("data"), doc="The data section as written (coerced).")
    trainer = property(lambda self: self._mapping("trainer"), doc="The trainer section: GRPOConfig fields given.")
    generation = property(lambda self: self._mapping("generation"), doc="The generation section as written.")
    logging = property(lambda self: self.section("logging"), doc="The logging section, defaults filled in.")
    launch = property(lambda self: self.section("launch"), doc="The launch section, defaults filled in.")

    @property
    def rewards(self) -> list[dict]:
        """The reward entries as mappings (a bare name ``- countdown`` is read as ``{name: countdown}``)."""
        value = self.data.get("rewards")
        return [s for s in schema.bare_names(value) if isinstance(s, dict)] if isinstance(value, list) else []

    @property
    def plugins(self) -> list[str]:
        value = self.data.get("plugins")
        return [str(p) for p in value] if isinstance(value, list) else []

    def section(self, name: str) -> dict:
        """Section ``name`` with the schema's defaults filled in (a mapping; empty when the section is invalid)."""
        value = self._mapping(name)
        try:
            return schema.section_type(name).model_validate(value).model_dump()
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

    def model_init_kwargs(self) -> dict:
        """``GRPOConfig.model_init_kwargs``: ``model.init_kwargs``, then the model fields that own a key."""
        model, owned = self.model, ("dtype", "attn_implementation", "trust_remote_code", "revision")
        return dict(model.get("init_kwargs") or {}) | {key: model[key] for key in owned if model.get(key) is not None}

    def grpo_kwargs(self) -> dict:
        """Keyword arguments for ``trl.GRPOConfig``: trainer fields, generation mapping, model kwargs, weights."""
        kwargs, gen = dict(self.trainer), self.generation
        if gen.get("backend") in BACKENDS:
            kwargs["use_vllm"] = gen["backend"] == "vllm"
        kwargs |= {trl_name: gen[key] for key, trl_name in GENERATION_FIELDS.items() if gen.get(key) is not None}
        if init := self.model_init_kwargs():
            kwargs["model_init_kwargs"] = init
        kwargs["reward_weights"] = [float(s.get("weight", 1.0)) for s in self.rewards] or None  # none: env-owned
        kwargs.setdefault("output_dir", "outputs/" + (self.path.stem if self.path else "run"))
        return kwargs

    def to_grpo_config(self, *, world_size: int | None = None, planning: bool = False, cls: Any = None, **given: Any):
        """A real ``trl.GRPOConfig`` (or ``cls`` of ``given``); without CUDA on CPU in float32; ``planning``: as if
        ``world_size`` processes were launched (for ``check``)."""
        import torch
        from trl import GRPOConfig

        kwargs, cls = given or self.grpo_kwargs(), cls or GRPOConfig
        no_gpu = not torch.cuda.is_available()
        if planning and no_gpu:
            kwargs.update(use_cpu=True, bf16=False, fp16=False)
            kwargs.pop("ddp_backend", None)  # a launch setting: outside a launch, transformers would want its group
        elif no_gpu and "use_cpu" not in kwargs:
            kwargs["use_cpu"] = True
            kwargs.setdefault("bf16", False)
        if world_size is not None:
            cls = type(f"Planned{cls.__name__}", (cls,), {"world_size": property(lambda self: world_size)})
        return cls(**kwargs)

    def lora_config(self) -> Any:
        """``peft.LoraConfig`` from ``model.lora`` (task CAUSAL_LM unless set; ``{}``: peft's defaults), or None."""
        lora = self.model.get("lora")
        if lora is None:
            return None
        from peft import LoraConfig

        return LoraConfig(**{"task_type": "CAUSAL_LM", **lora})

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.data, sort_keys=False)


def open_recipe(path: str | Path, overrides: typing.Sequence[str] = ()) -> Recipe:
    """Read a recipe (following ``extends``), apply ``--set`` overrides and coerce it; not yet checked."""
    return Recipe(data=read_recipe(Path(path), list(overrides)), path=Path(path))
