"""GPU figures (only run where CUDA is present): a Qwen2.5-0.5B-shaped model with random weights, transformers
generation backend, GRPO steps at two ``max_completion_length`` values. Nothing is downloaded: the tokenizer is the
tiny offline one, the model is built from a config."""

from __future__ import annotations

import statistics
import tempfile
from pathlib import Path

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


def build_model(path: Path) -> str:
    import torch
    from transformers import AutoTokenizer, Qwen2Config, Qwen2ForCausalLM

    from grpo_trl.testing import build_tiny_model

    build_tiny_model(path)  # tokenizer + chat template
    tok = AutoTokenizer.from_pretrained(path)
    config = Qwen2Config(vocab_size=151936, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id, **QWEN25_05B)
    torch.manual_seed(0)
    Qwen2ForCausalLM(config).to(torch.bfloat16).save_pretrained(path)
    return str(path)


def run_gpu_bench(lengths: tuple[int, ...] = (128, 512), steps: int = 6) -> dict:
    import torch
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    tmp = Path(tempfile.mkdtemp(prefix="grpo-gpu-bench-"))
    model = build_model(tmp / "model")
    data = Dataset.from_list([{"prompt": [{"role": "user", "content": f"Count to {i}."}]} for i in range(256)])

    def no_eos(completions, **kwargs):  # constant reward: every completion runs to max length, the worst case
        return [0.0] * len(completions)

    rows = []
    for length in lengths:
        torch.cuda.reset_peak_memory_stats()
        config = GRPOConfig(
            output_dir=str(tmp / f"out{length}"),
            max_steps=steps,
            num_generations=8,
            per_device_train_batch_size=8,
            max_completion_length=length,
            bf16=True,
            logging_steps=1,
            save_strategy="no",
            report_to="none",
            disable_tqdm=True,
            generation_kwargs={"min_new_tokens": length},
        )
        trainer = GRPOTrainer(model=model, reward_funcs=[no_eos], args=config, train_dataset=data)
        trainer.train()
        hist = [h for h in trainer.state.log_history if "step_time" in h][1:]
        step = statistics.median(h["step_time"] for h in hist)
        tokens = statistics.median(h["completions/mean_length"] * 8 for h in hist)
        rows.append(
            {
                "max_completion_length": length,
                "step_s": step,
                "gen_tokens_per_s": tokens / step,
                "peak_mem_gb": torch.cuda.max_memory_allocated() / 2**30,
                "device": torch.cuda.get_device_name(),
            }
        )
    return {"rows": rows, "step_time_ratio": rows[-1]["step_s"] / rows[0]["step_s"]}
