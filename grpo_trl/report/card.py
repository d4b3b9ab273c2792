"""The run's model card, ``README.md`` in its output_dir (``huggingface_hub.ModelCard.from_template`` on ``card.md``):
base model, rewards, data, plan, last metrics, ``eval.json``, the recipe; all redacted. A ``README.md`` grpo-trl did
not write, or edited since, is kept. ``publish`` uploads only the final save and the card.
"""

from __future__ import annotations

import hashlib
import html
import json
import logging
import math
import re
from importlib import metadata
from pathlib import Path
from typing import Any

import yaml

from grpo_trl.errors import GrpoTrlError, Problem, RecipeError, one_line, redact
from grpo_trl.io import read_json_head, read_jsonl, read_yaml, write
from grpo_trl.recipe import Recipe
from grpo_trl.run.directory import Manifest

logger = logging.getLogger("grpo_trl")
CARD = "README.md"
TAGS = ["grpo", "trl", "grpo-trl"]
SHOWN = (  # the logged metrics the card lists (TRL's names): rewards, KL, loss, lengths
    "reward", "kl", "loss", "entropy", "completions/mean_length", "completions/clipped_ratio", "frac_reward_zero_std",
    "grad_norm", "learning_rate",
)  # fmt: skip
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


def _fenced(text: str, lang: str = "") -> str:
    """``text`` in a code fence longer than any run of backticks inside it (a recipe may hold some)."""
    fence = "`" * max(3, 1 + max(map(len, re.findall(r"`+", text)), default=0))
    return f"{fence}{lang}\n{text.rstrip()}\n{fence}"


def _cell(value: Any, limit: int = 200) -> str:
    """A table cell: one line, escaped for Markdown and HTML, at most ``limit`` characters."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = html.escape(" ".join(text.split()), quote=False).replace("\\", "\\\\").replace("|", "\\|")
    text = text.replace("`", "'")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _hub_id(value: Any, base_dir: Path) -> bool:
    return isinstance(value, str) and bool(HUB_ID.match(value)) and not (base_dir / value).exists()


def base_model(recipe: Recipe) -> str | None:
    """The Hub id the run started from (``None`` for ``builtin:`` models and local folders)."""
    name = str(recipe.model.get("name", ""))
    return name if not name.startswith("builtin:") and _hub_id(name, recipe.base_dir) else None


def datasets(recipe: Recipe) -> list[str]:
    """The Hub datasets the data came from, where known (a builder's ``name``/``source``, its default included)."""
    from grpo_trl.data.registry import builder_params, get_builder

    parts = recipe.dataset.get("mixture") or [recipe.dataset]
    found: list[str] = []
    for part in parts if isinstance(parts, list) else []:
        try:
            options = {**builder_params(get_builder(str(part.get("builder")))), **part}
        except GrpoTrlError:
            options = dict(part)
        found += [v for k in ("name", "source") if _hub_id(v := options.get(k), recipe.base_dir) and v not in found]
    return found


def _plan_lines(recipe: Recipe, world_size: int | None) -> list[str]:
    from grpo_trl.check.plan import format_plan, make_plan

    try:
        return format_plan(recipe, make_plan(recipe, world_size=world_size), world_size_given=True)
    except (GrpoTrlError, LookupError, ValueError, TypeError, AttributeError, OSError) as exc:  # an edited recipe.yaml
        return [f"  (not available: {type(exc).__name__})"]


def _versions() -> str:
    found = []
    for name in ("grpo-trl", "trl", "transformers", "peft", "torch", "datasets"):
        try:
            found.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            continue
    return ", ".join(found)


def card_text(recipe: Recipe, folder: str | Path, world_size: int | None = None) -> str:
    """The whole card (front matter and body, ``card.md``) for the run in ``folder``, from what is there now."""
    from huggingface_hub import ModelCard, ModelCardData

    from grpo_trl.report.page import log_entries, trend_text

    folder = Path(folder)
    lora = (folder / "adapter_config.json").is_file()
    data = ModelCardData(
        base_model=base_model(recipe),
        library_name="peft" if lora else "transformers",
        tags=TAGS + (["lora"] if lora else []),
        datasets=datasets(recipe) or None,
        pipeline_tag="text-generation",
    )
    state = read_json_head(folder / "trainer_state.json", 256 * 2**20) or {}
    history = log_entries(state.get("log_history")) if isinstance(state, dict) else []
    last = next((h for h in reversed(history) if "reward" in h and "loss" in h), {})
    metrics = {
        k: v for k, v in last.items()
        if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) and k.startswith(SHOWN)
        and not k.endswith("/std")
    }  # fmt: skip
    evaluation = read_json_head(folder / "eval.json", 64 * 2**20)
    evaluation = evaluation if isinstance(evaluation, dict) and {"model", "backend"} <= evaluation.keys() else {}
    shown = ("split", "prompts", "n", "pass@1", f"pass@{evaluation.get('n')}", "reward_mean", "rewards")
    card = ModelCard.from_template(
        data, template_path=str(Path(__file__).with_name("card.md")), cell=_cell, fenced=_fenced,
        name=folder.resolve().name, model=str(recipe.model.get("name")), lora=lora,
        steps=state.get("global_step", "?"), rewards=recipe.rewards, data=recipe.dataset,
        plan="\n".join(_plan_lines(recipe, world_size)), step=last.get("step"), trend=trend_text(history),
        metrics=sorted((k, v) for k, v in metrics.items() if k != "step"),
        alerts=[a for a in read_jsonl(folder / "alerts.jsonl") if isinstance(a.get("step"), int)],
        evaluation=[(k, evaluation[k]) for k in shown if k in evaluation],
        report=(folder / "report" / "report.html").is_file(),
        recipe=yaml.safe_dump(redact(recipe.data), sort_keys=False),  # as recipe.yaml: escapes what YAML would break
        versions=_versions(),
    )  # fmt: skip
    return ModelCard(redact(card.content)).content  # the one redaction


def write_card(
    recipe: Recipe, folder: str | Path, manifest: Manifest | None = None, world_size: int | None = None
) -> Path | None:
    """Write ``folder/README.md``, recorded in the manifest with its sha256; ``None`` when a ``README.md``
    grpo-trl did not write, or edited since, is there (kept, with a warning)."""
    folder = Path(folder)
    m = manifest or Manifest.load(folder)
    path, entry = folder / CARD, m.entries.get(CARD)
    digest = lambda: hashlib.sha256(path.read_bytes()).hexdigest()  # noqa: E731
    if path.exists() or path.is_symlink():
        theirs = entry is None or not path.is_file() or path.is_symlink()
        if theirs or ("sha256" in entry and digest() != entry["sha256"]):
            logger.warning("%s %s: kept; no model card written", path, "is not grpo-trl's" if theirs else
                           "was edited since grpo-trl wrote it")  # fmt: skip
            return None
    text = card_text(recipe, folder, world_size)
    m.record(CARD)
    m.entries[CARD].pop("sha256", None)  # recorded before it is written; its hash once it is whole
    m.save()
    write(path, text, mine=True)  # grpo-trl's card (checked above)
    m.entries[CARD]["sha256"] = digest()
    m.save()
    return path


def refresh_card(output_dir: str | Path) -> Path | None:
    """``grpo-trl report``: the card again (now with ``eval.json`` and the report) when the run's ``README.md`` is
    grpo-trl's, unedited; ``None`` for a folder that is not a run's."""
    folder = Path(output_dir)
    manifest = Manifest.load(folder)
    if not manifest.exists or "sha256" not in manifest.entries.get(CARD, {}):
        return None
    path = folder / "recipe.yaml"
    try:
        data = read_yaml(path)
    except (OSError, ValueError, yaml.YAMLError):
        return None
    return write_card(Recipe(data=data, path=path), folder, manifest) if isinstance(data, dict) else None


def pushed_names(folder: str | Path, manifest: Manifest) -> list[str]:
    """What ``publish`` uploads: the final save's files and the card, as the manifest records them (never the logs,
    ``recipe.yaml``, ``.grpo-trl/``, checkpoints, built models, the report, or a file grpo-trl did not write)."""
    from grpo_trl.run.names import kind_of

    present = [n for n in manifest.present() if n in manifest.entries and kind_of(n) == "model"]
    return sorted(n for n in present if (Path(folder) / n).is_file())


def publish(recipe: Recipe, trainer: Any, session: Any) -> Path | None:
    """After the final save (main process): write the card; with ``trainer.push_to_hub``, upload it with the final
    save to the repo the trainer created (``huggingface_hub.upload_folder``)."""
    if not session.main:
        return None
    args = trainer.args
    path = write_card(recipe, args.output_dir, session.manifest, world_size=args.world_size)
    repo = getattr(trainer, "hub_model_id", None)
    if args.push_to_hub and repo:
        from huggingface_hub import HfApi

        names = pushed_names(args.output_dir, session.manifest)
        try:
            HfApi(token=args.hub_token).upload_folder(
                repo_id=repo,
                folder_path=args.output_dir,
                allow_patterns=names,
                commit_message="End of training (grpo-trl)",
                revision=args.hub_revision,
            )
        except Exception as exc:  # noqa: BLE001 - the Hub's and the network's errors: the run itself is saved
            why = f"the push to {repo} failed ({type(exc).__name__}: {one_line(str(exc))[:200]})"
            fix = f"the model and its card are in {args.output_dir}: `hf upload {repo} {args.output_dir}` sends them"
            raise RecipeError([Problem(recipe.file, "trainer.push_to_hub", why, fix)]) from exc
        logger.info("pushed %s to %s", ", ".join(names), repo)
    return path
