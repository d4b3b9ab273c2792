"""The two sections of a peer config with more to them than one key each: the dataset (one, or a mixture) -> ``data:``
(the ``hub`` builder), and ``reward_funcs`` with open-r1's reward settings -> ``rewards:`` (by ``tables.REWARDS``)."""

from __future__ import annotations

import difflib
import numbers
from pathlib import Path
from typing import Any

from grpo_trl import tables as T
from grpo_trl.data.options import SYSTEM_PROMPTS
from grpo_trl.data.sources import JSON_SUFFIXES
from grpo_trl.importer.rules import Translation, carry
from grpo_trl.rewards.registry import list_rewards


def _part(t: Translation, name: str, split: Any, column: str) -> dict:
    """One dataset as the hub builder reads it: ``path:`` for a local data file (relative to where the recipe is
    written), else ``name:``; the split and prompt column where they are not the builder's defaults."""
    p = Path(name).expanduser()
    local = p.suffix.lower() in (*JSON_SUFFIXES, ".parquet", ".csv") and p.is_file()
    part = {"builder": "hub", **({"path": t.local(str(p))} if local else {"name": name})}
    if split != "train":
        part["split"] = split
    if column != "prompt" or t.out.flavour == "open-r1":
        part["prompt_column"] = column
    return part


def dataset(t: Translation) -> None:
    """``data:``: one dataset or a mixture, read by the hub builder."""
    column = t.string("dataset_prompt_column", "prompt")
    split, test_split = t.string("dataset_train_split", "train"), t.string("dataset_test_split", "test")
    if t.data.get("datasets") == []:  # TRL's DatasetMixtureConfig default, written out: no mixture
        t.take("datasets")
    elif t.has("dataset_mixture") or t.has("datasets"):
        mixture(t, column)
        if t.take("dataset_streaming"):
            t.unmapped("dataset_streaming", T.NOT_MAPPED["streaming"])
        if t.has("dataset_name"):
            t.unmapped("dataset_name", "a dataset mixture is given too, and TRL uses the mixture")
        return prompt_format(t)
    if not t.has("dataset_name"):
        t.problem("dataset_name", "missing: the dataset to train on (a Hub id or a local path)")
        return
    name = t.string("dataset_name")
    if name is None:
        return
    notes = {"split": "dataset_train_split", "prompt_column": "dataset_prompt_column"}
    for k, v in _part(t, name, split, column).items():
        t.put(("data", k), v, notes.get(k, "dataset_name"))
    carry(t, "data")
    if t.data.get("eval_strategy", t.data.get("evaluation_strategy", "no")) not in ("no", None, False):
        t.put(("data", "eval_split"), test_split, "dataset_test_split (eval_strategy is on)")
    prompt_format(t)


def mixture(t: Translation, column: str) -> None:
    key = "dataset_mixture" if t.has("dataset_mixture") else "datasets"
    raw = t.take(key)
    entries = raw.get("datasets") if key == "dataset_mixture" and isinstance(raw, dict) else raw
    if not isinstance(entries, list) or not entries or not all(isinstance(e, dict) for e in entries):
        t.problem(key, "must hold a non-empty list of datasets (mappings)")
        return
    parts = []
    for i, entry in enumerate(entries):
        name = entry.get("id", entry.get("path"))
        if not isinstance(name, str) or not name:
            t.problem(f"{key}.{i}", "names no dataset (id or path)")
            continue
        part = _part(t, name, entry.get("split", "train"), column)
        if entry.get("config", entry.get("name")):
            part["config"] = entry.get("config", entry.get("name"))
        if entry.get("columns"):
            part["columns"] = [c for c in entry["columns"] if c not in (column, "solution")]
        weight = entry.get("weight", 1.0)
        part["weight"] = weight if isinstance(weight, numbers.Real) and weight > 0 else 1.0
        parts.append(part)
        for extra in sorted(set(entry) - {"id", "path", "config", "name", "split", "columns", "weight"}):
            t.out.unmapped.append((f"{key}.{i}.{extra}", "the hub builder has no such option"))
    t.put(("data", "mixture"), parts, key)
    if key == "datasets":
        t.out.warnings.append(
            "TRL concatenates `datasets`; grpo-trl samples a mixture by weight: set data.mixture weights to the "
            "datasets' sizes to match"
        )
    if isinstance(raw, dict) and raw.get("seed") is not None:
        t.put(("data", "seed"), raw["seed"], f"{key}.seed")
    if isinstance(raw, dict) and raw.get("test_split_size"):
        t.out.unmapped.append((f"{key}.test_split_size", "a fraction; grpo-trl holds out a count: set data.eval_size"))


def prompt_format(t: Translation) -> None:
    system, data = t.take("system_prompt"), t.out.recipe.get("data", {})
    if t.out.flavour == "open-r1":
        for part in data["mixture"] if "mixture" in data else [data]:
            part["prompt_format"] = "conversational"
        if "mixture" not in data:
            t.out.comments[("data", "prompt_format")] = "open-r1 wraps each prompt as a user turn"
    if system is None:
        if "mixture" not in data and t.out.flavour == "open-r1":
            t.put(("data", "system_prompt"), "none", "open-r1 adds no system turn when system_prompt is unset")
    elif not isinstance(system, str) or system in SYSTEM_PROMPTS or not any(c.isspace() for c in system.strip()):
        t.unmapped("system_prompt", "grpo-trl reads a single word as the name of a shipped prompt; write it as text")
    else:
        t.put(("data", "system_prompt"), system, "system_prompt")


def rewards(t: Translation) -> None:
    """``rewards:``: each peer reward as its grpo-trl equivalent, with its weight and args."""
    known = {info.name: info for info in list_rewards()}
    model = t.take("reward_model_name_or_path")  # TRL's `trl grpo` script
    model = t.local(model) if model is not None and t.check("reward_model_name_or_path", model, "model") else None
    funcs = t.take("reward_funcs")
    if funcs is None and t.out.flavour == "open-r1" and not model:
        funcs = list(T.OPEN_R1_DEFAULT_REWARDS)
        t.out.warnings.append(f"reward_funcs not set: open-r1's default {funcs} is written")
    elif funcs is None:
        if not model:
            t.problem("reward_funcs", "missing: TRL needs reward functions (e.g. - accuracy_reward)")
        funcs = []
    funcs = [funcs] if isinstance(funcs, str) else funcs
    weights, n_model = t.take("reward_weights"), 1 if model else 0  # TRL's script: [reward_model, *reward_funcs]
    if not t.check("reward_funcs", funcs, "names") or (
        weights is not None and not t.check("reward_weights", weights, "numbers")
    ):
        return
    if weights is not None and len(weights) != len(funcs) + n_model:
        what = "the reward model and " if model else ""
        first = ", the reward model's first (TRL's script puts it first)" if model else ""
        n = f"{len(weights)} weights for {what}{len(funcs)} reward_funcs; give one weight per reward{first}"
        t.problem("reward_weights", n)
        return
    used: set[str] = set()
    entries, labels = [], {}
    for i, peer in enumerate(funcs):
        entry, comment = reward(t, peer, known, used)
        if weights is not None:
            entry["weight"] = float(weights[i + n_model])
        label = entry.get("alias") or entry["name"].rpartition(":")[2]
        if label in labels:
            entry["alias"] = peer if peer not in labels else f"{peer}_{i}"
        labels[entry.get("alias") or label] = i
        entries.append(entry)
        t.out.comments[("rewards", i + n_model)] = comment
    if model:  # TRL's script puts the reward model first: its weight is reward_weights[0]
        entries.insert(0, {"model": model, **({"weight": float(weights[0])} if weights is not None else {})})
        t.out.comments[("rewards", 0)] = "reward_model_name_or_path (a sequence classifier, as TRL loads it)"
    if entries:
        t.put(("rewards",), entries)  # the one gate: an argument holding a secret is not written
        t.carried |= {"reward_funcs", "reward_weights", "reward_model_name_or_path"} & set(t.data)
    for key in T.REWARD_SETTINGS:
        if key in t.data and key not in used:
            t.unmapped(key, f"open-r1's {T.REWARD_SETTINGS[key][0]!r} setting, and reward_funcs do not use it")
    for key in T.CODE_PROVIDER_KEYS:
        if key in t.data:
            t.unmapped(key, "remote code-execution setting; grpo-trl runs code in its local sandbox")


def reward(t: Translation, peer: str, known: dict, used: set) -> tuple[dict, str]:
    """One peer reward -> its recipe entry and comment, with the settings it reads and the args TRL's script fixes."""
    if peer in T.NO_EQUIVALENT:
        t.out.warnings.append(f"reward {peer!r}: no grpo-trl equivalent ({T.NO_EQUIVALENT[peer]})")
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
        t.out.warnings.append(
            f"reward {peer!r} is not a TRL/open-r1 reward grpo-trl knows{hint}; written unchanged: register it "
            "in a plugin or name it as module:function"
        )
        return {"name": peer}, "UNKNOWN: written unchanged"
    target, args, note = T.REWARDS[peer]
    args = dict(args)
    for key, (owner, arg, default) in T.REWARD_SETTINGS.items():
        if owner == peer:
            used.add(key)
            t.done.add(key)
            t.carried.add(key)
            args[arg] = t.data.get(key, default)
            if key not in t.data:
                note += f"; {arg}={default!r} is open-r1's default"
    if peer in T.TRL_FIXED_ARGS:
        args.update(T.TRL_FIXED_ARGS[peer])
        note += "; TRL's script fixes " + ", ".join(f"{k}={v}" for k, v in T.TRL_FIXED_ARGS[peer].items())
    if target in T.LENGTH_UNITS and t.out.flavour == "open-r1":
        t.out.warnings.append(f"reward {peer!r}: {T.LENGTH_UNITS[target]}")
    info = known.get(target)
    if info is None:
        t.out.warnings.append(
            f"reward {peer!r}: its grpo-trl equivalent {target!r} is not in this grpo-trl version; written as "
            f"{target!r} for when it is (check will report it)"
        )
        return ({"name": target, "args": args} if args else {"name": target}), f"{peer}: {note} (NOT AVAILABLE)"
    takes_any = info.factory and any(str(k).startswith("**") for k in info.params)
    for a in [a for a in args if a not in info.params and not takes_any]:
        value = args.pop(a)
        why = "it has no such argument"
        if a == "require_answer_tag":
            why = "it reads the last <answer> block, the peer reads the whole completion"
        setting = next((k for k, (o, arg, _) in T.REWARD_SETTINGS.items() if (o, arg) == (peer, a)), None)
        if setting in t.data:  # the config set it: named among the keys not mapped, with the reason
            t.carried.discard(setting)
            reason = T.SETTINGS_NOT_CARRIED.get(setting, why)
            t.unmapped(setting, f"{peer}'s {a}={value!r}: grpo-trl's {target!r} does not take it ({reason})")
        else:
            t.out.warnings.append(f"reward {peer!r}: grpo-trl's {target!r} does not take {a}={value!r} yet, so {why}")
    return ({"name": target, "args": args} if args else {"name": target}), f"{peer}: {note}"
