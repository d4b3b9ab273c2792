"""``reward_funcs``/``reward_weights`` and open-r1's reward settings -> the recipe's ``rewards:``, each peer reward
mapped by ``tables.REWARDS`` to its grpo-trl equivalent with the args its semantics need."""

from __future__ import annotations

import difflib
import numbers

from grpo_trl import tables as T
from grpo_trl.importer.state import Translation


class RewardKeys(Translation):
    """``rewards:``: each peer reward as its grpo-trl equivalent, with its weight and args."""

    def rewards(self) -> None:
        from grpo_trl.rewards.registry import list_rewards

        known = {info.name: info for info in list_rewards()}
        reward_model = self.reward_model()
        funcs = self.take("reward_funcs")
        if funcs is None:
            if self.out.flavour != "open-r1" or reward_model:
                if not reward_model:
                    self.problem("reward_funcs", "missing: TRL needs reward functions (e.g. - accuracy_reward)")
                funcs = []
            else:
                funcs = list(T.OPEN_R1_DEFAULT_REWARDS)
                self.out.warnings.append(f"reward_funcs not set: open-r1's default {funcs} is written")
        if isinstance(funcs, str):
            funcs = [funcs]
        if not isinstance(funcs, list) or not all(isinstance(f, str) and f for f in funcs):
            self.problem("reward_funcs", f"must be a list of reward names, got {funcs!r}")
            return
        weights = self.take("reward_weights")
        if weights is not None and (
            not isinstance(weights, list)
            or not all(isinstance(w, numbers.Real) and not isinstance(w, bool) for w in weights)
        ):
            self.problem("reward_weights", f"must be a list of numbers, got {weights!r}")
            return
        n_model = 1 if reward_model else 0  # TRL's script passes [reward_model, *reward_funcs]: its weight is first
        if weights is not None and len(weights) != len(funcs) + n_model:
            what = "the reward model and " if reward_model else ""
            first = ", the reward model's first (TRL's script puts it first)" if reward_model else ""
            self.problem(
                "reward_weights",
                f"{len(weights)} weights for {what}{len(funcs)} reward_funcs; give one weight per reward{first}",
            )
            return
        model_weight = {} if weights is None or not reward_model else {"weight": float(weights[0])}
        weights = weights[n_model:] if weights is not None else None
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
        if reward_model:  # TRL's script puts the reward model first: its weight is reward_weights[0]
            entries.insert(0, {"model": reward_model, **model_weight})
            self.out.comments = {
                (k[0], k[1] + 1) if k[0] == "rewards" and isinstance(k[1], int) else k: v
                for k, v in self.out.comments.items()
            }
            self.out.comments[("rewards", 0)] = "reward_model_name_or_path (a sequence classifier, as TRL loads it)"
        if entries:
            self.out.recipe["rewards"] = entries
            self.carried |= {"reward_funcs", "reward_weights", "reward_model_name_or_path"} & set(self.data)
        for key in T.REWARD_SETTINGS:
            if key in self.data and key not in used_settings:
                self.unmapped(key, f"open-r1's {T.REWARD_SETTINGS[key][0]!r} setting, and reward_funcs do not use it")
        for key in T.CODE_PROVIDER_KEYS:
            if key in self.data:
                self.unmapped(key, "remote code-execution setting; grpo-trl runs code in its local sandbox")

    def reward_model(self) -> str | None:
        """``reward_model_name_or_path`` (TRL's ``trl grpo`` script), or None."""
        model = self.take("reward_model_name_or_path")
        if model is None:
            return None
        if not isinstance(model, str) or not model.strip():
            self.problem("reward_model_name_or_path", f"must be a model id or a local path, got {model!r}")
            return None
        return self.local(model)

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
                self.carried.add(key)
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
            setting = next((k for k, (o, arg, _) in T.REWARD_SETTINGS.items() if (o, arg) == (peer, a)), None)
            if setting in self.data:  # the config set it: named among the keys not mapped, with the reason
                self.carried.discard(setting)
                reason = T.SETTINGS_NOT_CARRIED.get(setting, why)
                self.unmapped(setting, f"{peer}'s {a}={value!r}: grpo-trl's {target!r} does not take it ({reason})")
                continue
            self.out.warnings.append(
                f"reward {peer!r}: grpo-trl's {target!r} does not take {a}={value!r} yet, so {why}"
            )
        entry = {"name": target}
        if args:
            entry["args"] = args
        return entry, f"{peer}: {note}"
