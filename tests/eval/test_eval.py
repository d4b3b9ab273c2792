"""``grpo-trl eval``: bad values and a missing eval split give one ``error:`` line; backends are interchangeable (the
endpoint backend replaying the transformers backend's completions through tests/fake_openai.py, a local fake of an
external OpenAI-compatible server, yields the same eval.json)."""

from __future__ import annotations

import json

import pytest

from grpo_trl.check import load_recipe
from grpo_trl.cli import main
from grpo_trl.eval import evaluate
from grpo_trl.eval.backends import render
from tests.fake_openai import FakeOpenAI

REWARDS = [{"name": "countdown"}, {"name": "xml_format", "args": {"tags": ["think", "answer"]}, "weight": 0.5}]


def _errors(capsys, argv) -> list[str]:
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return [line for line in err.splitlines() if line.startswith("error:")]


@pytest.mark.parametrize(
    "flags, key",
    [
        (["--n", "0"], "--n"),
        (["--n", "-3"], "--n"),
        (["--limit", "0"], "--limit"),
        (["--batch-size", "0"], "--batch-size"),
        (["--max-new-tokens", "0"], "--max-new-tokens"),
        (["--temperature", "-1"], "--temperature"),
        (["--temperature", "nan"], "--temperature"),
        (["--backend", "endpoint", "--model", "m"], "--base-url"),
        (["--backend", "endpoint", "--base-url", "http://127.0.0.1:1/v1"], "--model"),
        (["--backend", "endpoint", "--model", "m", "--base-url", "http://127.0.0.1:1/v1", "--api", "x"], "--api"),
    ],
)
def test_bad_values_are_one_error_line(capsys, make_recipe, flags, key):
    path = make_recipe()
    lines = _errors(capsys, ["eval", str(path), "--split", "train", *flags])
    assert len(lines) == 1 and lines[0].startswith(f"error: grpo-trl eval: {key}: ")


@pytest.mark.parametrize("model", ["/nonexistent/model-dir", "file", "empty-dir"])
def test_a_model_that_cannot_be_loaded_is_one_error_line(capsys, make_recipe, tmp_path, model):
    (tmp_path / "file").write_text("not a model")
    (tmp_path / "empty-dir").mkdir()
    path = tmp_path / model
    lines = _errors(capsys, ["eval", str(make_recipe()), "--split", "train", "--model", str(path)])
    assert len(lines) == 1 and "cannot load the tokenizer" in lines[0] and str(path) in lines[0], lines


def test_an_output_dir_that_cannot_be_made_is_one_error_line_before_generating(capsys, make_recipe, tmp_path):
    (tmp_path / "taken").write_text("a file")
    flags = ["--split", "train", "--n", "1", "--limit", "1", "--output-dir", str(tmp_path / "taken" / "eval")]
    assert main(["eval", str(make_recipe()), *flags]) == 1
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "--output-dir" in lines[0] and "generating" not in err, err


def test_several_bad_values_are_all_reported(capsys, make_recipe):
    lines = _errors(capsys, ["eval", str(make_recipe()), "--n", "0", "--limit", "-1", "--batch-size", "0"])
    assert [line.split(": ")[2] for line in lines] == ["--n", "--limit", "--batch-size"]


def test_no_eval_split_needs_an_explicit_split(capsys, make_recipe):
    lines = _errors(capsys, ["eval", str(make_recipe()), "--n", "1", "--limit", "1"])
    assert len(lines) == 1 and ": data: the recipe has no eval split" in lines[0] and "--split train" in lines[0]


@pytest.mark.slow
def test_eval_split_is_used_and_split_train_is_explicit(tmp_path, make_recipe):
    data = {"builder": "countdown", "source": "generate", "size": 40, "system_prompt": "none", "eval_size": 5}
    recipe = load_recipe(make_recipe(data=data, rewards=REWARDS))
    model = recipe.model["name"]
    report = evaluate(recipe, model=model, n=2, output_dir=str(tmp_path / "e"), max_new_tokens=4)
    assert report["prompts"] == 5 and report["split"] == "eval"
    report = evaluate(
        recipe, model=model, split="train", n=2, limit=7, output_dir=str(tmp_path / "t"), max_new_tokens=4
    )
    assert report["prompts"] == 7 and report["split"] == "train"


@pytest.mark.slow
def test_transformers_and_endpoint_score_identical_completions_identically(tmp_path, make_recipe):
    recipe = load_recipe(make_recipe(rewards=REWARDS))
    model = recipe.model["name"]
    common = {"split": "train", "n": 3, "limit": 5, "max_new_tokens": 12}
    local = evaluate(recipe, model=model, output_dir=str(tmp_path / "hf"), **common)
    rows = [json.loads(x) for x in (tmp_path / "hf" / "eval_completions.jsonl").read_text().splitlines()]

    from grpo_trl.models.load import load_tokenizer

    tokenizer = load_tokenizer(recipe.model, model, recipe.file, recipe.base_dir)
    replies: dict[tuple, list] = {}
    for row in rows:  # what a server would answer for each rendered prompt and sample (seed = i * n + j)
        key = (render(tokenizer, row["prompt"]), row["prompt_index"] * 3 + row["sample"])
        replies[key] = [(row["completion"], "stop" if row["length"] < 12 else "length", row["length"])]
    with FakeOpenAI(models=["served-tiny"], reply=lambda body: replies[body["prompt"], body["seed"]]) as server:
        # the endpoint backend renders prompts with the recipe's tokenizer from the recipe's model
        remote = evaluate(
            recipe,
            model="served-tiny",
            backend="endpoint",
            endpoint={"base_url": server.base_url, "max_concurrency": 4},
            output_dir=str(tmp_path / "ep"),
            **common,
        )
    posts = server.requests[1:]  # the first is the probe (GET /models)
    assert server.requests[0]["path"] == "/v1/models" and len(posts) == 15 and all(r["body"]["n"] == 1 for r in posts)
    same = {k: v for k, v in local.items() if k not in ("model", "backend", "output_dir")}
    assert same == {k: v for k, v in remote.items() if k not in ("model", "backend", "output_dir")}
    remote_rows = [json.loads(x) for x in (tmp_path / "ep" / "eval_completions.jsonl").read_text().splitlines()]
    assert remote_rows == rows
    assert set(local["pass@k"]) == {"1", "2", "3"} and local["generation_errors"] == 0


@pytest.mark.slow
def test_endpoint_failures_cost_only_their_prompts(tmp_path, make_recipe):
    recipe = load_recipe(make_recipe(rewards=REWARDS))
    with FakeOpenAI(
        models=["m"], script=["ok", "500", "malformed"], reply=lambda body: "<answer>1</answer>"
    ) as server:
        report = evaluate(
            recipe,
            model="m",
            backend="endpoint",
            split="train",
            n=2,
            limit=4,
            endpoint={"base_url": server.base_url, "max_concurrency": 1, "retries": 0},
            output_dir=str(tmp_path / "ep"),
        )
    assert report["generation_errors"] == 2 and report["prompts"] == 4
    assert "HTTP 500" in report["generation_error_examples"][0]
    assert "not OpenAI-compatible" in report["generation_error_examples"][1]
    rows = [json.loads(x) for x in (tmp_path / "ep" / "eval_completions.jsonl").read_text().splitlines()]
    assert [r["completion"] for r in rows] == [""] * 2 + ["<answer>1</answer>"] * 6
    assert [r["length"] for r in rows] == [0, 0] + [1] * 6


def test_unreachable_endpoint_or_wrong_model_is_one_error_line(capsys, make_recipe, tmp_path):
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    argv = ["eval", str(make_recipe()), "--split", "train", "--n", "1", "--limit", "2", "--backend", "endpoint"]
    argv += ["--model", "m", "--base-url", f"http://127.0.0.1:{port}/v1", "--retries", "0"]
    lines = _errors(capsys, [*argv, "--output-dir", str(tmp_path / "x")])
    assert len(lines) == 1 and lines[0].startswith("error: --backend endpoint: base_url: cannot reach")
    with FakeOpenAI(models=["tiny-served"]) as server:
        argv[-3] = server.base_url
        lines = _errors(capsys, [*argv, "--output-dir", str(tmp_path / "x")])
    assert lines == [
        f"error: --backend endpoint: model: model 'm' is not served at {server.base_url}; it serves: tiny-served"
    ]
    assert not (tmp_path / "x").exists()


MODE_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% if mode %}[{{ mode }}]{% endif %}{% endif %}"
)


@pytest.mark.parametrize("api", ["completions", "chat"])
def test_prompts_are_rendered_with_the_trainers_chat_template_kwargs(tmp_path, make_recipe, api):
    """``trainer.chat_template_kwargs`` (Qwen3's ``enable_thinking``...) shape the training prompt; eval renders the
    same one (completions API), or hands them to the server that renders it (chat API, vLLM's field)."""
    path = make_recipe(rewards=REWARDS, trainer={"chat_template_kwargs": {"mode": "terse"}})
    (path.parent / "mode.jinja").write_text(MODE_TEMPLATE)
    recipe = load_recipe(path, ["model.chat_template=mode.jinja"])
    with FakeOpenAI(models=["m"], reply=lambda body: "<answer>1</answer>") as server:
        evaluate(
            recipe,
            model="m",
            backend="endpoint",
            split="train",
            n=1,
            limit=3,
            endpoint={"base_url": server.base_url, "api": api},
            output_dir=str(tmp_path / "ep"),
        )
    posts = [r["body"] for r in server.requests[1:]]
    assert len(posts) == 3
    if api == "completions":
        assert all(body["prompt"].endswith("<|im_start|>assistant\n[terse]") for body in posts)
    else:
        assert all(body["chat_template_kwargs"] == {"mode": "terse"} for body in posts)


def test_no_secret_in_the_prompts_reaches_evals_files(make_recipe, tiny_model, tmp_path, capsys):
    """eval.json and eval_completions.jsonl hold every prompt: a token or a URL's password in the recipe's system
    prompt (any form the one redaction knows) is hidden in them, as in every file grpo-trl writes for people."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from tests.test_io import FORMS, SECRET_BODY

    @settings(max_examples=5, deadline=None, suppress_health_check=list(HealthCheck))
    @given(body=SECRET_BODY, form=st.sampled_from(sorted(FORMS)))
    def probe(body, form):
        data = {"builder": "countdown", "source": "generate", "size": 8, "system_prompt": f"{FORMS[form](body)} {{q}}"}
        path, out = make_recipe(data=data), tmp_path / f"out-{form}-{body}"
        argv = ["eval", str(path), "--split", "train", "--model", tiny_model, "--limit", "1", "--n", "1"]
        assert main([*argv, "--max-new-tokens", "2", "--output-dir", str(out)]) == 0
        texts = [(out / name).read_text() for name in ("eval.json", "eval_completions.jsonl")]
        assert "<redacted>" in texts[1] and all(body not in text for text in texts)

    probe()


def test_the_summary_is_a_few_aligned_lines():
    from grpo_trl.eval.run import format_summary

    report = {
        "model": "m", "backend": "transformers", "split": "eval", "prompts": 2, "n": 4, "pass@1": 0.5, "pass@4": 1.0,
        "reward_mean": 0.25, "rewards": {"acc": 0.5}, "output_dir": "out", "mean_completion_length": 12.0,
        "format_failure_rate": 0.0, "generation_errors": 0,
    }  # fmt: skip
    assert format_summary(report, 1.5).splitlines() == [
        "grpo-trl eval: m on split eval (transformers)",
        "  pass@1       0.500",
        "  pass@4       1.000",
        "  rows         2 prompts x 4 completions = 8",
        "  reward       0.250  (acc 0.500)",
        "  length       12 tokens; 0.0% without an <answer> block",
        "  time         1.5 s",
        "  results      out/eval.json, out/eval_completions.jsonl",
    ]


def test_vllm_backend_ends_one_engine_before_it_starts_the_next(monkeypatch):
    """``evaluate`` called again in one process (another model, another seed) gets its own vLLM engine, built after
    the last one is gone: each engine takes ``gpu_memory_utilization`` of the GPU, so two at once do not fit. vLLM
    is not installed here: a stand-in module records how many engines are alive when each is built."""
    import sys
    import types

    import trl.data_utils  # noqa: F401 - TRL looks for vLLM when first imported: before the stand-in

    from grpo_trl.eval.backends import Sampling, generate
    from grpo_trl.models.tiny import builtin_tokenizer

    built = []

    class Engine:
        alive = 0

        def __init__(self, model, tokenizer, seed, **options):
            built.append((model, seed, Engine.alive))
            Engine.alive += 1

        def __del__(self):
            Engine.alive -= 1

        def generate(self, prompts, params):
            one = types.SimpleNamespace(token_ids=[5, 6])
            return [types.SimpleNamespace(outputs=[one] * params.n) for _ in prompts]

    fake = types.ModuleType("vllm")
    fake.LLM, fake.SamplingParams = Engine, lambda **kw: types.SimpleNamespace(**kw)
    monkeypatch.setitem(sys.modules, "vllm", fake)
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "1")
    tokenizer = builtin_tokenizer("builtin:tiny")
    for model, seed in [("fake-a", 0), ("fake-a", 0), ("fake-a", 1), ("fake-b", 1), ("fake-b", 1)]:
        out = generate("vllm", model, tokenizer, ["1 + 1 ="], Sampling(n=2, seed=seed))
        assert len(out.texts[0]) == 2
    assert built == [("fake-a", 0, 0), ("fake-a", 1, 0), ("fake-b", 1, 0)]  # reused when the same; never two
