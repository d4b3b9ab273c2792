"""``grpo-trl import``: a ``trl grpo --config`` YAML or an open-r1 recipe -> a grpo-trl recipe with a comment on each
translated line; a repeated key keeps its last value (as PyYAML and TRL do) and is reported. Model keys: ``rules``;
data and rewards: ``sections``; TRL's changed defaults and the trainer fields: here."""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

import yaml

from grpo_trl import tables as T
from grpo_trl.errors import GrpoTrlError, Problem, RecipeError, one_line, redact
from grpo_trl.importer import sections
from grpo_trl.importer.rules import KEYS, Imported, Translation, carry, installed_fields, model
from grpo_trl.io import load_yaml, read_text
from grpo_trl.recipe.load import YamlLoader, yaml_problem

__all__ = ["Imported", "import_config", "import_text"]


def detect_flavour(data: dict) -> str:
    """``open-r1`` when the config uses open-r1's own keys or reward names, else ``trl``."""
    from trl import GRPOConfig

    trl_fields = installed_fields(GRPOConfig)  # num_completions_to_print: a TRL field too, in some versions
    only = {*KEYS["open_r1_only"], *T.REWARD_SETTINGS, *T.CODE_PROVIDER_KEYS}
    if any(k in only and k not in trl_fields for k in data):
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
    t = Translation(data, file, flavour, baseline, out_dir)
    for step in (model, sections.dataset, sections.rewards, old_defaults, rest):
        step(t)
    named = {k.split(".")[0] for k, _ in t.out.unmapped}  # a null is named by its warning (``trainer.rest``)
    named |= {line.split(":")[0] for line in t.out.changed_defaults + t.out.warnings}
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
    unmapped = [f"{key}: {why}" for key, why in imported.unmapped]
    for title, lines in ("TRL defaults that changed since:", imported.changed_defaults), ("Not mapped:", unmapped), (
        "Warnings:", imported.warnings):  # fmt: skip
        head += ["", title, *(f"  {line}" for line in lines)] if lines else []
    return head + [""]


def _import(read, source: str, **options) -> Imported:
    try:
        data, loader = load_yaml(read(), source, YamlLoader)
    except OSError as exc:
        raise RecipeError([Problem(source, "-", f"cannot read the config: {exc.strerror or exc}")]) from exc
    except (GrpoTrlError, yaml.YAMLError) as exc:  # the recipe's one YAML formatter: no source line quoted
        why = exc.problems[0].text if isinstance(exc, GrpoTrlError) else yaml_problem(exc)[0]
        raise RecipeError([Problem(source, "-", f"not a readable YAML config: {why}")]) from None
    imported = translate(data, file=source, **options)
    imported.warnings[:0] = [
        f"repeated key {key} (lines {first} and {line}): the last value, "
        f"{redact({key: loader.construct_object(value, True)})[key]!r}, is kept"
        for key, first, line, value in loader.duplicates
    ]
    text = "\n".join([f"# {_comment_text(h)}" if h else "#" for h in _header(source, imported)])
    imported.text = text + "\n" + "\n".join(_block(imported.recipe, (), imported.comments)) + "\n"
    imported.warnings = [
        one_line(w) for w in imported.warnings + [f"{k}: not mapped: {w}" for k, w in imported.unmapped]
    ]
    return imported


def import_text(text: str, source: str = "<config>", **options) -> Imported:
    """Translate config text (see ``import_config``)."""
    return _import(lambda: text, source, **options)


def import_config(path: str | Path, *, flavour: str | None = None, trl_version: str | None = None,
                  out_dir: str | Path | None = None) -> Imported:  # fmt: skip
    """Read and translate a peer config. ``RecipeError`` (one ``Problem`` per line) when no recipe can be made."""
    out = Path(out_dir) if out_dir is not None else Path(path).resolve().parent
    read = lambda: read_text(path, 2_000_000, "config file")  # noqa: E731 (a config, not a dataset)
    return _import(read, str(path), flavour=flavour, trl_version=trl_version, out_dir=out)


def _comment_text(text: Any) -> str:
    """``text`` safe for a YAML comment: one line, control characters escaped (YAML refuses them raw), redacted."""
    return one_line(" ".join(str(text).split()))


def flow(value: Any) -> str:
    """``value`` as one line of YAML (strings with line breaks or unusual characters double-quoted, escaped)."""
    style = '"' if isinstance(value, str) and not (value.isprintable() and value.isascii()) else None
    out = yaml.safe_dump(value, default_flow_style=True, default_style=style, width=float("inf"), sort_keys=False)
    return out.strip().removesuffix("\n...")


def _block(node: dict | list, path: tuple, comments: dict[tuple, str]) -> list[str]:
    """YAML lines: sections, their mappings and lists of mappings nest; the rest is one line each, with its comment."""
    lines, pad = [], "  " * len(path)
    for key, value in node.items() if isinstance(node, dict) else enumerate(node):
        note = f"  # {_comment_text(comments[(*path, key)])}" if comments.get((*path, key)) else ""
        lead = f"{pad}{flow(key)}:" if isinstance(node, dict) else f"{pad}-"
        nest = value and isinstance(node, dict) and isinstance(value, (dict, list)) and len(path) < 2
        if nest and path and isinstance(value, list) and not all(isinstance(x, dict) for x in value):
            nest = False
        lines += [lead + note, *_block(value, (*path, key), comments)] if nest else [f"{lead} {flow(value)}{note}"]
    return lines


def old_defaults(t: Translation) -> None:
    """TRL defaults changed since the config's TRL: the old value is written (the run stays the same)."""
    base, trainer = t.out.baseline, t.out.recipe.get("trainer", {})
    for name in T.DEFAULT_HISTORY:
        old, now = T.old_default(name, base), t.grpo.get(name)
        if name not in t.grpo or old == now:
            continue
        what = f"{name}: TRL {base} default {old!r}, today {now!r} ({T.DEFAULT_NOTES[name]})"
        if name in t.data or name in trainer:
            t.out.changed_defaults.append(what + " - set in the config, kept")
        elif not (name == "vllm_mode" and not t.data.get("use_vllm")) and not (
            name == "use_bias_correction_kl" and not t.data.get("beta", T.old_default("beta", base))
        ):  # vllm_mode without vLLM, the KL estimator without a KL term: nothing changes
            t.out.changed_defaults.append(what + " - the old value is written")
            t.put(("trainer", name), old, f"TRL {base} default (today {now!r}), kept: the run stays the same")
    if "max_prompt_length" in t.grpo:  # then: removed from TRL, the old default or the config's value
        return
    source = "max_prompt_length" if "max_prompt_length" in t.data else f"TRL {base} default max_prompt_length"
    value = t.take("max_prompt_length", T.old_default("max_prompt_length", base, T.MAX_PROMPT_LENGTH_HISTORY))
    if value is None or not t.check("max_prompt_length", value, "positive_int"):
        return
    if "mixture" in t.out.recipe.get("data", {}):
        t.out.unmapped.append(("max_prompt_length", "set data.mixture[*].max_prompt_tokens per part"))
    else:
        note = f"{source} {value}: TRL truncated longer prompts, grpo-trl drops those rows (and reports how many)"
        t.put(("data", "max_prompt_tokens"), value, note)
        t.out.changed_defaults.append("max_prompt_length: removed from TRL (prompts are no longer truncated)")


def rest(t: Translation) -> None:
    """Every key not placed yet: launch keys, renamed and removed fields, ``trl.GRPOConfig`` fields."""
    carry(t, "launch")
    for key, value in t.data.items():
        if key in t.done:
            continue
        t.done.add(key)
        new = T.RENAMED_FIELDS.get(key)
        if value is None:
            t.out.warnings.append(f"{key}: null, left at grpo-trl's / TRL's default")
        elif key in t.grpo:
            t.put(("trainer", key), value, None)
        elif key == "warmup_ratio" and "warmup_steps" in t.grpo:
            if t.data.get("warmup_steps"):
                t.unmapped(key, "warmup_steps is set too, and took precedence in transformers 4")
            else:
                t.put(("trainer", "warmup_steps"), value, "warmup_ratio (transformers 5: a float < 1 is a ratio)")
        elif new in t.grpo:
            t.put(("trainer", new), value, f"{key} (renamed)")
        elif key == "use_liger_loss" and not value:
            t.out.changed_defaults.append("use_liger_loss: false - nothing to set (removed from TRL)")
        elif key == "env" and isinstance(value, dict):
            names = ", ".join(f"{k}={v}" for k, v in value.items())
            t.unmapped(key, f"environment variables: export {names} before running")
        elif key in T.NOT_MAPPED:
            t.unmapped(key, T.NOT_MAPPED[key])
        else:
            close = difflib.get_close_matches(str(key), list(t.grpo), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            t.unmapped(str(key), f"not a field of ScriptArguments, ModelConfig or the installed trl.GRPOConfig{hint}")
