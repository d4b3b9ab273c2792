"""The dataset side of a peer config (``dataset_name`` or a mixture, splits, prompt column, system prompt) -> the
recipe's ``data:`` (the ``hub`` builder; a local data file becomes ``path:``)."""

from __future__ import annotations

import numbers
from pathlib import Path
from typing import Any

from grpo_trl import tables as T
from grpo_trl.importer.state import Translation


class DataKeys(Translation):
    """``data:``: one dataset or a mixture, read by the hub builder."""

    def dataset(self) -> None:
        flavour = self.out.flavour
        prompt_column = self.string("dataset_prompt_column", "prompt")
        split = self.string("dataset_train_split", "train")
        test_split = self.string("dataset_test_split", "test")
        stream = self.take("dataset_streaming")  # TRL's ScriptArguments: an IterableDataset
        part: dict[str, Any] = {"builder": "hub"}
        if self.data.get("datasets") == []:  # TRL's DatasetMixtureConfig default, written out: no mixture
            self.take("datasets")
        elif self.has("dataset_mixture") or self.has("datasets"):
            self.mixture(prompt_column, flavour)
            if stream:
                self.unmapped("dataset_streaming", T.NOT_MAPPED["streaming"])
            if self.has("dataset_name"):
                self.unmapped("dataset_name", "a dataset mixture is given too, and TRL uses the mixture")
            self.prompt_format(flavour)
            return
        if self.has("dataset_name"):
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
            if stream:
                self.put(("data", "streaming"), True, "dataset_streaming")
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
            return {"path": self.local(str(p))}
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
