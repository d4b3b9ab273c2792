"""``grpo-trl import``: a flat ``trl grpo --config`` YAML or an open-r1 GRPO recipe -> a grpo-trl recipe, written with
a comment on each translated line. The peer's YAML is read permissively (a repeated key keeps its last value, as
PyYAML and TRL do, and is reported) but bounded (``grpo_trl.io``).

    >>> result = import_text("model_name_or_path: Qwen/Qwen2.5-0.5B\\ndataset_name: my/data\\n"
    ...                      "reward_funcs: [accuracy_reward]\\nreward_funcs: [think_format_reward]\\n")
    >>> [r["name"] for r in result.recipe["rewards"]], result.warnings[0].startswith("repeated key reward_funcs")
    (['think_format'], True)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from grpo_trl import tables as T
from grpo_trl.errors import GrpoTrlError, Problem, RecipeError, one_line
from grpo_trl.importer import rules as tr
from grpo_trl.importer import sections
from grpo_trl.importer.rules import Imported, installed_fields
from grpo_trl.io import load_yaml, read_text
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


OPEN_R1_ONLY = frozenset(
    {"dataset_prompt_column", "dataset_mixture", "system_prompt", "chat_template", *T.REWARD_SETTINGS}
    | set(T.CODE_PROVIDER_KEYS)
    | {"benchmarks", "callbacks", "hub_model_revision", "wandb_entity", "wandb_project", "num_completions_to_print"}
)


def detect_flavour(data: dict) -> str:
    """``open-r1`` when the config uses open-r1's own keys or reward names, else ``trl``."""
    from trl import GRPOConfig

    trl_fields = installed_fields(GRPOConfig)  # num_completions_to_print: a TRL field too, in some versions
    if any(k in OPEN_R1_ONLY and k not in trl_fields for k in data):
        return "open-r1"
    funcs = data.get("reward_funcs")
    funcs = [funcs] if isinstance(funcs, str) else funcs if isinstance(funcs, list) else []
    peers = [f for f in funcs if isinstance(f, str) and f in T.REWARDS]
    return "open-r1" if peers and not any(f.endswith("_reward") or f.startswith("get_") for f in peers) else "trl"


def translate(data: Any, *, file: str = "<config>", flavour: str | None = None, trl_version: str | None = None,
              out_dir: Path | None = None) -> Imported:  # fmt: skip
    """Translate a parsed peer config. Raises ``RecipeError`` listing every problem that stops a recipe."""
    if not isinstance(data, dict) or not data:
        raise RecipeError([Problem(file, "-", "a TRL/open-r1 config is a YAML mapping of settings")])
    bad = [k for k in data if not isinstance(k, str)]
    if bad:
        raise RecipeError([Problem(file, repr(k), "setting names must be strings") for k in bad])
    if flavour not in (None, "trl", "open-r1"):
        raise RecipeError([Problem(file, "--from", f"{flavour!r}: use trl or open-r1")])
    flavour = flavour or detect_flavour(data)
    baseline = trl_version or (T.BASELINE_OPEN_R1 if flavour == "open-r1" else T.BASELINE_TRL)
    try:
        T._vkey(baseline)
    except ValueError:
        raise RecipeError([Problem(file, "--trl-version", f"{baseline!r} is not a version like 0.18")]) from None
    t = tr.Translation(data, file, flavour, baseline, out_dir)
    for step in (tr.model, sections.dataset, sections.rewards, tr.old_defaults, tr.rest):
        step(t)
    named = {k.split(".")[0] for k, _ in t.out.unmapped} | {line.split(":")[0] for line in t.out.changed_defaults}
    for key in [k for k in data if k not in t.carried and k not in named]:  # every key is carried or named
        default, note = T.CARRIED_BY_DEFAULT.get(key, (t.model_defaults.get(key, t.grpo.get(key, t)), "the default"))
        if data[key] == default:
            t.out.changed_defaults.append(f"{key}: {data[key]!r} - nothing to write ({note})")
        else:
            t.unmapped(key, T.LEFT_OUT.get(key, "read, but no rule of grpo-trl import carries it (please report it)"))
    if t.problems:
        raise RecipeError(t.problems)
    order = ("model", "data", "rewards", "generation", "trainer", "launch")
    t.out.recipe = {k: t.out.recipe[k] for k in order if k in t.out.recipe}
    return t.out


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


MAX_BYTES = 2_000_000  # a config, not a dataset


class _Loader(yaml.SafeLoader):
    """SafeLoader that records keys repeated within one mapping (the last value wins, as in plain PyYAML)."""

    def __init__(self, stream):
        super().__init__(stream)
        self.duplicates: list[str] = []

    def construct_mapping(self, node, deep=False):
        seen: dict = {}
        for key_node, value_node in node.value:
            try:
                key = self.construct_object(key_node, deep=True)
                hash(key)
            except TypeError:
                continue  # unhashable key: the base class reports it
            if key in seen:
                value = self.construct_object(value_node, deep=True)
                self.duplicates.append(
                    f"{key} (lines {seen[key] + 1} and {key_node.start_mark.line + 1}): the last value, "
                    f"{value!r}, is kept"
                )
            seen[key] = key_node.start_mark.line
        return super().construct_mapping(node, deep=deep)


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _Loader.construct_mapping)


def read_peer_yaml_text(text: str, file: str = "<config>") -> tuple[object, list[str]]:
    """Parse ``text`` (alias expansion and depth bounded: ``grpo_trl.io.load_yaml``); returns the data and one line
    per repeated key. Raises ``yaml.YAMLError``, or ``ValueError`` for a bomb."""
    try:
        data, loader = load_yaml(text, file, _Loader)
    except GrpoTrlError as exc:
        raise ValueError(exc.problems[0].text) from None
    return data, loader.duplicates


def read_peer_yaml(path: str | Path) -> tuple[object, list[str]]:
    """Read a peer's config file (``grpo_trl.io``'s bounded reader). Raises ``ValueError`` or ``yaml.YAMLError``."""
    try:
        text = read_text(path, MAX_BYTES, "config file")
    except GrpoTrlError as exc:
        raise ValueError(exc.problems[0].text) from None
    return read_peer_yaml_text(text, str(path))


def _comment_text(text: Any) -> str:
    """``text`` safe for a YAML comment: one line, control characters escaped (YAML refuses them raw), redacted."""
    return one_line(" ".join(str(text).split()))


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
    return f"  # {_comment_text(note)}" if note else ""


def emit(recipe: dict, comments: dict[tuple, str], header: list[str]) -> str:
    """The recipe's YAML text: sections as blocks, each value on its own commented line."""
    lines = [f"# {_comment_text(h)}" if h else "#" for h in header]
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
