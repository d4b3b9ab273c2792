"""`grpo-trl schema`: the JSON Schema editors read. Every shipped recipe names it on its first line and validates
against it; the committed file is what the locked versions (requirements.lock) produce."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from grpo_trl.cli import main as cli_main

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "recipes" / "grpo-trl.schema.json"
SHIPPED = sorted(p for p in (ROOT / "recipes").rglob("*.yaml") if "accelerate" not in p.parts)


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("schema") / "schema.json"
    assert cli_main(["schema", "-o", str(out)]) == 0
    return json.loads(out.read_text())


@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_shipped_recipe_names_and_passes_the_schema(path, written):
    first = path.read_text().splitlines()[0]
    assert first.startswith("# yaml-language-server: $schema="), first
    assert (path.parent / first.split("=", 1)[1]).resolve() == SCHEMA
    jsonschema.validate(yaml.safe_load(path.read_text()), written)


def test_schema_rejects_what_check_rejects(written):
    good = yaml.safe_load(SHIPPED[0].read_text())
    for bad in (
        {**good, "trainer": {"learning_rat": 1e-6}},
        {**good, "trainer": {"num_generations": "eight"}},
        {**good, "model": {"name": "x", "dtype": "bf16"}},
        {**good, "rewardz": []},
        {**good, "rewards": [{"name": "accuracy", "wieght": 1}]},
    ):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, written)


# The parts of the schema that TRL and transformers write (GRPOConfig's fields, help texts, defaults).
FROM_TRL = ("TrainerSection", "GenerationSection", "AsyncGrpoSection")  # typed from the installed TRL


def _own_part(schema: dict) -> dict:
    """The schema without what TRL/transformers write and without the version stamps: grpo-trl's own sections."""
    skip = ("x-trl-version", "x-written-with")
    return {
        **{k: v for k, v in schema.items() if k not in skip},
        "$defs": {k: v for k, v in schema["$defs"].items() if k not in FROM_TRL},
    }


def test_committed_schema_is_current(written):
    """Under the versions the file was written with (the lock, `make install`) it is exactly what `grpo-trl schema`
    writes; under others (`make test-trl-oldest`, `make test-newest`) TRL's parts may differ, grpo-trl's may not."""
    committed = json.loads(SCHEMA.read_text())
    fix = "run: grpo-trl schema -o recipes/grpo-trl.schema.json (in the locked .venv: make install)"
    assert set(committed["x-written-with"]) == set(written["x-written-with"]), fix
    if committed["x-written-with"] == written["x-written-with"]:
        assert committed == written, fix
    else:
        assert _own_part(committed) == _own_part(written), fix
        assert set(FROM_TRL) <= set(written["$defs"]) and written["$defs"]["TrainerSection"]["properties"]
