"""The model side of a peer config (``model_name_or_path``, dtype, ``model_init_kwargs``, ``trl.ModelConfig``'s LoRA
and quantization keys) -> the recipe's ``model:``."""

from __future__ import annotations

import dataclasses

from grpo_trl import tables as T
from grpo_trl.importer.state import Translation
from grpo_trl.recipe.schema import DTYPES


class ModelKeys(Translation):
    """``model:``: the model, its dtype, LoRA and quantization settings."""

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
            else:  # any other from_pretrained keyword (use_kernels, device_map...): checked by `grpo-trl check`
                self.put(("model", "init_kwargs", key), value, f"model_init_kwargs.{key}")
        self.lora()
        self.quantization()

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
        self.carried.add("use_peft")  # model.lora is there

    def quantization(self) -> None:
        """``load_in_4bit`` / ``load_in_8bit`` -> ``model.quantization``, as TRL's ``get_quantization_config`` builds
        the ``BitsAndBytesConfig`` (compute dtype: the model's dtype; quant type nf4 unless given)."""
        given = {k: self.take(k) for k in T.QUANT_KEYS if self.has(k)}
        for k in ("load_in_4bit", "load_in_8bit", "use_bnb_nested_quant"):
            if k in given and not isinstance(given[k], bool):
                self.problem(k, f"must be true or false, got {given[k]!r}")
                return
        if given.get("load_in_4bit"):
            section = {"load_in_4bit": True, "bnb_4bit_quant_type": given.get("bnb_4bit_quant_type", "nf4")}
            dtype = self.out.recipe.get("model", {}).get("dtype")
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
        for key, value in section.items():
            source = {"bnb_4bit_compute_dtype": "dtype", "bnb_4bit_use_double_quant": "use_bnb_nested_quant"}
            self.put(("model", "quantization", key), value, source.get(key, key))
