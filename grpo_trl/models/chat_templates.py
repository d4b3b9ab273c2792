"""Chat templates: ``model.chat_template: trl:<name>`` picks one TRL ships; ``template_problems`` asks TRL's own
helpers whether a tokenizer's template can carry tool calls in GRPO."""

from __future__ import annotations

import copy
import os
from pathlib import Path

from grpo_trl.errors import suggest
from grpo_trl.io import read_text

PREFIX = "trl:"
TOOL_TEMPLATES = ("qwen2_5", "qwen3", "llama3_1", "qwen3_5_nothink", "gemma4", "gptoss", "glm4moe")


def resolve_template(value: str, base_dir: Path | None = None) -> str:
    """Template text for ``model.chat_template``: ``trl:<name>``, a file path (relative to the recipe) or the text."""
    value = str(value)
    if value.startswith(PREFIX):
        import trl

        name = value[len(PREFIX) :]
        shipped = {p.stem: p for p in sorted((Path(trl.__file__).parent / "chat_templates").glob("*.jinja"))}
        if name not in shipped:
            raise ValueError(
                f"{value!r} is not a template TRL ships{suggest(name, list(shipped))}; TRL ships: "
                f"{', '.join(n for n in shipped if not n.endswith('_training'))}"
            )
        return shipped[name].read_text()
    if "{" in value:
        return value
    path = (base_dir or Path.cwd()) / value
    if not os.path.lexists(path):  # anything else there is the bounded reader's to name (a pipe, a folder)
        raise ValueError(f"file {value!r} not found (relative to the recipe; a template's text has {{ }} in it)")
    try:
        return read_text(path, 2**22, "chat template")
    except OSError as exc:  # a loop, no right to read
        raise ValueError(f"cannot read {value!r}: {exc.strerror or exc}") from None


def template_problems(tokenizer) -> list[str]:
    """Why this tokenizer's chat template would break GRPO tool calling (empty: it works), each with the fix."""
    from trl import add_response_schema, supports_tool_calling

    from grpo_trl.trl_adapter import prefix_preserving, training_chat_template

    fix = (
        "set model.chat_template to a template TRL ships, e.g. `model.chat_template: trl:qwen2_5` "
        f"({', '.join(TOOL_TEMPLATES)} all work)"
    )
    if not supports_tool_calling(tokenizer):
        return [f"the model's chat template cannot render tool calls and tool results; {fix}"]
    has_parser = getattr(tokenizer, "response_template", None) or getattr(tokenizer, "response_schema", None)
    if not has_parser:
        try:
            add_response_schema(copy.copy(tokenizer))  # a copy: the check leaves the tokenizer as it found it
        except ValueError:
            return [f"TRL cannot parse tool calls written in this chat template (it is not one TRL knows); {fix}"]
    if not prefix_preserving(tokenizer):
        try:
            patched = training_chat_template(tokenizer)
        except (ValueError, NotImplementedError):
            patched = None
        if patched is None:
            return [
                "the chat template re-renders earlier turns when a tool result is added (not prefix-preserving) and "
                f"TRL has no training version of it; {fix}"
            ]
    return []
