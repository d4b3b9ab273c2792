"""Every other key: TRL defaults changed since the config was written (the old value is written, so the run stays
the same), ``max_prompt_length``, launch keys, renamed and removed fields, ``trl.GRPOConfig`` fields."""

from __future__ import annotations

import difflib
from typing import Any

from grpo_trl import tables as T
from grpo_trl.importer.state import Translation


class TrainerKeys(Translation):
    """``trainer:`` and ``launch:``: changed defaults, then every key not placed yet."""

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
                    value = T.ACCELERATE_PRESETS.get(value) or self.local(value)
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
