"""How a peer config's keys reach a recipe: a translation's state (``Translation``), ``carry`` (the one-to-one rules
of ``keys.yaml``) and the model keys (dtype, ``model_init_kwargs``, LoRA, quantization as ``trl.ModelConfig``)."""

from __future__ import annotations

import dataclasses
import numbers
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from grpo_trl import tables as T
from grpo_trl.errors import SECRET_FIX, Problem, holds_secret, is_secret_key, keep_secret
from grpo_trl.recipe.schema import DTYPES

KEYS = yaml.safe_load((Path(__file__).parent / "keys.yaml").read_text())
RULES: dict[str, dict] = KEYS["carry"]


@dataclass
class Imported:
    """The recipe, a comment per value, what was not translated (ending ``warnings`` too), ``text``: as YAML."""

    recipe: dict
    comments: dict[tuple, str] = field(default_factory=dict)
    unmapped: list[tuple[str, str]] = field(default_factory=list)  # (peer key, why)
    warnings: list[str] = field(default_factory=list)
    changed_defaults: list[str] = field(default_factory=list)
    flavour: str = "trl"
    baseline: str = T.BASELINE_TRL
    text: str = ""


def installed_fields(cls) -> dict[str, Any]:
    """A dataclass's init fields and their defaults (``MISSING`` where it has none), as installed."""
    no = dataclasses.MISSING
    fields = [f for f in dataclasses.fields(cls) if f.init]
    return {f.name: f.default if f.default is not no else f.default_factory() if f.default_factory is not no else no
            for f in fields}  # fmt: skip


class Translation:
    """One translation under way: the peer config, the recipe being written, and the keys already placed."""

    def __init__(self, data: dict, file: str, flavour: str, baseline: str, out_dir: Path | None):
        from trl import GRPOConfig, ModelConfig

        self.data, self.file, self.out_dir = data, file, out_dir
        self.out = Imported(recipe={}, flavour=flavour, baseline=baseline)
        self.problems: list[Problem] = []
        self.done: set[str] = set()  # keys handled (``rest`` skips them)
        self.carried: set[str] = set()  # keys whose value reached the recipe
        self.grpo, self.model_defaults = installed_fields(GRPOConfig), installed_fields(ModelConfig)

    def problem(self, key: str, message: str) -> None:
        self.problems.append(Problem(self.file, key, message))

    def unmapped(self, key: str, why: str) -> None:
        self.done.add(key)
        self.out.unmapped.append((key, why))

    def put(self, path: tuple, value: Any, comment: str | None = None) -> None:
        if is_secret_key(path[-1]) or holds_secret(value):  # check refuses it; train would copy it into the run
            keep_secret(value)
            source = path[-1] if path[-1] in self.data else re.split(r"[^\w.]", comment or "", maxsplit=1)[0]
            return self.unmapped(source or path[-1], f"a secret, not written: {SECRET_FIX}")
        node = self.out.recipe
        for part in path[:-1]:
            node = node.setdefault(part, {})
        node[path[-1]] = value
        if comment:
            self.out.comments[path] = comment
            self.carried.add(re.split(r"[^\w.]", comment, maxsplit=1)[0])
        if path[-1] in self.data:  # a field under its own name
            self.carried.add(path[-1])

    def take(self, key: str, default: Any = None) -> Any:
        self.done.add(key)
        return self.data.get(key, default)

    def has(self, key: str) -> bool:
        return self.data.get(key) is not None

    def local(self, value: str) -> str:
        """An existing relative file or folder made relative to where the recipe is written, else ``value``."""
        p = Path(value).expanduser()
        if self.out_dir is None or p.is_absolute() or not p.exists():
            return value
        return os.path.relpath(p.resolve(), self.out_dir.resolve())

    def check(self, key: str, value: Any, kind: str) -> bool:
        """Whether ``value`` passes the named check (``KINDS``); a problem naming ``key`` when it does not."""
        ok, what = KINDS[kind]
        if not ok(value):
            self.problem(key, f"must be {what}, got {value!r}")
        return ok(value)

    def string(self, key: str, default: str | None = None) -> str | None:
        value = self.take(key)
        return default if value is None else str(value) if self.check(key, value, "string") else None


def _names(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(f, str) and f for f in v)


def _numbers(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(w, numbers.Real) and not isinstance(w, bool) for w in v)


KINDS = {  # the named checks of a peer value: name -> (accepts, what the error says it must be)
    "string": (lambda v: isinstance(v, (str, int, float)) and not isinstance(v, bool), "a string"),
    "flag": (lambda v: True, ""),
    "bool": (lambda v: isinstance(v, bool), "true or false"),
    "positive_int": (lambda v: isinstance(v, int) and not isinstance(v, bool) and v > 0, "a positive integer"),
    "accelerate": (lambda v: isinstance(v, str) and v != "", "an accelerate config name or file"),
    "mapping": (lambda v: isinstance(v, dict), "a mapping"),
    "model": (lambda v: isinstance(v, str) and v.strip() != "", "a model id or a local path"),
    "names": (_names, "a list of reward names"),
    "numbers": (_numbers, "a list of numbers"),
}


def carry(t: Translation, section: str) -> None:
    """Place the keys ``keys.yaml`` sends to ``section``; a null is left to ``rest`` (which names it)."""
    for key, rule in RULES.items():
        path, kind = tuple(rule["to"].split(".")), rule.get("as")
        if path[0] != section or t.data.get(key) is None:
            continue
        value = t.take(key)
        shown = str(value) if kind == "string" else value  # a config named 0 is written '0', as the string it is
        if (kind is None or t.check(key, value, kind)) and (shown or not rule.get("if_true")):
            as_read = T.ACCELERATE_PRESETS.get(value) or t.local(value) if kind == "accelerate" else value
            value = {"string": str(value), "flag": True}.get(kind, as_read)
            t.put(path, value, rule.get("note", key))


def model(t: Translation) -> None:
    """``model:``: the model, its dtype, the one-to-one keys, ``model_init_kwargs``, LoRA and quantization."""
    name = t.string("model_name_or_path")
    if not name:
        if "model_name_or_path" not in t.data:
            t.problem("model_name_or_path", "missing: the model to train (a Hub id or a local path)")
        return
    t.put(("model", "name"), name, "model_name_or_path")
    init = t.take("model_init_kwargs") or {}
    init = init if t.check("model_init_kwargs", init, "mapping") else {}
    values = {k: t.take(k) for k in ("dtype", "torch_dtype") if t.has(k)}
    if len(set(map(str, values.values()))) > 1:
        t.out.warnings.append(f"both dtype and torch_dtype are set ({values}); dtype (TRL's name) is used")
    src, dtype = next(iter(values.items()), ("model_init_kwargs.dtype", init.get("dtype", init.get("torch_dtype"))))
    t.done |= {"dtype", "torch_dtype"}
    if dtype is None or str(dtype) == "None":
        why = "not set: trl grpo loads float32 (ModelConfig.dtype); grpo-trl would let transformers choose (auto)"
        t.put(("model", "dtype"), "float32", why)
    elif str(dtype) not in DTYPES:
        t.problem(src, f"{dtype!r} is not a dtype; use one of {', '.join(DTYPES)}")
    else:
        t.put(("model", "dtype"), str(dtype), src if src != "torch_dtype" else "torch_dtype (renamed dtype)")
    carry(t, "model")
    for key, value in init.items():
        if key not in ("dtype", "torch_dtype"):  # any other from_pretrained keyword: checked by `grpo-trl check`
            inner = () if key in ("revision", "attn_implementation", "trust_remote_code") else ("init_kwargs",)
            t.put(("model", *inner, key), value, f"model_init_kwargs.{key}")
    lora(t)
    quantization(t)


def lora(t: Translation) -> None:
    use_peft = t.take("use_peft", False)
    if not t.check("use_peft", use_peft, "bool"):
        return
    for key, target in T.LORA_KEYS.items():
        if not use_peft:
            if key in t.data:
                t.unmapped(key, "use_peft is not true, so TRL ignores it")
            continue
        value = t.take(key, t.model_defaults.get(key))
        skip = [("lora_task_type", "CAUSAL_LM"), ("use_rslora", False), ("use_dora", False)]
        if value is None or value is dataclasses.MISSING or (key, value) in skip:
            continue
        note = f"{key} (use_peft)" if key in t.data else f"TRL ModelConfig's default {key}"
        t.put(("model", "lora", target), value, note)
    if use_peft:
        t.carried.add("use_peft")  # model.lora is there


def quantization(t: Translation) -> None:
    """``load_in_4bit`` / ``load_in_8bit`` -> ``model.quantization``, as TRL's ``get_quantization_config`` builds it
    (compute dtype: the model's dtype; quant type nf4 unless given)."""
    given = {k: t.take(k) for k in T.QUANT_KEYS if t.has(k)}
    if not all(
        t.check(k, given[k], "bool") for k in ("load_in_4bit", "load_in_8bit", "use_bnb_nested_quant") if k in given
    ):
        return
    if given.get("load_in_4bit"):
        section = {"load_in_4bit": True, "bnb_4bit_quant_type": given.get("bnb_4bit_quant_type", "nf4")}
        dtype = t.out.recipe.get("model", {}).get("dtype")
        if dtype in ("bfloat16", "float16", "float32"):
            section["bnb_4bit_compute_dtype"] = dtype
        if given.get("use_bnb_nested_quant"):
            section["bnb_4bit_use_double_quant"] = True
        if given.get("bnb_4bit_quant_storage"):
            section["bnb_4bit_quant_storage"] = given["bnb_4bit_quant_storage"]
    elif given.get("load_in_8bit"):
        section = {"load_in_8bit": True}
    else:
        return  # TRL loads the model unquantized: the other keys mean nothing
    source = {"bnb_4bit_compute_dtype": "dtype", "bnb_4bit_use_double_quant": "use_bnb_nested_quant"}
    for key, value in section.items():
        t.put(("model", "quantization", key), value, source.get(key, key))
