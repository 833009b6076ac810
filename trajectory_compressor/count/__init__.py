"""Counting tokens with a real Hugging Face tokenizer."""

from trajectory_compressor.count.counter import ChatTemplateCounter, TokenCounter
from trajectory_compressor.count.tokenizer import TokenizerLoadError, load_tokenizer, load_tokenizer_json

__all__ = ["ChatTemplateCounter", "TokenCounter", "TokenizerLoadError", "build_counter", "load_tokenizer"]


def build_counter(
    name_or_path: str | None = None,
    *,
    trust_remote_code: bool = False,
    count_mode: str = "values",
    chat_template: str | None = None,
) -> TokenCounter:
    """The counter a run asks for: per-value counts (default) or chat-template counts."""
    if count_mode != "chat-template" and chat_template is None:
        bare = load_tokenizer_json(name_or_path)
        if bare is not None:
            return TokenCounter(bare[0], name=bare[1])
    tokenizer = load_tokenizer(name_or_path, trust_remote_code=trust_remote_code)
    if chat_template is not None:
        try:
            with open(chat_template, encoding="utf-8") as handle:
                tokenizer.chat_template = handle.read()
        except OSError as exc:
            raise TokenizerLoadError(f"cannot read chat template {chat_template}: {exc.strerror or exc}") from None
    if count_mode == "chat-template":
        return ChatTemplateCounter(tokenizer)
    return TokenCounter(tokenizer)
