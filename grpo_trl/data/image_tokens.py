"""Prompts with images counted as ``GRPOTrainer`` counts them: ``prepare_multimodal_messages``, then the processor's
``apply_chat_template(tokenize=True)``, which expands each image to its tokens."""

from __future__ import annotations

from typing import Any

IMAGE_COLUMNS = ("images", "image")  # TRL's columns: a list of images per row, or one image
BATCH = 16  # rows per processor call: pixel values of a batch stay small


def is_processor(processing_class: Any) -> bool:
    """A multimodal processor (TRL's ``ProcessorMixin`` case), not a tokenizer."""
    from transformers import ProcessorMixin

    return isinstance(processing_class, ProcessorMixin)


def text_tokenizer(processing_class: Any) -> Any:
    """The tokenizer inside a processor, or the tokenizer itself."""
    return processing_class.tokenizer if is_processor(processing_class) else processing_class


def row_images(batch: dict, i: int | None) -> list:
    """Row ``i``'s images from a batch (``i`` None: one row), from TRL's ``images`` or ``image`` column."""
    cell = (lambda column: batch[column]) if i is None else (lambda column: batch[column][i])
    if batch.get("images") is not None:
        return [im for im in (cell("images") or []) if im is not None]
    if batch.get("image") is not None and cell("image") is not None:
        return [cell("image")]
    return []


def _decoded(image: Any) -> Any:
    """A PIL image from a cell stored undecoded (``{"bytes", "path"}``) or decoded."""
    if isinstance(image, dict):
        from datasets import Image

        return Image().decode_example(image)
    return image


def prompt_lengths(processor: Any, prompts: list, images: list[list], kwargs: dict) -> list[int]:
    """Token count of each conversational prompt with its images, as ``GRPOTrainer`` tokenizes it."""
    from trl.data_utils import prepare_multimodal_messages

    out: list[int] = [0] * len(prompts)
    with_images = [i for i in range(len(prompts)) if images[i]]
    without = [i for i in range(len(prompts)) if not images[i]]
    for group in (with_images, without):  # the processor wants images in every row of a batch, or in none
        for start in range(0, len(group), BATCH):
            rows = group[start : start + BATCH]
            conversations = [
                prepare_multimodal_messages(prompts[i], images=[_decoded(im) for im in images[i]]) for i in rows
            ]
            encoded = processor.apply_chat_template(
                conversations, tokenize=True, add_generation_prompt=True, return_dict=True, **kwargs
            )
            for i, ids in zip(rows, encoded["input_ids"]):
                out[i] = len(ids)
    return out


def as_trainer_prompt(processing_class: Any, row: dict) -> Any:
    """``row``'s prompt as ``GRPOTrainer`` renders it: for a processor, with the row's images as image entries."""
    prompt = row["prompt"]
    if not is_processor(processing_class) or isinstance(prompt, str):
        return prompt
    from trl.data_utils import prepare_multimodal_messages

    return prepare_multimodal_messages(prompt, images=[_decoded(im) for im in row_images(row, None)])
