"""Write a translated recipe as YAML with a comment on each translated line (and a header of what was not mapped).

Every value is written on one line with PyYAML's own flow style, so the text reads back to exactly the recipe.

Example:
    >>> text = emit({"model": {"name": "m"}, "rewards": [{"name": "accuracy"}]},
    ...             {("model", "name"): "model_name_or_path"}, ["from c.yaml"])
    >>> print(text)
    # from c.yaml
    model:
      name: m  # model_name_or_path
    rewards:
      - {name: accuracy}
    <BLANKLINE>
"""

from __future__ import annotations

from typing import Any

import yaml


def one_line(text: Any) -> str:
    """``text`` made safe for a YAML comment: no line breaks, control characters escaped (YAML refuses them raw)."""
    words = " ".join(str(text).split())
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in words)


def flow(value: Any) -> str:
    """``value`` as one line of YAML (strings with line breaks or unusual characters double-quoted, escaped)."""
    style = None
    if isinstance(value, str) and not (value.isprintable() and value.isascii()):
        style = '"'
    out = yaml.safe_dump(
        value, default_flow_style=True, default_style=style, width=float("inf"), allow_unicode=False, sort_keys=False
    )
    out = out.strip()
    if out.endswith("\n..."):
        out = out[: -len("\n...")]
    if out.endswith("..."):
        out = out[:-3].rstrip()
    return out


def _comment(comments: dict, path: tuple) -> str:
    note = comments.get(path)
    return f"  # {one_line(note)}" if note else ""


def emit(recipe: dict, comments: dict[tuple, str], header: list[str]) -> str:
    """The recipe's YAML text: sections as blocks, each value on its own commented line."""
    lines = [f"# {one_line(h)}" if h else "#" for h in header]
    for section, value in recipe.items():
        if isinstance(value, dict):
            lines.append(f"{section}:")
            for key, item in value.items():
                if isinstance(item, list) and item and all(isinstance(x, dict) for x in item):
                    lines.append(f"  {flow(key)}:{_comment(comments, (section, key))}")
                    lines += [f"    - {flow(x)}" for x in item]
                elif isinstance(item, dict) and item:
                    lines.append(f"  {flow(key)}:")
                    for k, v in item.items():
                        lines.append(f"    {flow(k)}: {flow(v)}{_comment(comments, (section, key, k))}")
                else:
                    lines.append(f"  {flow(key)}: {flow(item)}{_comment(comments, (section, key))}")
        elif isinstance(value, list):
            lines.append(f"{section}:")
            lines += [f"  - {flow(item)}{_comment(comments, (section, i))}" for i, item in enumerate(value)]
        else:
            lines.append(f"{section}: {flow(value)}{_comment(comments, (section,))}")
    return "\n".join(lines) + "\n"
