"""``grpo-trl import``: a flat ``trl grpo --config`` YAML or an open-r1 GRPO recipe -> a grpo-trl recipe.

Also what ``check``/``train`` say when they are handed such a config (``peer_config_problems``).

Example:
    >>> result = import_text("model_name_or_path: Qwen/Qwen2.5-0.5B\\ndataset_name: my/data\\n"
    ...                      "reward_funcs: [accuracy_reward]\\nreward_funcs: [think_format_reward]\\n")
    >>> [r["name"] for r in result.recipe["rewards"]], result.warnings[0].startswith("repeated key reward_funcs")
    (['think_format'], True)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from grpo_trl.errors import Problem, RecipeError
from grpo_trl.importer.emit import emit
from grpo_trl.importer.read import read_peer_yaml, read_peer_yaml_text
from grpo_trl.importer.state import Imported
from grpo_trl.importer.translate import translate
from grpo_trl.tables import RENAMES, peer_config_problems, rename_hint

__all__ = ["RENAMES", "ImportResult", "import_config", "import_text", "peer_config_problems", "rename_hint"]


@dataclass
class ImportResult:
    """The recipe (a dict), its commented YAML text, and every warning / unmapped key, one line each."""

    recipe: dict
    text: str
    warnings: list[str]
    unmapped: list[tuple[str, str]]
    imported: Imported


def _header(source: str, imported: Imported) -> list[str]:
    head = [
        f"Imported by `grpo-trl import` from {source} ({imported.flavour} config; defaults assumed: TRL "
        f"{imported.baseline}, change with --trl-version).",
        "A comment names the setting each line came from.",
    ]
    if imported.changed_defaults:
        head += ["", "TRL defaults that changed since:"] + [f"  {line}" for line in imported.changed_defaults]
    if imported.unmapped:
        head += ["", "Not mapped:"] + [f"  {key}: {why}" for key, why in imported.unmapped]
    if imported.warnings:
        head += ["", "Warnings:"] + [f"  {w}" for w in imported.warnings]
    return head + [""]


def _finish(data: object, duplicates: list[str], source: str, **options) -> ImportResult:
    imported = translate(data, file=source, **options)
    imported.warnings[:0] = [f"repeated key {d}" for d in duplicates]
    text = emit(imported.recipe, imported.comments, _header(source, imported))
    warnings = list(imported.warnings) + [f"{k}: not mapped: {why}" for k, why in imported.unmapped]
    return ImportResult(imported.recipe, text, warnings, list(imported.unmapped), imported)


def import_text(text: str, source: str = "<config>", **options) -> ImportResult:
    """Translate config text (see ``import_config``)."""
    try:
        data, duplicates = read_peer_yaml_text(text)
    except yaml.YAMLError as exc:
        raise RecipeError([Problem(source, "-", f"not valid YAML: {' '.join(str(exc).split())}")]) from exc
    return _finish(data, duplicates, source, **options)


def import_config(
    path: str | Path,
    *,
    flavour: str | None = None,
    trl_version: str | None = None,
    out_dir: str | Path | None = None,
) -> ImportResult:
    """Read and translate a peer config. ``RecipeError`` (one ``Problem`` per line) when no recipe can be made."""
    try:
        data, duplicates = read_peer_yaml(path)
    except OSError as exc:
        raise RecipeError([Problem(str(path), "-", f"cannot read the config: {exc.strerror or exc}")]) from exc
    except (ValueError, yaml.YAMLError) as exc:
        why = " ".join(str(exc).split())
        raise RecipeError([Problem(str(path), "-", f"not a readable YAML config: {why}")]) from None
    return _finish(
        data,
        duplicates,
        str(path),
        flavour=flavour,
        trl_version=trl_version,
        out_dir=Path(out_dir) if out_dir is not None else Path(path).resolve().parent,
    )
