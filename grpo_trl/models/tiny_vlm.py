"""``builtin:tiny-vlm``: a tiny random ``LlavaForConditionalGeneration`` (CLIP tower on 28x28 images, a tiny Qwen2)
and its ``LlavaProcessor``. LLaVA: transformers 5's Qwen2-VL processors need torchvision."""

from __future__ import annotations

from pathlib import Path

from grpo_trl.models.tiny import _CORPUS, TAG_TOKENS, _tokenizer, qwen2_config, save, stop_tokens

IMAGE_TOKEN = "<image>"
TOKENS = 513  # the tokenizer's size: builtin:tiny's 512, then IMAGE_TOKEN (a test checks it against the built model)

# builtin:tiny's template, with list contents (TRL turns a VLM's prompt into text and image entries) rendered
VLM_CHAT_TEMPLATE = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' }}"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'image' %}{{ '<image>' }}{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}"
    "{% endfor %}{% endif %}{{ '<|im_end|>' + '\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)

_VLM_CORPUS = [
    "How many red squares are in the image? Answer with a number in <answer> </answer> tags.",
    "How many blue squares are there? Count the green, yellow and purple ones too: 0 1 2 3 4 5 6 7 8 9.",
]


def tiny_vlm_config(tokenizer_size: int, image_token_id: int, eos: int, pad: int, hidden_size: int = 64) -> dict:
    """The ``LlavaConfig`` arguments of the tiny VLM (also what ``check`` plans memory from, without building it)."""
    return {
        "model_type": "llava",
        "architectures": ["LlavaForConditionalGeneration"],
        "text_config": {
            "model_type": "qwen2",
            **qwen2_config(tokenizer_size, hidden_size, 2, 4, 2),
            "eos_token_id": eos,
            "pad_token_id": pad,
        },
        "vision_config": {
            "model_type": "clip_vision_model",
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 1,
            "num_attention_heads": 2,
            "image_size": 28,
            "patch_size": 7,
        },
        "image_token_id": image_token_id,
        "vision_feature_select_strategy": "default",
        "vision_feature_layer": -1,
        "tie_word_embeddings": True,
        "dtype": "float32",
    }


def build_tiny_vlm_model(output_dir: str | Path, *, seed: int = 0, hidden_size: int = 64) -> str:
    """Write the tiny random VLM (deterministic for ``seed``), its processor and chat template; return the path."""
    import torch
    from transformers import LlavaConfig, LlavaForConditionalGeneration, LlavaProcessor
    from transformers.models.llava.image_processing_pil_llava import LlavaImageProcessorPil

    tokenizer = _tokenizer(_CORPUS * 4 + _VLM_CORPUS * 4, 512, TAG_TOKENS, VLM_CHAT_TEMPLATE)
    # special: never in decoded completions (TRL also stops the model from sampling it)
    tokenizer.add_special_tokens({"additional_special_tokens": [IMAGE_TOKEN]})
    images = LlavaImageProcessorPil(size={"shortest_edge": 28}, crop_size={"height": 28, "width": 28})
    processor = LlavaProcessor(
        image_processor=images,
        tokenizer=tokenizer,
        patch_size=7,
        vision_feature_select_strategy="default",
        chat_template=VLM_CHAT_TEMPLATE,
        image_token=IMAGE_TOKEN,
        num_additional_image_tokens=1,  # CLIP's CLS token
    )
    image_token = tokenizer.convert_tokens_to_ids(IMAGE_TOKEN)
    cfg = tiny_vlm_config(len(tokenizer), image_token, tokenizer.eos_token_id, tokenizer.pad_token_id, hidden_size)
    cfg.pop("model_type"), cfg.pop("architectures"), cfg.pop("dtype")
    torch.manual_seed(seed)
    model = LlavaForConditionalGeneration(LlavaConfig(**cfg))
    stop_tokens(model, tokenizer)
    return save(output_dir, model, processor, {"seed": seed, "params": model.num_parameters()})
