"""``data.streaming``: the training set as a ``datasets.IterableDataset`` (TRL's ``test_train_with_iterable_dataset``),
read as training consumes it: ``check`` requires ``trainer.max_steps`` and refuses the options that need every row,
the token filters keep what they keep in memory (applied batch by batch), and a resumed run continues where the
stream stopped (transformers skips the batches already trained)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from grpo_trl.check import load_recipe
from grpo_trl.data import build_dataset
from grpo_trl.data.build import STREAM_REFUSES
from grpo_trl.recipe import RecipeError


def _rows(path: Path, n: int, start: int = 0) -> str:
    with path.open("a") as fh:
        fh.writelines(
            json.dumps({"prompt": f"Count to {i} " + "and on " * (i % 5), "n": i}) + "\n"
            for i in range(start, start + n)
        )
    return str(path)


def _recipe(tmp_path: Path, model: str, data: dict, **trainer) -> str:
    base = {"output_dir": str(tmp_path / "out"), "per_device_train_batch_size": 3, "num_generations": 3}
    base |= {"max_completion_length": 8, "logging_steps": 1, "use_cpu": True, "bf16": False, "report_to": "none"}
    base |= {"learning_rate": 0.1, "seed": 3}
    recipe = {
        "model": {"name": model},
        "data": data,
        "rewards": [{"name": "tests.trl_cases.rewards:records_rows"}],
        "trainer": {**base, **trainer},
    }
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "r.yaml"
    path.write_text(yaml.safe_dump(recipe))
    return str(path)


@pytest.mark.parametrize("max_steps", [None, -1, 0])
def test_check_requires_max_steps_naming_the_key(tmp_path, tiny_model, max_steps):
    data = {"builder": "hub", "path": _rows(tmp_path / "rows.jsonl", 6), "streaming": True}
    trainer = {} if max_steps is None else {"max_steps": max_steps}
    with pytest.raises(RecipeError) as err:
        load_recipe(_recipe(tmp_path, tiny_model, data, **trainer))
    (problem,) = err.value.problems
    assert problem.key == "trainer.max_steps" and "data.streaming" in problem.message
    load_recipe(_recipe(tmp_path, tiny_model, data, max_steps=2))  # with it: fine


@pytest.mark.parametrize("key", STREAM_REFUSES)
def test_check_refuses_the_options_that_need_every_row(tmp_path, tiny_model, key):
    values = {"mixture": None, "eval_size": 2, "pass_rate": {"file": "x.jsonl"}, "sampler": {}, "dynamic_sampling": {}}
    data = {"builder": "hub", "path": _rows(tmp_path / "rows.jsonl", 6), "streaming": True, key: values[key]}
    if key == "mixture":
        data = {"streaming": True, "mixture": [{"builder": "hub", "path": str(tmp_path / "rows.jsonl")}]}
    with pytest.raises(RecipeError) as err:
        load_recipe(_recipe(tmp_path, tiny_model, data, max_steps=2))
    assert f"data.{key}" in [p.key for p in err.value.problems]


def test_the_stream_is_read_as_it_is_consumed(tmp_path):
    path = _rows(tmp_path / "rows.jsonl", 4)
    streamed = build_dataset({"builder": "hub", "path": path, "streaming": True}).train
    assert not hasattr(streamed, "__len__")
    _rows(Path(path), 3, start=4)  # rows written after the dataset was built are read: nothing was read before
    assert [r["n"] for r in streamed] == list(range(7))


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    words=st.lists(st.integers(0, 30), min_size=1, max_size=25),
    bound=st.integers(4, 40),
    limit=st.none() | st.integers(1, 10),
    shuffle=st.booleans(),
)
@example(words=[30], bound=4, limit=None, shuffle=False)  # every row dropped
def test_token_filters_keep_the_rows_they_keep_in_memory(tmp_path_factory, tiny_model, words, bound, limit, shuffle):
    from grpo_trl.models.load import load_tokenizer

    tokenizer = load_tokenizer({"name": tiny_model}, tiny_model)
    folder = tmp_path_factory.mktemp("stream")
    rows = [{"prompt": [{"role": "user", "content": "word " * w}], "n": i} for i, w in enumerate(words)]
    (folder / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    cfg = {"builder": "hub", "path": str(folder / "rows.jsonl"), "max_prompt_tokens": bound, "limit": limit}
    in_memory, streamed = (_kept(c, tokenizer) for c in (cfg, {**cfg, "streaming": True}))
    assert streamed == in_memory  # the same rows, or the same refusal when the filters drop every row


def _kept(cfg: dict, tokenizer) -> list[int] | str:
    """The rows kept, or the refusal: a stream whose filters drop every row is refused as the list is (check and
    train build it; it would otherwise reach TRL empty and fail there)."""
    from grpo_trl.errors import DataError

    try:
        return [r["n"] for r in build_dataset(cfg, tokenizer=tokenizer).train]
    except DataError as exc:
        assert "empty after filtering" in str(exc)
        return "refused"


def test_a_resumed_streamed_run_continues_where_the_stream_stopped(tmp_path, tiny_model, monkeypatch):
    """transformers re-reads the stream from its start on resume and skips the batches already trained, so steps 3-4
    of a run stopped at step 2 score the rows that steps 3-4 of a run never stopped score."""
    import grpo_trl

    path = _rows(tmp_path / "rows.jsonl", 30)
    data = {"builder": "hub", "path": path, "streaming": True}
    seen = {}
    for name, stops in (("whole", [4]), ("parts", [2, 4])):
        monkeypatch.setenv("GRPO_TRL_SEEN", str(tmp_path / f"{name}.jsonl"))
        recipe = _recipe(tmp_path / name, tiny_model, data, max_steps=stops[0], save_steps=2)
        for i, stop in enumerate(stops):
            grpo_trl.train(recipe, [f"trainer.max_steps={stop}"], resume=i > 0)
        seen[name] = [json.loads(line) for line in (tmp_path / f"{name}.jsonl").read_text().splitlines()]
    assert len(seen["whole"]) == len(seen["parts"]) == 4  # one scoring per step, none repeated on resume
    assert seen["parts"] == seen["whole"]  # the same rows at every step, the resumed steps included
    assert len({n for batch in seen["whole"] for n in batch}) == 4  # 4 steps x 1 prompt (x3 generations)
