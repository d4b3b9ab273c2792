"""The trainer side of a peer config: TRL defaults changed since the config's TRL release (the old value is written,
so the run stays the same), ``max_prompt_length``, then every key not placed yet (launch keys, renamed and removed
fields, ``trl.GRPOConfig`` fields), by the tables of ``grpo_trl.tables``."""

from __future__ import annotations

import difflib

from grpo_trl import tables as T
from grpo_trl.importer.rules import Translation, carry


def old_defaults(t: Translation) -> None:
    """TRL defaults changed since the config's TRL: the old value is written, so the run stays the same."""
    base, trainer = t.out.baseline, t.out.recipe.get("trainer", {})
    for name in T.DEFAULT_HISTORY:
        old, now = T.old_default(name, base), t.grpo.get(name)
        if name not in t.grpo or old == now:
            continue
        what = f"{name}: TRL {base} default {old!r}, today {now!r} ({T.DEFAULT_NOTES[name]})"
        if name in t.data or name in trainer:
            t.out.changed_defaults.append(what + " - set in the config, kept")
        elif not (name == "vllm_mode" and not t.data.get("use_vllm")) and not (
            name == "use_bias_correction_kl" and not t.data.get("beta", T.old_default("beta", base))
        ):  # vllm_mode without vLLM, the KL estimator without a KL term: nothing changes
            t.out.changed_defaults.append(what + " - the old value is written")
            t.put(("trainer", name), old, f"TRL {base} default (today {now!r}), kept: the run stays the same")
    old_max = T.old_default("max_prompt_length", base, T.MAX_PROMPT_LENGTH_HISTORY)
    if "max_prompt_length" in t.grpo:
        return
    if "max_prompt_length" in t.data:
        value, source = t.take("max_prompt_length"), "max_prompt_length"
    else:
        value, source = old_max, f"TRL {base} default max_prompt_length"
    if value is None or not t.check("max_prompt_length", value, "positive_int"):
        return
    if "mixture" in t.out.recipe.get("data", {}):
        t.out.unmapped.append(("max_prompt_length", "set data.mixture[*].max_prompt_tokens per part"))
    else:
        note = f"{source} {value}: TRL truncated longer prompts, grpo-trl drops those rows (and reports how many)"
        t.put(("data", "max_prompt_tokens"), value, note)
        t.out.changed_defaults.append("max_prompt_length: removed from TRL (prompts are no longer truncated)")


def rest(t: Translation) -> None:
    """Every key not placed yet: launch keys, renamed and removed fields, ``trl.GRPOConfig`` fields."""
    carry(t, "launch")
    for key, value in t.data.items():
        if key in t.done:
            continue
        t.done.add(key)
        new = T.RENAMED_FIELDS.get(key)
        if value is None:
            t.out.warnings.append(f"{key}: null, left at grpo-trl's / TRL's default")
        elif key in ("reward_weights", "model_init_kwargs"):
            continue
        elif key in t.grpo:
            t.put(("trainer", key), value, None)
        elif key == "warmup_ratio" and "warmup_steps" in t.grpo:
            if t.data.get("warmup_steps"):
                t.unmapped(key, "warmup_steps is set too, and took precedence in transformers 4")
            else:
                t.put(("trainer", "warmup_steps"), value, "warmup_ratio (transformers 5: a float < 1 is a ratio)")
        elif new in t.grpo:
            t.put(("trainer", new), value, f"{key} (renamed)")
        elif key == "use_liger_loss" and not value:
            t.out.changed_defaults.append("use_liger_loss: false - nothing to set (removed from TRL)")
        elif key == "env" and isinstance(value, dict):
            names = ", ".join(f"{k}={v}" for k, v in value.items())
            t.unmapped(key, f"environment variables: export {names} before running")
        elif key in T.NOT_MAPPED:
            t.unmapped(key, T.NOT_MAPPED[key])
        else:
            close = difflib.get_close_matches(str(key), list(t.grpo), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            t.unmapped(str(key), f"not a field of ScriptArguments, ModelConfig or the installed trl.GRPOConfig{hint}")
