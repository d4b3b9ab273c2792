"""The recipe's JSON Schema (``grpo-trl schema``): pydantic's ``model_json_schema`` of the classes that validate
recipes, for editors (a first line ``# yaml-language-server: $schema=...``, as shipped recipes have)."""

from __future__ import annotations

import json
import warnings
from importlib.metadata import version
from pathlib import Path
from typing import Any

from pydantic import ConfigDict, Field, create_model

from grpo_trl.errors import GrpoTrlError
from grpo_trl.io import write
from grpo_trl.recipe import schema

# The packages whose releases change the schema's text (recorded in it as "x-written-with").
WRITTEN_WITH = ("pydantic", "transformers", "trl")


def _data_model() -> Any:
    """``data:`` for editors: the common options and every registered builder's options (first definition wins)."""
    from grpo_trl.data.options import builder_options_model
    from grpo_trl.data.registry import list_builders

    fields: dict[str, Any] = {}
    for name, info in schema.DataSection.model_fields.items():
        fields[name] = (info.annotation, info)
    for builder in list_builders():
        for name, info in builder_options_model(builder).model_fields.items():
            if name not in fields:
                fields[name] = (info.annotation | None, Field(None, description=f"option of builder {builder.name}"))
    return create_model("DataSection", __base__=schema.Section, __doc__=schema.DataSection.__doc__, **fields)


def recipe_json_schema() -> dict:
    """The JSON Schema (2020-12) of a recipe for the installed TRL and the registered builders."""
    import trl

    fields: dict[str, Any] = {
        "extends": (str | None, Field(None, description="a recipe this one builds on (path relative to this file)"))
    }
    for name in schema.SECTIONS:
        kind = _data_model() if name == "data" else schema.section_type(name)
        fields[name] = (kind | None, Field(None, description=schema.SECTION_HINTS.get(name) or None))
    model = create_model("GrpoTrlRecipe", __base__=schema.Section, __doc__="A grpo-trl recipe (YAML).", **fields)
    model.model_config = ConfigDict(**{**model.model_config, "title": "grpo-trl recipe"})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # defaults that JSON cannot hold are left out
        out = model.model_json_schema()
    out["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    out.pop("required", None)  # a recipe that `extends` another is partial: required sections are checked merged
    out["x-trl-version"] = trl.__version__
    out["x-written-with"] = {name: version(name) for name in WRITTEN_WITH}
    return out


def write_schema(path: str | None) -> str:
    """Write the schema to ``path`` (the writer replaces only a schema this command wrote); returns the text."""
    text = json.dumps(recipe_json_schema(), indent=1, sort_keys=True) + "\n"
    if path:
        if Path(path).is_dir():
            raise GrpoTrlError(f"cannot write {path!r} (a folder)", key="--output", fix="name a file")
        write(path, text, flag="--output", mine=_is_our_schema, parents=False)  # the one writer
    return text


def _is_our_schema(path: Path) -> bool:
    from grpo_trl.io import read_json_head

    data = read_json_head(path, 10_000_000)
    return isinstance(data, dict) and "x-trl-version" in data
