"""Counting tokens with a real Hugging Face tokenizer, through the fastest backend that counts it exactly."""

from collections.abc import Callable, Mapping
from typing import Any

from trajectory_compressor.count.chat_template import ChatTemplateCounter
from trajectory_compressor.count.counter import TokenCounter
from trajectory_compressor.count.named_templates import SHIPPED_TEMPLATES, read_chat_template
from trajectory_compressor.count.tokenizer import TokenizerLoadError, load_tokenizer, load_tokenizer_json
from trajectory_compressor.messages import quoted
from trajectory_compressor.settings import RunConfig

__all__ = [
    "SHIPPED_TEMPLATES",
    "ChatTemplateCounter",
    "TokenCounter",
    "TokenizerLoadError",
    "build_counter",
    "check_template_syntax",
    "counter_for",
    "load_tokenizer",
]


def build_counter(
    name_or_path: str | None = None,
    *,
    trust_remote_code: bool = False,
    count_mode: str = "values",
    chat_template: str | None = None,
    chat_template_kwargs: Mapping[str, Any] | None = None,
    tools_key: str = "tools",
    tokenizer_backend: str = "auto",
    write_format: str | None = None,
) -> TokenCounter:
    """The counter a run asks for: per-value counts (default) or chat-template counts.

    `chat_template` is a template file or the name of a shipped one (`named_templates`);
    `chat_template_kwargs`, `tools_key` and `write_format` (a row is counted as it is written)
    only matter to chat-template counts.
    `tokenizer_backend` is who counts (`count/backends.py`): "auto" (the fastest exact backend
    that reproduces this tokenizer, else Hugging Face `tokenizers`), "hf", or a backend's name.
    """
    if count_mode != "chat-template" and chat_template is None:
        bare = load_tokenizer_json(name_or_path)
        if bare is not None:
            return TokenCounter(bare[0], name=bare[1], backend=tokenizer_backend)
    tokenizer = load_tokenizer(name_or_path, trust_remote_code=trust_remote_code)
    if chat_template is not None:
        tokenizer.chat_template = read_chat_template(chat_template)
        check_template_syntax(tokenizer.chat_template, chat_template)
    if count_mode == "chat-template":
        return ChatTemplateCounter(
            tokenizer,
            template_kwargs=chat_template_kwargs,
            tools_key=tools_key,
            backend=tokenizer_backend,
            write_format=write_format,
        )
    return TokenCounter(tokenizer, backend=tokenizer_backend)


def counter_for(config: RunConfig) -> TokenCounter:
    """The token counter `config` asks for (tokenizer, count mode, chat template)."""
    return build_counter(
        config.tokenizer,
        trust_remote_code=config.trust_remote_code,
        count_mode=config.count_mode,
        chat_template=config.chat_template,
        chat_template_kwargs=config.chat_template_kwargs,
        tools_key=config.tools_key,
        tokenizer_backend=config.tokenizer_backend,
        write_format=config.output.write_format,
    )


def check_template_syntax(template: str, path: str) -> None:
    """Compile a chat template at start, so a syntax error stops the run (exit 2) up front.

    Without this, every row would be rejected one by one and the run would end with exit 0.
    Compiled the way `transformers` compiles it (its extensions and filters included).
    """
    import jinja2

    compile_template: Callable[[str], object]
    try:
        from transformers.utils.chat_template_utils import _compile_jinja_template as compile_template
    except ImportError:  # pragma: no cover - older or newer transformers: syntax only
        compile_template = jinja2.Environment().parse
    try:
        compile_template(template)
    except jinja2.TemplateError as exc:
        lineno = getattr(exc, "lineno", None)  # a TemplateSyntaxError's
        line = f" line {lineno}" if lineno else ""
        raise TokenizerLoadError(f"chat template {quoted(path)}{line} is not a valid Jinja template: {exc}") from None
