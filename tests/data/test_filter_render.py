"""The token filter counts the prompt GRPOTrainer feeds the model: the reference is TRL's own
``GRPOTrainer._tokenize_prompts`` (tools, training template swap, ``chat_template_kwargs``, standard string prompts
with special tokens), and ``token_lengths`` equals ``len(tokenizer(text)["input_ids"])`` on every kind of text."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grpo_trl.data.filters import filter_by_tokens
from grpo_trl.data.render import Rendering
from grpo_trl.data.token_count import _forwards_to_backend, token_lengths
from grpo_trl.models.chat_templates import resolve_template


@pytest.fixture
def tok(tiny_model):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model)


def get_weather(city: str) -> str:
    """Get the weather of a city.

    Args:
        city: The city's name, as it is written on a map.
    """
    return "sunny"


def convert(amount: float, currency: str = "EUR") -> str:
    """Convert an amount of money to another currency, at today's rate.

    Args:
        amount: How much money.
        currency: The currency to convert to.
    """
    return str(amount)


SPECIAL = ["<|im_start|>", "<|im_end|>", "<think>", "</think>", "<|endoftext|>", "\n", " ", "é", "日本", "🙂", "\t\t"]
texts_st = st.lists(
    st.one_of(
        st.sampled_from(SPECIAL), st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=20)
    ),
    max_size=12,
).map("".join)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(texts_st, max_size=20), special=st.booleans())
def test_token_lengths_equal_the_tokenizer_call(tok, texts, special):
    assert _forwards_to_backend(tok)
    want = [len(ids) for ids in tok(texts, add_special_tokens=special)["input_ids"]] if texts else []
    assert token_lengths(tok, texts, special) == want
    assert token_lengths(tok, texts + texts, special) == want + want  # each distinct text counted once, reused


def test_settings_transformers_would_change_fall_back_to_its_call(tok):
    texts = ["<|im_start|>user\nhi<|im_end|>", "a b c d e f g h i j k l m n o p"]
    want = [len(ids) for ids in tok(texts, add_special_tokens=False)["input_ids"]]
    tok._tokenizer.enable_truncation(3)  # transformers resets it on every call; the Rust call would not
    assert not _forwards_to_backend(tok) and token_lengths(tok, texts) == want
    tok._tokenizer.no_truncation()
    tok.split_special_tokens = True  # special-token strings in the text become ordinary text
    assert not _forwards_to_backend(tok)  # until transformers' own call sets the backend to match
    got = token_lengths(tok, texts)
    assert got == [len(ids) for ids in tok(texts, add_special_tokens=False)["input_ids"]] and got != want


def _trl_lengths(model, tok, prompts, tools, chat_template_kwargs):
    """Prompt lengths as GRPOTrainer tokenizes them (its own method, on a real trainer)."""
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    args = GRPOConfig(
        output_dir="/tmp/unused-grpo-trl-render",
        use_cpu=True,
        bf16=False,
        per_device_train_batch_size=2,
        num_generations=2,
        report_to=[],
        chat_template_kwargs=chat_template_kwargs,
    )
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=lambda completions, **kw: [0.0] * len(completions),
        args=args,
        train_dataset=Dataset.from_list([{"prompt": p} for p in prompts]),
        processing_class=tok,
        tools=tools or None,
    )
    return [len(ids) for ids in trainer._tokenize_prompts(prompts)[0]], args.chat_template_kwargs


@pytest.mark.parametrize(
    ("template", "tools", "kwargs"),
    [
        (None, [], None),
        ("trl:qwen2_5", [get_weather, convert], None),  # not prefix-preserving: TRL swaps in its training template
        ("trl:qwen3", [get_weather], {"enable_thinking": False}),
        ("trl:qwen3", [], {"enable_thinking": False}),
    ],
)
def test_filter_keeps_the_rows_trl_tokenizes_within_bounds(
    tiny_model, tok, tmp_path, monkeypatch, template, tools, kwargs
):
    from datasets import Dataset

    monkeypatch.setenv("GRPO_TRL_CACHE", str(tmp_path))
    if template:
        tok.chat_template = resolve_template(template)
    prompts = [
        [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": "weather in " + "Paris " * i}]
        for i in range(0, 60, 3)
    ]
    lengths, trl_kwargs = _trl_lengths(tiny_model, tok, prompts, tools, kwargs)
    rendered = Rendering.of(tok, tools, trl_kwargs)
    for bound in sorted(set(lengths))[::4] + [max(lengths)]:
        got, dropped = filter_by_tokens(
            Dataset.from_list([{"prompt": p} for p in prompts]), {"max_prompt_tokens": bound}, tok, rendered
        )
        assert got["prompt"] == [p for p, n in zip(prompts, lengths) if n <= bound]
        assert dropped == {"max_prompt_tokens": sum(n > bound for n in lengths)}
    if tools:  # tool schemas are part of the prompt: a filter blind to them would keep every row here
        assert min(lengths) > max(
            token_lengths(tok, tok.apply_chat_template(prompts, tokenize=False, add_generation_prompt=True))
        )


def _bos_tokenizer():
    """A byte-level BPE whose post-processor adds a BOS token, as Llama's does (TRL tokenizes string prompts so)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    t = Tokenizer(models.BPE())
    t.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    t.decoder = decoders.ByteLevel()
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    t.add_tokens(sorted(alphabet))
    t.add_special_tokens(["<s>"])
    t.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", t.token_to_id("<s>"))])
    return PreTrainedTokenizerFast(tokenizer_object=t, bos_token="<s>")


def test_string_prompts_count_the_special_tokens_trl_adds(tmp_path, monkeypatch):
    from datasets import Dataset

    monkeypatch.setenv("GRPO_TRL_CACHE", str(tmp_path))
    tok = _bos_tokenizer()
    prompts = ["x" * n for n in range(1, 12)]
    lengths = [len(ids) for ids in tok(text=prompts)["input_ids"]]  # GRPOTrainer's call for standard prompts
    assert lengths == [n + 1 for n in range(1, 12)]
    for bound in (1, 5, 10, 12):
        got, _ = filter_by_tokens(
            Dataset.from_list([{"prompt": p} for p in prompts]), {"max_prompt_tokens": bound}, tok
        )
        assert got["prompt"] == [p for p, n in zip(prompts, lengths) if n <= bound]


class Library:
    def reset(self, **row) -> None:
        return None

    def search(self, query: str, max_results: int = 5) -> str:
        """Search the library's catalogue for books matching a query, newest first.

        Args:
            query: Words to look for in titles and authors.
            max_results: How many books to list at most.
        """
        return "none"


class Maze:
    def reset(self, **row) -> None:
        return None

    def move(self, direction: str) -> str:
        """Move one step.

        Args:
            direction: north, south, east or west.
        """
        return "wall"


@pytest.mark.parametrize("multi", [False, True])
def test_environment_rows_count_their_environments_tools(tiny_model, tok, tmp_path, monkeypatch, multi):
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    monkeypatch.setenv("GRPO_TRL_CACHE", str(tmp_path))
    tok.chat_template = resolve_template("trl:qwen2_5")
    factory = {"library": Library, "maze": Maze} if multi else Library
    names = ["library", "maze"] * 6 if multi else [None] * 12
    rows = [{"prompt": [{"role": "user", "content": "go " * i}]} for i in range(12)]
    if multi:
        rows = [{**r, "environment": n} for r, n in zip(rows, names)]
    ds = Dataset.from_list(rows)
    args = GRPOConfig(
        output_dir=str(tmp_path / "out"),
        use_cpu=True,
        bf16=False,
        per_device_train_batch_size=2,
        num_generations=2,
        report_to=[],
    )
    reward = lambda completions, **kw: [0.0] * len(completions)  # noqa: E731
    trainer = GRPOTrainer(
        model=tiny_model,
        reward_funcs=reward,
        args=args,
        train_dataset=ds,
        processing_class=tok,
        environment_factory=factory,
    )
    trainer._batch_environments = names  # what TRL sets from the batch's rows before tokenizing them
    lengths = [len(ids) for ids in trainer._tokenize_prompts([r["prompt"] for r in rows])[0]]
    rendering = Rendering.of(tok, [], None, factory)
    assert rendering.per_row == multi
    for bound in sorted(set(lengths)):
        got, _ = filter_by_tokens(ds, {"max_prompt_tokens": bound}, tok, rendering)
        assert got["prompt"] == [r["prompt"] for r, n in zip(rows, lengths) if n <= bound]
