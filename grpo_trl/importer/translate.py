"""Translate a flat ``trl grpo --config`` YAML or an open-r1 GRPO recipe into a grpo-trl recipe, key by key.

Every key ends in exactly one place: a recipe value (with a comment saying where it came from), a default written
explicitly because TRL's changed since the config was written, or the ``unmapped`` list with the reason.

Example:
    >>> out = translate({"model_name_or_path": "Qwen/Qwen2.5-0.5B", "dataset_name": "my/data",
    ...                  "reward_funcs": ["accuracy_reward"], "beta": 0.1}, file="c.yaml")
    >>> out.recipe["model"], out.recipe["rewards"][0]["name"], out.recipe["trainer"]["beta"]
    ({'name': 'Qwen/Qwen2.5-0.5B', 'dtype': 'float32'}, 'accuracy', 0.1)
"""

from __future__ import annotations

import dataclasses
import difflib
import numbers
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grpo_trl.errors import Problem, RecipeError
from grpo_trl.importer import tables as T

DTYPES = ("auto", "bfloat16", "float16", "float32")
OPEN_R1_ONLY = frozenset(
    {"dataset_prompt_column", "dataset_mixture", "system_prompt", "chat_template", *T.REWARD_SETTINGS}
    | set(T.CODE_PROVIDER_KEYS)
    | {"benchmarks", "callbacks", "hub_model_revision", "wandb_entity", "wandb_project", "num_completions_to_print"}
)


@dataclass
class Imported:
    """The translated recipe with a comment per translated value, and what could not be translated."""

    recipe: dict
    comments: dict[tuple, str] = field(default_factory=dict)
    unmapped: list[tuple[str, str]] = field(default_factory=list)  # (peer key, why)
    warnings: list[str] = field(default_factory=list)
    changed_defaults: list[str] = field(default_factory=list)
    flavour: str = "trl"
    baseline: str = T.BASELINE_TRL


def _installed_fields(cls) -> dict[str, Any]:
    out = {}
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        if f.default is not dataclasses.MISSING:
            out[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            out[f.name] = f.default_factory()
        else:
            out[f.name] = dataclasses.MISSING
    return out


def detect_flavour(data: dict) -> str:
    """``open-r1`` when the config uses open-r1's own keys or reward names, else ``trl``."""
    if any(k in OPEN_R1_ONLY for k in data):
        return "open-r1"
    funcs = data.get("reward_funcs")
    funcs = [funcs] if isinstance(funcs, str) else funcs if isinstance(funcs, list) else []
    peers = [f for f in funcs if isinstance(f, str) and f in T.REWARDS]
    if peers and all(not f.endswith("_reward") and not f.startswith("get_") for f in peers):
        return "open-r1"
    return "trl"


class _Translator:
    def __init__(self, data: dict, file: str, flavour: str, baseline: str, out_dir: Path | None):
        from trl import GRPOConfig, ModelConfig

        self.data = data
        self.file = file
        self.out = Imported(recipe={}, flavour=flavour, baseline=baseline)
        self.problems: list[Problem] = []
        self.done: set[str] = set()
        self.grpo = _installed_fields(GRPOConfig)
        self.model_defaults = _installed_fields(ModelConfig)
        self.out_dir = out_dir

    # helpers
    def problem(self, key: str, message: str) -> None:
        self.problems.append(Problem(self.file, key, message))

    def unmapped(self, key: str, why: str) -> None:
        self.done.add(key)
        self.out.unmapped.append((key, why))

    def put(self, path: tuple, value: Any, comment: str | None = None) -> None:
        node = self.out.recipe
        for part in path[:-1]:
            node = node.setdefault(part, {})
        node[path[-1]] = value
        if comment:
            self.out.comments[path] = comment

    def take(self, key: str, default: Any = None) -> Any:
        self.done.add(key)
        return self.data.get(key, default)

    def has(self, key: str) -> bool:
        return key in self.data and self.data[key] is not None

    def string(self, key: str, default: str | None = None) -> str | None:
        value = self.take(key, default)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            self.problem(key, f"must be a string, got {type(value).__name__} {value!r}")
            return None
        return str(value)

    # sections
    def model(self) -> None:
        name = self.string("model_name_or_path")
        if not name:
            if "model_name_or_path" not in self.data:
                self.problem("model_name_or_path", "missing: the model to train (a Hub id or a local path)")
            return
        self.put(("model", "name"), name, "model_name_or_path")
        init = self.take("model_init_kwargs") or {}
        if not isinstance(init, dict):
            self.problem("model_init_kwargs", f"must be a mapping, got {init!r}")
            init = {}
        dtype_keys = [k for k in ("dtype", "torch_dtype") if self.has(k)]
        dtype = None
        if dtype_keys:
            values = {k: self.take(k) for k in dtype_keys}
            if len(set(map(str, values.values()))) > 1:
                self.out.warnings.append(f"both dtype and torch_dtype are set ({values}); dtype (TRL's name) is used")
            key = dtype_keys[0]
            dtype, src = values[key], key
        elif init.get("dtype", init.get("torch_dtype")) is not None:
            dtype, src = init.get("dtype", init.get("torch_dtype")), "model_init_kwargs.dtype"
        for k in ("dtype", "torch_dtype"):
            self.done.add(k)
        if dtype is None or str(dtype) == "None":
            self.put(
                ("model", "dtype"),
                "float32",
                "not set: trl grpo loads float32 (ModelConfig.dtype); grpo-trl would let transformers choose (auto)",
            )
        elif str(dtype) not in DTYPES:
            self.problem(src, f"{dtype!r} is not a dtype; use one of {', '.join(DTYPES)}")
        else:
            self.put(("model", "dtype"), str(dtype), src if src != "torch_dtype" else "torch_dtype (renamed dtype)")
        for key in ("model_revision", "attn_implementation", "trust_remote_code", "chat_template"):
            if self.has(key):
                self.put(("model", T.MODEL_KEYS[key]), self.take(key), key)
            self.done.add(key)
        for key, value in init.items():
            target = {"dtype": None, "torch_dtype": None, "revision": "revision"}.get(key, key)
            if target is None:
                continue
            if target in ("revision", "attn_implementation", "trust_remote_code"):
                self.put(("model", target), value, f"model_init_kwargs.{key}")
            else:
                self.out.unmapped.append((f"model_init_kwargs.{key}", "grpo-trl's model section has no such key"))
        self.lora()

    def lora(self) -> None:
        use_peft = self.take("use_peft", False)
        if not isinstance(use_peft, bool):
            self.problem("use_peft", f"must be true or false, got {use_peft!r}")
            return
        given = [k for k in T.LORA_KEYS if k in self.data]
        if not use_peft:
            for k in given:
                self.unmapped(k, "use_peft is not true, so TRL ignores it")
            return
        for key, target in T.LORA_KEYS.items():
            value = self.take(key, self.model_defaults.get(key))
            if value is None or value is dataclasses.MISSING or (key == "lora_task_type" and value == "CAUSAL_LM"):
                continue
            if key in ("use_rslora", "use_dora") and value is False:
                continue
            note = f"{key} (use_peft)" if key in self.data else f"TRL ModelConfig's default {key}"
            self.put(("model", "lora", target), value, note)
        for key in T.QUANT_KEYS:
            if self.data.get(key) not in (None, False, "nf4"):
                self.unmapped(key, "4-/8-bit loading is not a grpo-trl recipe setting yet")
            self.done.add(key)

    def dataset(self) -> None:
        flavour = self.out.flavour
        prompt_column = self.string("dataset_prompt_column", "prompt")
        split = self.string("dataset_train_split", "train")
        test_split = self.string("dataset_test_split", "test")
        part: dict[str, Any] = {"builder": "hub"}
        if self.has("dataset_mixture") or self.has("datasets"):
            self.mixture(prompt_column, flavour)
            if self.has("dataset_name"):
                self.unmapped("dataset_name", "a dataset mixture is given too, and TRL uses the mixture")
        elif self.has("dataset_name"):
            name = self.string("dataset_name")
            if name is None:
                return
            part.update(self.source(name))
            self.put(("data", "builder"), "hub", "dataset_name")
            for k, v in part.items():
                if k != "builder":
                    self.put(("data", k), v, "dataset_name")
            config = self.string("dataset_config")
            if config:
                self.put(("data", "config"), config, "dataset_config")
            if split != "train":
                self.put(("data", "split"), split, "dataset_train_split")
            if prompt_column != "prompt" or flavour == "open-r1":
                self.put(("data", "prompt_column"), prompt_column, "dataset_prompt_column")
            eval_strategy = self.data.get("eval_strategy", self.data.get("evaluation_strategy", "no"))
            if eval_strategy not in ("no", None, False):
                self.put(("data", "eval_split"), test_split, "dataset_test_split (eval_strategy is on)")
        else:
            self.problem("dataset_name", "missing: the dataset to train on (a Hub id or a local path)")
            return
        self.prompt_format(flavour)

    def source(self, name: str) -> dict:
        """``path:`` for a local data file (relative to where the recipe is written), else ``name:``."""
        p = Path(name).expanduser()
        if p.suffix.lower() in (".jsonl", ".json", ".parquet", ".csv") and p.is_file():
            if self.out_dir is not None and not p.is_absolute():  # recipe paths are relative to the recipe
                return {"path": os.path.relpath(p.resolve(), self.out_dir.resolve())}
            return {"path": str(p)}
        return {"name": name}

    def mixture(self, prompt_column: str, flavour: str) -> None:
        key = "dataset_mixture" if self.has("dataset_mixture") else "datasets"
        raw = self.take(key)
        entries = raw.get("datasets") if key == "dataset_mixture" and isinstance(raw, dict) else raw
        if not isinstance(entries, list) or not entries or not all(isinstance(e, dict) for e in entries):
            self.problem(key, "must hold a non-empty list of datasets (mappings)")
            return
        parts = []
        for i, entry in enumerate(entries):
            name = entry.get("id", entry.get("path"))
            if not isinstance(name, str) or not name:
                self.problem(f"{key}.{i}", "names no dataset (id or path)")
                continue
            part = {"builder": "hub", **self.source(name)}
            if entry.get("config", entry.get("name")):
                part["config"] = entry.get("config", entry.get("name"))
            if entry.get("split", "train") != "train":
                part["split"] = entry["split"]
            if entry.get("columns"):
                part["columns"] = [c for c in entry["columns"] if c not in (prompt_column, "solution")]
            if prompt_column != "prompt" or flavour == "open-r1":
                part["prompt_column"] = prompt_column
            weight = entry.get("weight", 1.0)
            part["weight"] = weight if isinstance(weight, numbers.Real) and weight > 0 else 1.0
            parts.append(part)
            for extra in sorted(set(entry) - {"id", "path", "config", "name", "split", "columns", "weight"}):
                self.out.unmapped.append((f"{key}.{i}.{extra}", "the hub builder has no such option"))
        self.put(("data", "mixture"), parts, key)
        if key == "datasets":
            self.out.warnings.append(
                "TRL concatenates `datasets`; grpo-trl samples a mixture by weight: set data.mixture weights to the "
                "datasets' sizes to match"
            )
        if isinstance(raw, dict) and raw.get("seed") is not None:
            self.put(("data", "seed"), raw["seed"], f"{key}.seed")
        if isinstance(raw, dict) and raw.get("test_split_size"):
            self.out.unmapped.append(
                (f"{key}.test_split_size", "a fraction; grpo-trl holds out a count: set data.eval_size")
            )

    def prompt_format(self, flavour: str) -> None:
        system = self.take("system_prompt")
        data = self.out.recipe.get("data", {})
        target = data["mixture"] if "mixture" in data else [data]
        if flavour == "open-r1":
            for part in target:
                part["prompt_format"] = "conversational"
            if "mixture" not in data:
                self.out.comments[("data", "prompt_format")] = "open-r1 wraps each prompt as a user turn"
        if system is None:
            if "mixture" not in data and flavour == "open-r1":
                self.put(("data", "system_prompt"), "none", "open-r1 adds no system turn when system_prompt is unset")
            return
        from grpo_trl.data.prompts import SYSTEM_PROMPTS

        if not isinstance(system, str) or system in SYSTEM_PROMPTS or not any(c.isspace() for c in system.strip()):
            self.unmapped(
                "system_prompt", "grpo-trl reads a single word as the name of a shipped prompt; write it as text"
            )
            return
        self.put(("data", "system_prompt"), system, "system_prompt")

    def rewards(self) -> None:
        from grpo_trl.rewards.registry import list_rewards

        known = {info.name: info for info in list_rewards()}
        funcs = self.take("reward_funcs")
        if funcs is None:
            if self.out.flavour != "open-r1":
                if not self.has("reward_model_name_or_path"):
                    self.problem("reward_funcs", "missing: TRL needs reward functions (e.g. - accuracy_reward)")
                return
            funcs = list(T.OPEN_R1_DEFAULT_REWARDS)
            self.out.warnings.append(f"reward_funcs not set: open-r1's default {funcs} is written")
        if isinstance(funcs, str):
            funcs = [funcs]
        if not isinstance(funcs, list) or not all(isinstance(f, str) and f for f in funcs):
            self.problem("reward_funcs", f"must be a list of reward names, got {funcs!r}")
            return
        weights = self.take("reward_weights")
        if weights is not None:
            if not isinstance(weights, list) or not all(
                isinstance(w, numbers.Real) and not isinstance(w, bool) for w in weights
            ):
                self.problem("reward_weights", f"must be a list of numbers, got {weights!r}")
                return
            if len(weights) != len(funcs):
                self.problem(
                    "reward_weights",
                    f"{len(weights)} weights for {len(funcs)} reward_funcs; give one weight per reward",
                )
                return
        used_settings: set[str] = set()
        entries, labels = [], {}
        for i, peer in enumerate(funcs):
            entry, comment = self.reward(peer, known, used_settings)
            if weights is not None:
                entry["weight"] = float(weights[i])
            label = entry.get("alias") or entry["name"].rpartition(":")[2]
            if label in labels:
                entry["alias"] = peer if peer not in labels else f"{peer}_{i}"
            labels[entry.get("alias") or label] = i
            entries.append(entry)
            self.out.comments[("rewards", i)] = comment
        self.out.recipe["rewards"] = entries
        for key in T.REWARD_SETTINGS:
            if key in self.data and key not in used_settings:
                self.unmapped(key, f"open-r1's {T.REWARD_SETTINGS[key][0]!r} setting, and reward_funcs do not use it")
        for key in T.CODE_PROVIDER_KEYS:
            if key in self.data:
                self.unmapped(key, "remote code-execution setting; grpo-trl runs code in its local sandbox")

    def reward(self, peer: str, known: dict, used_settings: set) -> tuple[dict, str]:
        if peer in T.NO_EQUIVALENT:
            self.out.warnings.append(f"reward {peer!r}: no grpo-trl equivalent ({T.NO_EQUIVALENT[peer]})")
            return {"name": peer}, f"NO EQUIVALENT: {T.NO_EQUIVALENT[peer]}"
        if peer not in T.REWARDS:
            if ":" in peer:
                return {"name": peer}, "your own reward (module:function)"
            if "." in peer:
                module, _, func = peer.rpartition(".")
                return {"name": f"{module}:{func}"}, f"{peer} (dotted path -> module:function)"
            if peer in known:
                return {"name": peer}, "same name in grpo-trl"
            close = difflib.get_close_matches(peer, list(T.REWARDS) + list(known), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            self.out.warnings.append(
                f"reward {peer!r} is not a TRL/open-r1 reward grpo-trl knows{hint}; written unchanged: register it "
                "in a plugin or name it as module:function"
            )
            return {"name": peer}, "UNKNOWN: written unchanged"
        target, args, note = T.REWARDS[peer]
        args = dict(args)
        for key, (owner, arg, default) in T.REWARD_SETTINGS.items():
            if owner == peer:
                used_settings.add(key)
                value = self.data.get(key, default)
                self.done.add(key)
                args[arg] = value
                if key not in self.data:
                    note += f"; {arg}={value!r} is open-r1's default"
        args.update(T.TRL_FIXED_ARGS.get(peer, {}))
        if peer in T.TRL_FIXED_ARGS:
            note += "; TRL's script fixes " + ", ".join(f"{k}={v}" for k, v in T.TRL_FIXED_ARGS[peer].items())
        if target in T.LENGTH_UNITS and self.out.flavour == "open-r1":
            self.out.warnings.append(f"reward {peer!r}: {T.LENGTH_UNITS[target]}")
        info = known.get(target)
        if info is None:
            self.out.warnings.append(
                f"reward {peer!r}: its grpo-trl equivalent {target!r} is not in this grpo-trl version; written as "
                f"{target!r} for when it is (check will report it)"
            )
            return ({"name": target, "args": args} if args else {"name": target}), f"{peer}: {note} (NOT AVAILABLE)"
        takes_any = info.factory and any(str(k).startswith("**") for k in info.params)
        dropped = [a for a in args if a not in info.params and not takes_any]
        for a in dropped:
            value = args.pop(a)
            why = (
                "it reads the last <answer> block, the peer reads the whole completion"
                if a == "require_answer_tag"
                else "it has no such argument"
            )
            self.out.warnings.append(
                f"reward {peer!r}: grpo-trl's {target!r} does not take {a}={value!r} yet, so {why}"
            )
        entry = {"name": target}
        if args:
            entry["args"] = args
        return entry, f"{peer}: {note}"

    def old_defaults(self) -> None:
        baseline = self.out.baseline
        trainer = self.out.recipe.get("trainer", {})
        uses_vllm = bool(self.data.get("use_vllm"))
        for name in T.DEFAULT_HISTORY:
            if name not in self.grpo:
                continue
            old, now = T.old_default(name, baseline), self.grpo[name]
            if old == now:
                continue
            what = f"{name}: TRL {baseline} default {old!r}, today {now!r} ({T.DEFAULT_NOTES[name]})"
            if name in self.data or name in trainer:
                self.out.changed_defaults.append(what + " - set in the config, kept")
                continue
            if name == "vllm_mode" and not uses_vllm:
                continue
            if name == "use_bias_correction_kl" and not self.data.get("beta", T.old_default("beta", baseline)):
                continue  # no KL term, so its estimator does not matter
            self.out.changed_defaults.append(what + " - the old value is written")
            self.put(("trainer", name), old, f"TRL {baseline} default (today {now!r}), kept: the run stays the same")
        old_max = T.old_default("max_prompt_length", baseline, T.MAX_PROMPT_LENGTH_HISTORY)
        if "max_prompt_length" in self.data and "max_prompt_length" not in self.grpo:
            value = self.take("max_prompt_length")
            if value is not None:
                self.max_prompt(value, "max_prompt_length")
        elif old_max is not None and "max_prompt_length" not in self.grpo:
            self.max_prompt(old_max, f"TRL {baseline} default max_prompt_length")

    def max_prompt(self, value: Any, source: str) -> None:
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            self.problem("max_prompt_length", f"must be a positive integer, got {value!r}")
            return
        note = f"{source} {value}: TRL truncated longer prompts, grpo-trl drops those rows (and reports how many)"
        parts = self.out.recipe.get("data", {}).get("mixture")
        if parts is not None:
            self.out.unmapped.append(("max_prompt_length", "set data.mixture[*].max_prompt_tokens per part"))
            return
        self.put(("data", "max_prompt_tokens"), value, note)
        self.out.changed_defaults.append("max_prompt_length: removed from TRL (prompts are no longer truncated)")

    def rest(self) -> None:
        for key, value in self.data.items():
            if key in self.done:
                continue
            self.done.add(key)
            if value is None:
                self.out.warnings.append(f"{key}: null, left at grpo-trl's / TRL's default")
                continue
            if key in T.LAUNCH_KEYS:
                if key == "accelerate_config":
                    if not isinstance(value, str) or not value:
                        self.problem(key, f"must be an accelerate config name or file, got {value!r}")
                        continue
                    value = T.ACCELERATE_PRESETS.get(value, value)
                elif isinstance(value, bool) or not isinstance(value, int) or value < 1:
                    self.problem(key, f"must be a positive integer, got {value!r}")
                    continue
                self.put(("launch", T.LAUNCH_KEYS[key]), value, key)
            elif key in ("reward_weights", "model_init_kwargs"):
                continue
            elif key == "warmup_ratio" and key not in self.grpo and "warmup_steps" in self.grpo:
                if self.data.get("warmup_steps"):
                    self.unmapped(key, "warmup_steps is set too, and took precedence in transformers 4")
                else:
                    note = "warmup_ratio (transformers 5: a float < 1 is a ratio)"
                    self.put(("trainer", "warmup_steps"), value, note)
            elif key in T.RENAMED_FIELDS and key not in self.grpo and T.RENAMED_FIELDS[key] in self.grpo:
                self.put(("trainer", T.RENAMED_FIELDS[key]), value, f"{key} (renamed)")
            elif key == "use_liger_loss" and key not in self.grpo:
                if value:
                    self.unmapped(key, T.NOT_MAPPED[key])
                else:
                    self.out.changed_defaults.append("use_liger_loss: false - nothing to set (removed from TRL)")
            elif key == "env" and isinstance(value, dict):
                names = ", ".join(f"{k}={v}" for k, v in value.items())
                self.unmapped(key, f"environment variables: export {names} before running")
            elif key in T.NOT_MAPPED and key not in self.grpo:
                self.unmapped(key, T.NOT_MAPPED[key])
            elif key in self.grpo:
                self.put(("trainer", key), value, None)
            else:
                close = difflib.get_close_matches(str(key), list(self.grpo), n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                self.unmapped(
                    str(key), f"not a field of ScriptArguments, ModelConfig or the installed trl.GRPOConfig{hint}"
                )


def translate(
    data: Any,
    *,
    file: str = "<config>",
    flavour: str | None = None,
    trl_version: str | None = None,
    out_dir: Path | None = None,
) -> Imported:
    """Translate a parsed peer config. Raises ``RecipeError`` listing every problem that stops a recipe."""
    if not isinstance(data, dict) or not data:
        raise RecipeError([Problem(file, "-", "a TRL/open-r1 config is a YAML mapping of settings")])
    bad = [k for k in data if not isinstance(k, str)]
    if bad:
        raise RecipeError([Problem(file, repr(k), "setting names must be strings") for k in bad])
    if flavour not in (None, "trl", "open-r1"):
        raise RecipeError([Problem(file, "--from", f"{flavour!r}: use trl or open-r1")])
    flavour = flavour or detect_flavour(data)
    baseline = trl_version or (T.BASELINE_OPEN_R1 if flavour == "open-r1" else T.BASELINE_TRL)
    try:
        T._vkey(baseline)
    except ValueError:
        raise RecipeError([Problem(file, "--trl-version", f"{baseline!r} is not a version like 0.18")]) from None
    t = _Translator(data, file, flavour, baseline, out_dir)
    t.model()
    t.dataset()
    t.rewards()
    t.old_defaults()
    t.rest()
    if t.problems:
        raise RecipeError(t.problems)
    recipe = t.out.recipe
    order = ("model", "data", "rewards", "generation", "trainer", "launch")
    t.out.recipe = {k: recipe[k] for k in order if k in recipe}
    return t.out
