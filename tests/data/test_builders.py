"""Dataset builders on small files written here in the Hub datasets' schemas (no network), filters, mixtures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grpo_trl.check.validate import validate
from grpo_trl.data import DataError, build_dataset
from grpo_trl.data.countdown import generate_problems
from grpo_trl.data.options import SYSTEM_PROMPTS
from grpo_trl.rewards import get_reward

GSM8K_ROWS = [
    {
        "question": "Natalia sold clips to 48 of her friends in April, and then she sold half as many clips in May. "
        "How many clips did Natalia sell altogether in April and May?",
        "answer": "Natalia sold 48/2 = <<48/2=24>>24 clips in May.\n"
        "Natalia sold 48+24 = <<48+24=72>>72 clips.\n#### 72",
    },
    {
        "question": "Weng earns $12 an hour for babysitting. How much did she earn for 50 minutes?",
        "answer": "Weng earns 12/60 = $<<12/60=0.2>>0.2 per minute.\nShe earned 0.2 x 50 = $<<0.2*50=10>>10.\n#### 10",
    },
    {"question": "A big number question.", "answer": "It is large.\n#### 1,000"},
]


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture
def gsm8k_file(tmp_path):
    return write_jsonl(tmp_path / "gsm8k.jsonl", GSM8K_ROWS)


def test_gsm8k_builder(gsm8k_file):
    ds = build_dataset({"builder": "gsm8k", "path": str(gsm8k_file)}).train
    assert ds["solution"] == ["72", "10", "1000"]
    row = ds[0]
    assert row["prompt"][0] == {"role": "system", "content": SYSTEM_PROMPTS["xml"]}  # the tutorial's default
    assert row["prompt"][1]["role"] == "user" and row["prompt"][1]["content"].startswith("Natalia")
    assert "#### 72" in row["reasoning"]


def test_system_prompt_by_name_literal_and_none(gsm8k_file):
    base = {"builder": "gsm8k", "path": str(gsm8k_file)}
    assert build_dataset({**base, "system_prompt": "r1"}).train[0]["prompt"][0]["content"] == SYSTEM_PROMPTS["r1"]
    assert build_dataset({**base, "system_prompt": "Be brief."}).train[0]["prompt"][0]["content"] == "Be brief."
    assert [t["role"] for t in build_dataset({**base, "system_prompt": "none"}).train[0]["prompt"]] == ["user"]


def test_math_builder(tmp_path):
    import pandas as pd

    path = tmp_path / "math.parquet"
    pd.DataFrame(
        [
            {"problem": "What is 1/2 + 0?", "solution": "We get $\\boxed{\\frac{1}{2}}$."},
            {"problem": "Nested?", "solution": "So $\\boxed{\\sqrt{\\frac{a}{b}}}$ it is."},
        ]
    ).to_parquet(path)
    ds = build_dataset({"builder": "math", "path": str(path)}).train
    assert ds["solution"] == ["\\frac{1}{2}", "\\sqrt{\\frac{a}{b}}"]
    assert "boxed" in ds[0]["worked_solution"]


def test_countdown_builder_from_file_has_write_up_prompt(tmp_path):
    path = write_jsonl(tmp_path / "cd.jsonl", [{"nums": [58, 9, 78, 44], "target": 73}])
    ds = build_dataset({"builder": "countdown", "path": str(path)}).train
    user = ds[0]["prompt"][-1]["content"]
    assert "Using the numbers [58, 9, 78, 44], create an equation that equals 73." in user
    assert "<think> </think>" in user and "<answer> </answer>" in user
    assert ds[0]["nums"] == [58, 9, 78, 44] and ds[0]["target"] == 73


def test_generator_problems_are_solvable_and_seeded():
    rows = generate_problems(300, seed=3)
    assert rows == generate_problems(300, seed=3)
    assert rows != generate_problems(300, seed=4)
    assert {len(r["nums"]) for r in rows} == {3, 4}
    reward = get_reward("countdown")
    completions = [f"<answer>{r['reference_equation']} = {r['target']}</answer>" for r in rows]
    scores = reward(completions, nums=[r["nums"] for r in rows], target=[r["target"] for r in rows])
    assert scores == [1.0] * len(rows)


def test_generated_splits_hold_their_own_problems():
    """``eval_split: test`` on generated data must not evaluate on the training problems (it once did)."""
    base = {"builder": "countdown", "source": "generate", "size": 50, "system_prompt": "none"}
    train = build_dataset(base).train
    assert train[:] == build_dataset(base).train[:]  # train keeps its seed: runs stay reproducible
    held = build_dataset({**base, "eval_split": "test", "eval_size": 50}).eval
    assert len(held) == 50 and held[:] == build_dataset({**base, "split": "test"}).train[:]
    overlap = {(tuple(r["nums"]), r["target"]) for r in train} & {(tuple(r["nums"]), r["target"]) for r in held}
    assert len(overlap) <= 1


def test_environment_builder_gives_trls_placeholder_rows():
    """builder: environment is TRL's train_dataset=None: rows of one empty user turn, reset() supplies the prompt."""
    from grpo_trl.data import expected_size

    cfg = {"builder": "environment", "size": 5}
    ds = build_dataset(cfg).train
    assert ds.column_names == ["prompt"] and ds["prompt"] == [[{"role": "user", "content": ""}]] * 5
    assert expected_size(cfg) == (5, True) and expected_size({"builder": "environment"}) == (64, True)
    assert expected_size({"builder": "countdown", "source": "generate"}) == (1000, True)  # generated: its default size


def test_files_builder_csv_template_and_columns(tmp_path):
    path = tmp_path / "mine.csv"
    path.write_text("q,gold,topic\nWhat is 2+2?,4,arith\nWhat is 3*3?,9,arith\n")
    ds = build_dataset(
        {
            "builder": "files",
            "path": str(path),
            "question_column": "q",
            "columns": ["gold"],
            "user_template": "[{topic}] {q}",
            "system_prompt": "none",
        }
    ).train
    assert ds.column_names == ["gold", "prompt"]
    assert ds[0]["prompt"] == [{"role": "user", "content": "[arith] What is 2+2?"}]


def test_files_builder_relative_path(tmp_path):
    write_jsonl(tmp_path / "rel.jsonl", [{"question": "q", "solution": "1"}])
    ds = build_dataset({"builder": "files", "path": "rel.jsonl"}, base_dir=tmp_path).train
    assert ds["solution"] == ["1"]


@pytest.mark.parametrize(
    ("cfg", "match"),
    [
        ({"builder": "files", "path": "x.jsonl", "question_column": "question"}, "does not exist"),
        (
            {"builder": "files", "path": "{file}", "question_column": "prompt_text"},
            "missing column\\(s\\) prompt_text; the data has: question, solution",
        ),
        (
            {"builder": "files", "path": "{file}", "user_template": "{nope}"},
            "^data.user_template: .*missing column\\(s\\) nope;",
        ),
        ({"builder": "gsm8k", "path": "{file}"}, "missing column\\(s\\) answer"),
        ({"builder": "files", "path": "{file}", "max_prompt_tokens": 1}, "need the recipe's tokenizer"),
    ],
)
def test_clear_errors(tmp_path, cfg, match):
    file = write_jsonl(tmp_path / "f.jsonl", [{"question": "q", "solution": "1"}])
    cfg = {k: (str(file) if v == "{file}" else v) for k, v in cfg.items()}
    with pytest.raises(DataError, match=match):
        build_dataset(cfg, base_dir=tmp_path)


def test_unreachable_hub_dataset_says_how_to_use_a_local_file(monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(DataError, match="set data.path to a local JSONL"):
        build_dataset({"builder": "gsm8k", "source": "no-such-org/no-such-dataset-xyz"})


def test_shuffle_limit_and_eval_split(gsm8k_file):
    base = {"builder": "countdown", "source": "generate", "size": 40}
    a = build_dataset({**base, "shuffle": True, "seed": 1, "limit": 10}).train
    b = build_dataset({**base, "shuffle": True, "seed": 1, "limit": 10}).train
    c = build_dataset({**base, "limit": 10}).train
    assert len(a) == 10 and a["target"] == b["target"] and a["target"] != c["target"]
    result = build_dataset({**base, "eval_size": 8})
    assert (len(result.train), len(result.eval)) == (32, 8)
    held = build_dataset({"builder": "gsm8k", "path": str(gsm8k_file), "eval_split": "test", "eval_size": 2})
    assert len(held.eval) == 2


def test_token_filters_with_the_tiny_tokenizer(gsm8k_file, tiny_model):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model)
    base = {"builder": "gsm8k", "path": str(gsm8k_file), "system_prompt": "none"}
    lengths = []
    for row in build_dataset(base).train:
        ids = tok.apply_chat_template(row["prompt"], tokenize=True, add_generation_prompt=True)
        lengths.append(len(ids["input_ids"] if hasattr(ids, "keys") else ids))
    limit = sorted(lengths)[1]  # keeps the two shortest prompts
    result = build_dataset({**base, "max_prompt_tokens": limit}, tokenizer=tok)
    assert len(result.train) == sum(n <= limit for n in lengths) == 2
    assert result.dropped["max_prompt_tokens"] == 1
    sol_lengths = {s: len(tok.encode(s, add_special_tokens=False)) for s in ["72", "10", "1000"]}
    limit = sol_lengths["72"]
    result = build_dataset({**base, "max_solution_tokens": limit}, tokenizer=tok)
    kept = [s for s in ["72", "10", "1000"] if sol_lengths[s] <= limit]
    assert result.train["solution"] == kept and result.dropped["max_solution_tokens"] == 3 - len(kept) >= 1
    with pytest.raises(DataError, match="empty after filtering"):
        build_dataset({**base, "max_prompt_tokens": 1}, tokenizer=tok)


def test_weighted_mixture_is_seeded_and_keeps_columns(gsm8k_file):
    cfg = {
        "mixture": [
            {"builder": "countdown", "source": "generate", "size": 50, "weight": 3},
            {"builder": "gsm8k", "path": str(gsm8k_file), "weight": 1},
        ],
        "size": 12,
        "seed": 5,
    }
    a, b = build_dataset(cfg).train, build_dataset(cfg).train
    assert len(a) == 12 and a["target"] == b["target"]
    from_gsm8k = [s is not None for s in a["solution"]]
    assert sum(from_gsm8k) == 3  # weight 1 of 4
    assert {"nums", "target", "solution", "prompt"} <= set(a.column_names)
    with pytest.raises(DataError, match="has 3 rows, the mixture asks for 6"):
        build_dataset({**cfg, "size": 24})


@pytest.mark.parametrize(
    ("extra", "key"),
    [
        ({"limit": 0}, "data.limit"),  # the schema's bound
        ({"sise": 8}, "data.sise"),  # not an option of the builder
        ({"size": "8"}, "data.size"),  # the builder's option, typed from its signature
        ({"weight": 2.0}, "data.weight"),  # a share of a mixture part, not of a single dataset
        ({"system_prompt": "r2"}, "data.system_prompt"),
    ],
)
def test_check_and_build_refuse_a_data_section_alike(extra, key):
    from grpo_trl.recipe import Recipe

    data = {"builder": "countdown", "source": "generate", "size": 8, **extra}
    recipe = Recipe({"model": {"name": "builtin:tiny"}, "data": data, "rewards": ["countdown"]})
    assert [p.key for p in validate(recipe)] == [key]
    with pytest.raises(DataError, match=f"^{key}: "):
        build_dataset(data)


def test_a_builder_declares_its_path_a_local_copy(tmp_path, monkeypatch):
    """Counting a ``path:`` file's rows, and skipping the sample row without one, follow what the builder declares."""
    from datasets import Dataset

    from grpo_trl.check.ready import first_prompt
    from grpo_trl.data import registry
    from grpo_trl.data.shape import expected_size
    from grpo_trl.recipe import Recipe

    monkeypatch.setattr(registry.BUILDERS, "_entries", dict(registry.BUILDERS._entries))  # for this test only

    def rows(split: str = "train", *, path: str | None = None, base_dir: Path | None = None):
        return Dataset.from_dict({"user": ["q1", "q2"]})

    registry.register_builder("test_copy", local_copy=True)(rows)
    registry.register_builder("test_own")(rows)
    file = write_jsonl(tmp_path / "rows.jsonl", [{"q": i} for i in range(3)])
    assert expected_size({"builder": "test_copy", "path": str(file)}) == (3, True)
    assert expected_size({"builder": "test_own", "path": str(file)}) == (None, False)

    def sample(builder: str) -> list | None:
        data = {"builder": builder, "system_prompt": "none"}
        return first_prompt(Recipe({"model": {"name": "builtin:tiny"}, "data": data, "rewards": ["countdown"]}))

    assert sample("test_copy") is None  # would download: check builds nothing
    assert sample("test_own") == [{"role": "user", "content": "q1"}]


PART = {"builder": "countdown", "source": "generate", "size": 8}


@pytest.mark.parametrize("size", ["8", 0, -1, 1.5, True])
def test_check_and_build_refuse_a_bad_mixture_size_alike(size):
    from grpo_trl.recipe import Recipe

    data = {"mixture": [PART], "size": size}
    recipe = Recipe({"model": {"name": "builtin:tiny"}, "data": data, "rewards": ["countdown"]})
    assert [p.key for p in validate(recipe)] == ["data.size"]
    with pytest.raises(DataError, match="^data.size: "):
        build_dataset(data)


def test_mixture_weights_whose_sum_overflows_keep_their_shares():
    data = {"mixture": [{**PART, "weight": 1e308}, {**PART, "weight": 1e308}], "size": 4}
    assert len(build_dataset(data).train) == 4


def test_a_mixture_of_text_and_conversation_prompts_is_one_data_error(tmp_path):
    """A hub part of plain-text prompts beside a conversational part: one error naming data.mixture, not a crash."""
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps({"prompt": f"Say {i}", "solution": str(i)}) + "\n" for i in range(8)))
    data = {"mixture": [PART, {"builder": "hub", "path": str(rows)}], "size": 4}
    with pytest.raises(DataError, match="^data.mixture: the parts cannot be joined: .*prompt_format: conversational"):
        build_dataset(data)
    data["mixture"][1]["prompt_format"] = "conversational"
    assert len(build_dataset(data).train) == 4


@pytest.mark.parametrize(
    "values, column, fix",
    [
        (([{"prompt": "a", "solution": "1"}], [{"prompt": "b", "solution": 2}]), "solution", "one type in every part"),
        (
            ([{"prompt": "a", "solution": "1", "meta": 1}], [{"prompt": "b", "solution": "2", "meta": {"k": 1}}]),
            "meta",
            "one type in every part",
        ),
        (([{"prompt": "a"}], [{"prompt": [{"role": "user", "content": "b"}]}]), "prompt", "prompt_format"),
    ],
)
def test_a_mixture_error_names_the_column_the_parts_type_differently(tmp_path, values, column, fix):
    """The column and both types, and a fix for that column (the conversational hint was given for every column)."""
    parts = []
    for i, rows in enumerate(values):
        path = tmp_path / f"part{i}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows * 4))
        parts.append({"builder": "hub", "path": str(path), "columns": [c for c in rows[0] if c != "prompt"]})
    with pytest.raises(DataError) as info:
        build_dataset({"mixture": parts, "size": 4})
    text = str(info.value)
    assert f"part 1 gives column {column!r} as " in text and ", part 2 as " in text and fix in text, text
    assert (fix == "prompt_format") == ("prompt_format" in text), text


def test_check_refuses_the_mixture_train_cannot_join(tmp_path, capsys):
    """``check`` builds each local part's first row as train does, and joins them as train will: text prompts beside
    conversations (or a system prompt beside a standard-format part) fail in check, not at train's start."""
    from grpo_trl.cli import main

    for name in ("a", "b"):
        (tmp_path / f"{name}.jsonl").write_text('{"prompt": "1+1?", "solution": "2"}\n' * 4)
    recipe = tmp_path / "recipe.yaml"
    a, b = {"builder": "hub", "path": "a.jsonl"}, {"builder": "hub", "path": "b.jsonl"}
    for data, expected in (
        ({"mixture": [a, b]}, None),
        ({"mixture": [a, b], "system_prompt": "Be brief."}, None),
        ({"mixture": [a, {**b, "prompt_format": "conversational"}]}, "prompt"),
        ({"mixture": [{**a, "prompt_format": "standard"}], "system_prompt": "Be brief."}, "system"),
    ):
        recipe.write_text(json.dumps({"model": {"name": "builtin:tiny"}, "data": data, "rewards": ["gsm8k"]}))
        code = main(["check", str(recipe)])
        err = capsys.readouterr().err
        assert code == (0 if expected is None else 1), err
        if expected == "prompt":
            assert "part 1 gives column 'prompt' as" in err and "prompt_format: conversational" in err, err
        if expected == "system":
            assert "data.system_prompt: a standard-format" in err, err


_PART = st.fixed_dictionaries(
    {
        "prompt": st.sampled_from(["1+1?", [{"role": "user", "content": "1+1?"}]]),
        "solution": st.sampled_from(["2", 2, None]),
    },
    optional={"prompt_format": st.sampled_from(["auto", "standard", "conversational"])},
)


@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
@given(parts=st.lists(_PART, min_size=2, max_size=3), system=st.sampled_from([None, "Be brief."]))
def test_check_and_train_agree_on_a_mixture_of_local_files(tmp_path_factory, parts, system):
    """Whatever the parts' prompt kinds, solution types and formats: check's columns raise iff the build does."""
    from grpo_trl.data.shape import dataset_columns

    folder = tmp_path_factory.mktemp("mix")
    mixture = []
    for i, part in enumerate(parts):
        row = {"prompt": part["prompt"], "solution": part["solution"]}
        (folder / f"{i}.jsonl").write_text(json.dumps(row) + "\n" + json.dumps(row) + "\n")
        options = {k: v for k, v in part.items() if k == "prompt_format"}
        mixture.append({"builder": "hub", "path": f"{i}.jsonl", **options})
    data = {"mixture": mixture, "size": 2, **({"system_prompt": system} if system else {})}
    outcomes = []
    for step in (lambda: dataset_columns(data, folder), lambda: build_dataset(data, base_dir=folder)):
        try:
            step()
            outcomes.append("ok")
        except DataError as exc:
            outcomes.append(str(exc).split(":")[0])
    assert outcomes[0] == outcomes[1], outcomes


@settings(max_examples=25, deadline=None)
@given(
    counts=st.tuples(st.integers(-5, 10**24), st.integers(-5, 10**24)),
    max_number=st.one_of(st.integers(1, 99), st.just(10**30)),
)
def test_countdown_generation_of_any_size_ends_in_rows_or_one_error(counts, max_number):
    """Out-of-range counts (were: a list of 10**23 numbers, GBs before any check) or targets out of reach (was: an
    endless redraw) are one ``DataError``; up to 8 numbers of at most 99 generate ``size`` problems. (Many numbers,
    e.g. 26 of 1..26, mostly reach targets over 999: that is the max_number error, not a failure to end.)"""
    lo, hi = counts
    try:
        rows = generate_problems(20, 0, lo, hi, max_number)
    except DataError as exc:
        in_range = 2 <= lo <= hi <= 32
        assert ("data.max_number" if in_range else "min_numbers <= max_numbers <= 32") in str(exc)
        assert max_number > 99 or hi > 8 or not in_range
    else:
        assert len(rows) == 20 and 2 <= lo <= hi <= 32


def test_countdown_generation_is_unchanged_by_the_bounds():
    """The bounded loop draws exactly as before: the demo's problems stay the same."""
    import hashlib

    digest = hashlib.sha256(json.dumps(generate_problems(500, 0)).encode()).hexdigest()
    assert digest == "d2c7e5c28f8a9dd559631cb2dfc845e7f2e0b4c559c7ae81eabd697fa648d367"
