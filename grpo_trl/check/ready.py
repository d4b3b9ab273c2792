"""What TRL or transformers would only reject mid-run: ``report_to`` integrations and kernels, a data set too small for
a step, evaluation without an eval split, a chat template that fails on the first prompt (or drops the image token)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from grpo_trl.check.extras import offline
from grpo_trl.check.plan import make_plan
from grpo_trl.data.build import build_one, mixture_parts
from grpo_trl.data.image_tokens import IMAGE_COLUMNS
from grpo_trl.data.refill import IMAGES, IMAGES_FIX
from grpo_trl.data.registry import builder_params, get_builder
from grpo_trl.data.shape import built_here, dataset_columns, expected_rows, no_bars
from grpo_trl.data.sources import first_row
from grpo_trl.errors import GrpoTrlError, Problem, suggest
from grpo_trl.io import read_json_head, read_text
from grpo_trl.models.chat_templates import resolve_template
from grpo_trl.models.load import is_vision_model
from grpo_trl.models.tiny import CHAT_TEMPLATE
from grpo_trl.models.tiny_vlm import IMAGE_TOKEN, VLM_CHAT_TEMPLATE
from grpo_trl.recipe import schema
from grpo_trl.recipe.core import Recipe

# report_to name -> the module it needs (the name itself when not listed)
INTEGRATION_MODULES = {"azure_ml": "azureml", "flyte": "flytekit", "kubeflow": "kfp"}
IMAGE_PROBE = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "What is in the image?"}]}]


def readiness_problems(recipe: Recipe, cfg: Any, model_ok: bool = True) -> list[Problem]:
    """``cfg``: the recipe's planned ``GRPOConfig``; ``model_ok``: its chat template is tried on the first prompt."""
    found = [*integration_problems(recipe, cfg), *eval_problems(recipe, cfg), *step_problems(recipe, cfg)]
    if model_ok:  # data with images: a vision-language model whose template renders them
        found += [*template_problems(recipe), *vision_problems(recipe)]
    return found


def integration_problems(recipe: Recipe, cfg: Any) -> list[Problem]:
    from transformers.integrations import INTEGRATION_TO_CALLBACK, get_available_reporting_integrations
    from transformers.utils import is_liger_kernel_available

    out = []
    available = set(get_available_reporting_integrations())
    for name in cfg.report_to:  # a list once TrainingArguments.__post_init__ ran ("all" expanded, "none" emptied)
        if name in (None, "none", "all") or name in available:
            continue
        key, module = "trainer.report_to", INTEGRATION_MODULES.get(name, name)
        if name not in INTEGRATION_TO_CALLBACK:
            why = f"{name!r} is not a reporting integration{suggest(name, INTEGRATION_TO_CALLBACK)}"
            fix = f"use none, all, or some of {', '.join(sorted(INTEGRATION_TO_CALLBACK))}"
            out.append(Problem(recipe.file, key, why, fix))
        elif importlib.util.find_spec(module) is None:
            fix = f"pip install {module}, or set trainer.report_to: none"
            out.append(Problem(recipe.file, key, f"{name!r} is not installed here", fix))
    if cfg.use_liger_kernel and not is_liger_kernel_available():
        fix = "pip install liger-kernel (GPU only), or remove use_liger_kernel"
        out.append(Problem(recipe.file, "trainer.use_liger_kernel", "liger-kernel is not installed", fix))
    return out


def eval_problems(recipe: Recipe, cfg: Any) -> list[Problem]:
    data = recipe.dataset
    strategy = getattr(cfg.eval_strategy, "value", cfg.eval_strategy)
    if strategy == "no" or data.get("eval_split") or data.get("eval_size"):
        return []
    fix = "set data.eval_size: N (held out from the data) or data.eval_split, or eval_strategy: 'no'"
    return [Problem(recipe.file, "trainer.eval_strategy", f"{strategy!r} evaluates, but data has no eval split", fix)]


def step_problems(recipe: Recipe, cfg: Any) -> list[Problem]:
    data = recipe.dataset
    held = data.get("eval_size") if not data.get("eval_split") else None
    rows = expected_rows(data, recipe.base_dir) if held else None
    if held and rows is not None and held >= rows:  # rows bound what the filters leave: this fails whatever they do
        fix = "hold out fewer rows, or name a split with data.eval_split"
        return [Problem(recipe.file, "data.eval_size", f"holds out {held} rows of a dataset of at most {rows}", fix)]
    plan = make_plan(recipe, cfg=cfg)
    if plan.total_optimizer_steps != 0:
        return []
    why = (
        f"{plan.dataset_rows} row(s) give 0 optimizer steps: one generation batch takes {plan.prompts_per_generation}"
    )
    fix = "use more rows, or lower trainer.per_device_train_batch_size / steps_per_generation"
    return [Problem(recipe.file, "data", f"{why} prompts", fix)]


def chat_template(recipe: Recipe) -> tuple[str, str] | None:
    """``(template text, key it comes from)`` when it can be read without a download, else None."""
    model = recipe.model
    if model.get("chat_template"):
        try:  # trl:<name>, a file or the text, resolved as training resolves it
            return resolve_template(model["chat_template"], recipe.base_dir), "model.chat_template"
        except ValueError:  # an unknown trl: name, reported by the model checks
            return None
    name = model.get("name", "")
    if name == schema.BUILTIN_TINY:
        return CHAT_TEMPLATE, "model.name"
    folder = Path(name).expanduser()  # a Hub id: the template arrives with the download
    if (folder / "chat_template.jinja").is_file():
        return read_text(folder / "chat_template.jinja", 2**24, "chat template"), "model.name"  # not UTF-8: one error
    config = read_json_head(folder / "tokenizer_config.json", 2**26)  # bounded: a FIFO, a deep nest are None
    text = config.get("chat_template") if isinstance(config, dict) else None
    return (text, "model.name") if isinstance(text, str) else None


def first_prompt(recipe: Recipe) -> list[dict] | None:
    """The first prompt of the data as the trainer will see it, when it can be built offline (else None)."""
    cfg = mixture_parts(recipe.dataset)[0] if recipe.dataset.get("mixture") else recipe.dataset
    if not built_here(cfg):
        return None  # a plugin's builder is the user's code; load_dataset (Hub or local folder) a download or a copy
    one = {**cfg, "limit": 1, "max_prompt_tokens": None, "max_solution_tokens": None, "eval_size": None}
    if "size" in builder_params(get_builder(cfg["builder"])):  # a generated dataset: its first row, not all of them
        one["size"] = 1
    with no_bars():
        ds, _, _ = build_one(one, None, recipe.base_dir)
    return (first_row(ds) or {}).get("prompt")  # a streamed dataset (data.streaming) is read up to its first row


def _render(template: str, prompt: Any, file: str, key: str, what: str, fix: str) -> tuple[str, list[Problem]]:
    """``prompt`` rendered by ``template`` as generation will, or the problem it raises (named at ``key``)."""
    from transformers.utils.chat_template_utils import render_jinja_template

    try:
        out: Any = render_jinja_template(
            [prompt], chat_template=template, add_generation_prompt=True, bos_token="", eos_token="", pad_token=""
        )
    except Exception as exc:  # noqa: BLE001 - a template error of any kind is the user's to fix
        why = f"the chat template does not render {what}: {type(exc).__name__}: {str(exc)[:200]}"
        return "", [Problem(file, key, why, fix)]
    return str(out[0][0] if isinstance(out, tuple) else out), []


def template_problems(recipe: Recipe) -> list[Problem]:
    if (found := chat_template(recipe)) is None:
        return []
    try:
        prompt = first_prompt(recipe)
    except GrpoTrlError as exc:
        return exc.located(recipe.file, "data")
    if prompt is None or isinstance(prompt, str):
        return []  # a plain-string prompt (TRL's standard format) reaches the model without the template
    fix = "fix the template (grpo-trl data RECIPE shows prompts as the model sees them)"
    text, problems = _render(found[0], prompt, recipe.file, found[1], "the first prompt", fix)
    if problems or text.strip():
        return problems
    return [Problem(recipe.file, found[1], "the chat template renders the first prompt as empty text")]


def vision_problems(recipe: Recipe) -> list[Problem]:
    """Data with an ``images``/``image`` column needs a vision-language model that renders image entries."""
    try:
        columns = dataset_columns(recipe.dataset, recipe.base_dir)
    except (GrpoTrlError, KeyError):  # reported by the data and column checks
        return []
    if columns is None or not set(IMAGE_COLUMNS) & set(columns):
        return []
    if recipe.dataset.get("dynamic_sampling") is not None:
        return [Problem(recipe.file, "data.dynamic_sampling", IMAGES, IMAGES_FIX)]  # refused at train start too
    name = str(recipe.model.get("name"))
    revision = {"revision": recipe.model["revision"]} if recipe.model.get("revision") else {}
    if is_vision_model(name, recipe.base_dir, **revision) is False:
        why = f"{name!r} is a text-only model (its config has no vision_config), but the data gives images"
        fix = "use a vision-language model (e.g. Qwen/Qwen2.5-VL-3B-Instruct, or builtin:tiny-vlm offline)"
        return [Problem(recipe.file, "model.name", why, fix)]
    if name.startswith("builtin:"):
        template, token = VLM_CHAT_TEMPLATE, IMAGE_TOKEN
    else:
        from transformers import AutoProcessor

        if (processor := offline(AutoProcessor, recipe)) is None:
            return []
        template, token = getattr(processor, "chat_template", None), getattr(processor, "image_token", None)
    found = chat_template(recipe) if recipe.model.get("chat_template") else (template, "model.name")
    if found is None or not isinstance(found[0], str) or not isinstance(token, str):
        return []
    fix = "render {'type': 'image'} entries as the processor's image token"
    text, problems = _render(found[0], IMAGE_PROBE, recipe.file, found[1], "a prompt with an image", fix)
    if problems or token in text:
        return problems
    why = f"the chat template renders an image entry ({{'type': 'image'}}) without the image token {token!r}"
    fix = f"render {{'type': 'image'}} entries as {token!r} (the processor expands it per image)"
    return [Problem(recipe.file, found[1], f"{why}: the model would never see the image", fix)]
