"""``builtin:tiny-tools``: a tiny Qwen2 that emits tool calls, warmed by TRL ``SFTTrainer`` on synthetic Countdown
conversations (``tool_conversations``). ``python -m grpo_trl.models.tiny_tools DIR`` builds it."""

from __future__ import annotations

import re
from pathlib import Path

from grpo_trl.models.tiny import _CORPUS, TAG_TOKENS, TOOL_TOKENS, _tokenizer, builtin_tokenizer, warm_up


def tool_conversations(n: int, seed: int = 0) -> list[tuple[list[dict], list]]:
    """Countdown conversations with their tools: an expression checked by ``calculator`` or the Countdown
    environment's ``check_equation`` (half each), then the ``<answer>``."""
    import random

    from grpo_trl.data.countdown import USER_TEMPLATE
    from grpo_trl.environments.countdown import Countdown
    from grpo_trl.tools.calculator import calculator

    rng = random.Random(seed)
    out = []
    for i in range(n):
        nums = [rng.randint(1, 99) for _ in range(rng.randint(3, 4))]
        expression = str(nums[0]) + "".join(f" {rng.choice('+-*')} {x}" for x in nums[1:])
        value = int(calculator(expression))
        target = value if i % 4 < 2 else rng.randint(1, 999)
        if i % 2:
            name, args, tools, result = "calculator", {"expression": expression}, [calculator], str(value)
        else:
            env = Countdown()
            env.reset(nums=nums, target=target)
            name, args, tools = "check_equation", {"equation": expression}, [env.check_equation]
            result = env.check_equation(expression)
        call = {"type": "function", "function": {"name": name, "arguments": args}}
        messages = [
            {"role": "user", "content": USER_TEMPLATE.format(numbers=nums, target=target)},
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "name": name, "content": result},
            {"role": "assistant", "content": f"<answer>{expression} = {value}</answer>"},
        ]
        out.append((messages, tools))
    return out


def _fixed_text(convs: list, tokenizer) -> list[str]:
    """Text every prompt or tool call repeats (tool schemas, the user template, the call prefix): one token each."""
    from grpo_trl.data.countdown import USER_TEMPLATE

    chunks = [c for c in re.split(r"\{numbers\}|\{target\}", USER_TEMPLATE) if c]
    # the generation prompt's last token: one token, so that what follows it (a tool call on the first turn) does
    # not share a context with every other line break of the tool schemas and calls
    chunks.append("assistant\n")
    for messages, tools in convs[:2]:
        text = tokenizer.apply_chat_template(messages[:1], tools=tools, tokenize=False)
        chunks.append(text.split("<|im_start|>system\n", 1)[1].split("<|im_end|>", 1)[0])
        call = messages[1]["tool_calls"][0]["function"]
        key = next(iter(call["arguments"]))
        chunks.append(f'{{"name": "{call["name"]}", "arguments": {{"{key}": "')
    return sorted(set(chunks), key=len, reverse=True)


def build_tiny_tool_model(
    output_dir: str | Path, *, seed: int = 0, warm_steps: int = 500, conversations: int = 256, vocab_size: int = 1024
) -> str:
    """A Qwen2 (head_dim 64, for vLLM's CPU backend) with TRL's ``qwen2_5`` template that calls tools often, not
    always well (room for GRPO)."""
    convs = tool_conversations(conversations, seed=seed)
    probe = builtin_tokenizer("builtin:tiny-tools")  # the template's text, for any tokenizer
    texts = [probe.apply_chat_template(m, tools=t, tokenize=False) for m, t in convs]
    added = TOOL_TOKENS + TAG_TOKENS + _fixed_text(convs, probe)
    tokenizer = _tokenizer(_CORPUS + texts, vocab_size, added, probe.chat_template)
    # prompt-completion rows, one per assistant turn: the loss is on what the model writes (the tool call; the answer
    # after the tool's reply), never on the tool schemas or on the tool's reply itself
    rows: dict[str, list[str]] = {"prompt": [], "completion": []}
    for messages, tools in convs:
        for end in (2, 4):  # [user, assistant tool call] and [..., tool reply, assistant answer]
            prompt = probe.apply_chat_template(
                messages[: end - 1], tools=tools, tokenize=False, add_generation_prompt=True
            )
            full = probe.apply_chat_template(messages[:end], tools=tools, tokenize=False)
            rows["prompt"].append(prompt)
            rows["completion"].append(full[len(prompt) :])
    return warm_up(Path(output_dir), tokenizer, rows, (128, 2, 2, 1), seed=seed, steps=warm_steps, batch=8, lr=5e-3,
                   max_length=1024)  # fmt: skip


if __name__ == "__main__":
    import sys

    print(f"tiny tool model written to {build_tiny_tool_model(sys.argv[1])}")
