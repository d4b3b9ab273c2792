"""GPU figures (only where CUDA is present): GRPO steps on a Qwen2.5-0.5B-shaped model with random weights, nothing
downloaded (the tokenizer is the tiny offline one; ids it lacks decode to nothing, so every completion runs to
``max_completion_length``: the worst case). For each setting: step time, generated tokens/s, peak memory, and the
memory plan of ``grpo_trl.check.memory`` for the same setting beside the measured peak.

Settings: two completion lengths; full fine-tune vs LoRA; gradient checkpointing on and off; QLoRA (4-bit base,
``BitsAndBytesConfig``) when bitsandbytes is installed. Run ``python -m bench.gpu`` (or ``make bench``) on the GPU
machine; ``--quick`` runs two settings.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# Qwen2.5-0.5B's shapes (config.json of Qwen/Qwen2.5-0.5B-Instruct)
QWEN25_05B = dict(
    hidden_size=896,
    intermediate_size=4864,
    num_hidden_layers=24,
    num_attention_heads=14,
    num_key_value_heads=2,
    max_position_embeddings=32768,
    rope_theta=1000000.0,
    tie_word_embeddings=True,
)
VOCAB = 151936
GENERATIONS = 8
BATCH = 8
# (mode, gradient checkpointing, max_completion_length)
SETTINGS = [
    ("full", False, 128),
    ("full", False, 512),
    ("full", True, 512),
    ("lora", False, 512),
    ("lora", True, 512),
    ("qlora", True, 512),
]
QUICK = [("full", True, 128), ("lora", True, 128)]


def build_model(path: Path) -> str:
    import torch
    from transformers import AutoTokenizer, Qwen2Config, Qwen2ForCausalLM

    from grpo_trl.models.tiny import build_tiny_model

    build_tiny_model(path)  # tokenizer + chat template
    tok = AutoTokenizer.from_pretrained(path)
    config = Qwen2Config(vocab_size=VOCAB, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id, **QWEN25_05B)
    config.dtype = "bfloat16"
    torch.manual_seed(0)
    Qwen2ForCausalLM(config).to(torch.bfloat16).save_pretrained(path)
    return str(path)


def has_bitsandbytes() -> bool:
    import importlib.util

    return importlib.util.find_spec("bitsandbytes") is not None


def planned_items(model_path: str, mode: str, gc_on: bool, length: int, prompt_tokens: int) -> dict[str, float]:
    """The memory plan's items for one setting in GiB, without the fixed CUDA-context item (``max_memory_allocated``
    excludes it): beside the measured peak they show which term is off."""
    from grpo_trl.check.memory import load_shape, plan_memory

    shape = load_shape(model_path)
    plan = plan_memory(
        shape,
        dtype="bfloat16",
        lora={"r": 16, "target_modules": "all-linear"} if mode != "full" else None,
        quant_bits=4 if mode == "qlora" else None,
        beta=0.0,
        batch=BATCH,
        generation_batch=BATCH,
        prompt_tokens=prompt_tokens,
        completion_tokens=length,
        gradient_checkpointing=gc_on,
    )
    return {name: b / 2**30 for name, b, _ in plan.items if not name.startswith("CUDA context")}


def run_setting(model: str, data, tmp: Path, mode: str, gc_on: bool, length: int, steps: int) -> dict:
    import torch
    from peft import LoraConfig
    from trl import GRPOConfig, GRPOTrainer

    def no_eos(completions, **kwargs):  # constant reward: nothing to learn, only the cost is measured
        return [0.0] * len(completions)

    init: dict = {"dtype": "bfloat16"}
    if mode == "qlora":
        from transformers import BitsAndBytesConfig

        init["quantization_config"] = BitsAndBytesConfig(
            load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_compute_dtype=torch.bfloat16
        )
    config = GRPOConfig(
        output_dir=str(tmp / f"out-{mode}-{gc_on}-{length}"),
        max_steps=steps,
        num_generations=GENERATIONS,
        per_device_train_batch_size=BATCH,
        max_completion_length=length,
        bf16=True,
        gradient_checkpointing=gc_on,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        disable_tqdm=True,
        model_init_kwargs=init,
        generation_kwargs={"min_new_tokens": length},
    )
    peft = (
        LoraConfig(r=16, lora_alpha=32, target_modules="all-linear", task_type="CAUSAL_LM") if mode != "full" else None
    )
    gc.collect()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    trainer = GRPOTrainer(model=model, reward_funcs=[no_eos], args=config, train_dataset=data, peft_config=peft)
    trainer.train()
    hist = [h for h in trainer.state.log_history if "step_time" in h][1:] or trainer.state.log_history[:1]
    step = statistics.median(h["step_time"] for h in hist)
    tokens = statistics.median(h["completions/mean_length"] * BATCH for h in hist)
    gen = [h["timing/generation_s"] for h in hist if "timing/generation_s" in h]
    peak = torch.cuda.max_memory_allocated()
    prompt_tokens = int(statistics.median(len(x) for x in trainer.processing_class(
        [trainer.processing_class.apply_chat_template(r["prompt"], tokenize=False, add_generation_prompt=True)
         for r in data.select(range(16))], add_special_tokens=False)["input_ids"]))  # fmt: skip
    items = planned_items(model, mode, gc_on, length, prompt_tokens)
    plan = sum(items.values()) * 2**30
    del trainer
    return {
        "mode": mode,
        "gradient_checkpointing": gc_on,
        "max_completion_length": length,
        "step_s": step,
        "gen_tokens_per_s": tokens / (statistics.median(gen) if gen else step),
        "peak_mem_gb": peak / 2**30,
        "plan_gb": plan / 2**30,
        "plan_vs_peak": plan / peak,
        "plan_items_gb": items,
        "prompt_tokens": prompt_tokens,
        "device": torch.cuda.get_device_name(),
    }


def run_gpu_bench(settings: list | None = None, steps: int = 4) -> dict:
    import torch
    from datasets import Dataset

    if not torch.cuda.is_available():
        return {"skipped": "no CUDA device"}
    tmp = Path(tempfile.mkdtemp(prefix="grpo-gpu-bench-"))
    model = build_model(tmp / "model")
    data = Dataset.from_list([{"prompt": [{"role": "user", "content": f"Count to {i}."}]} for i in range(512)])
    rows, skipped = [], []
    for mode, gc_on, length in settings or SETTINGS:
        if mode == "qlora" and not has_bitsandbytes():
            skipped.append(f"{mode}: bitsandbytes not installed")
            continue
        rows.append(run_setting(model, data, tmp, mode, gc_on, length, steps))
        print(json.dumps(rows[-1]), flush=True)
    return {"rows": rows, "skipped_settings": skipped}


def table_rows(gpu: dict) -> list[str]:
    if "skipped" in gpu:
        return [f"| GPU step time / tokens/s / memory | skipped: {gpu['skipped']} |"]
    out = []
    for r in gpu.get("rows", []):
        out.append(
            f"| GPU {r['device']}, {r['mode']}, grad ckpt {'on' if r['gradient_checkpointing'] else 'off'}, "
            f"max_completion_length {r['max_completion_length']} | {r['step_s']:.2f} s/step, "
            f"{r['gen_tokens_per_s']:,.0f} gen tokens/s, {r['peak_mem_gb']:.1f} GiB peak "
            f"(plan {r['plan_gb']:.1f} GiB, {r['plan_vs_peak']:.2f}x) |"
        )
    return out + [f"| GPU setting skipped | {s} |" for s in gpu.get("skipped_settings", [])]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="two short settings")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--output", default=None, help="also write the results as JSON here")
    args = parser.parse_args(argv)
    result = run_gpu_bench(QUICK if args.quick else None, args.steps)
    print("\n".join(table_rows(result)))
    if args.output:
        Path(args.output).write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
