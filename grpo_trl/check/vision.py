"""Data with images: the model is a vision-language model whose chat template renders image entries as the
processor's image token; read offline (built-in, local folder, HF cache), else checked when training loads it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from grpo_trl.errors import GrpoTrlError, Problem

if TYPE_CHECKING:
    from grpo_trl.recipe.core import Recipe

PROBE = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "What is in the image?"}]}]


def _template_and_token(recipe: Recipe) -> tuple[str, str, str] | None:
    """``(chat template, image token, key it comes from)`` when both can be read offline, else None."""
    model = recipe.model
    name = str(model.get("name"))
    if name.startswith("builtin:"):
        from grpo_trl.models.tiny_vlm import IMAGE_TOKEN, VLM_CHAT_TEMPLATE

        template, token = VLM_CHAT_TEMPLATE, IMAGE_TOKEN
    else:
        from transformers import AutoProcessor

        local = recipe.base_dir / name
        try:
            processor = AutoProcessor.from_pretrained(str(local) if local.is_dir() else name, local_files_only=True)
        except Exception:  # noqa: BLE001 - not available offline, or no processor: checked when training loads it
            return None
        template, token = getattr(processor, "chat_template", None), getattr(processor, "image_token", None)
    key = "model.name"
    if model.get("chat_template"):
        from grpo_trl.models.chat_templates import resolve_template

        try:
            template, key = resolve_template(model["chat_template"], recipe.base_dir), "model.chat_template"
        except ValueError:  # an unknown trl: name, reported by the model checks
            return None
    return (template, token, key) if isinstance(template, str) and isinstance(token, str) else None


def vision_problems(recipe: Recipe) -> list[Problem]:
    """Data with an ``images``/``image`` column needs a vision-language model that renders image entries."""
    from grpo_trl.data.image_tokens import IMAGE_COLUMNS
    from grpo_trl.data.shape import dataset_columns
    from grpo_trl.models.load import is_vision_model

    try:
        columns = dataset_columns(recipe.dataset, recipe.base_dir)
    except (GrpoTrlError, KeyError):  # reported by the data and column checks
        return []
    if columns is None or not set(IMAGE_COLUMNS) & set(columns):
        return []
    if isinstance(recipe.dataset, dict) and recipe.dataset.get("dynamic_sampling") is not None:
        from grpo_trl.data.refill import IMAGES, IMAGES_FIX

        return [Problem(recipe.file, "data.dynamic_sampling", IMAGES, IMAGES_FIX)]  # refused at train start too
    name = str(recipe.model.get("name"))
    revision = {"revision": recipe.model["revision"]} if recipe.model.get("revision") else {}
    if is_vision_model(name, recipe.base_dir, **revision) is False:
        why = f"{name!r} is a text-only model (its config has no vision_config), but the data gives images"
        fix = "use a vision-language model (e.g. Qwen/Qwen2.5-VL-3B-Instruct, or builtin:tiny-vlm offline)"
        return [Problem(recipe.file, "model.name", why, fix)]
    found = _template_and_token(recipe)
    if found is None:
        return []
    template, token, key = found
    return template_image_problems(template, token, recipe.file, key)


def template_image_problems(template: str, image_token: str, file: str = "", key: str = "") -> list[Problem]:
    """The template must render an image entry (``{"type": "image"}``) as the processor's ``image_token``."""
    from transformers.utils.chat_template_utils import render_jinja_template

    try:
        rendered: Any = render_jinja_template(
            [PROBE], chat_template=template, add_generation_prompt=True, bos_token="", eos_token="", pad_token=""
        )
    except Exception as exc:  # noqa: BLE001 - a template error of any kind is the user's to fix
        why = f"the chat template does not render a prompt with an image: {type(exc).__name__}: {str(exc)[:200]}"
        return [Problem(file, key, why, "render {'type': 'image'} entries as the processor's image token")]
    text = rendered[0][0] if isinstance(rendered, tuple) else rendered
    if image_token not in str(text):
        why = f"the chat template renders an image entry ({{'type': 'image'}}) without the image token {image_token!r}"
        fix = f"render {{'type': 'image'}} entries as {image_token!r} (the processor expands it per image)"
        return [Problem(file, key, f"{why}: the model would never see the image", fix)]
    return []
