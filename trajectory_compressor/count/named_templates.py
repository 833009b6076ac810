"""`--chat-template FILE or NAME`: a template file, or one of the well-known templates shipped by name.

The shipped ones are verbatim copies whose licence allows it (see `chat_templates/README.md`):
with them, `--count-mode chat-template` needs neither the Hub nor a model directory. A file of
the same name as a shipped template wins, so an existing command keeps its meaning.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from trajectory_compressor.count.tokenizer import TokenizerLoadError

SHIPPED_TEMPLATES = {
    "qwen2.5": "qwen2.5.jinja",
    "qwen3": "qwen3.jinja",
    "deepseek-v3.1": "deepseek-v3.1.jinja",
}


def read_chat_template(value: str) -> str:
    """The template text `value` names: a file's contents, else a shipped template's.

    Raises `TokenizerLoadError` (exit 2) for a file that cannot be read or is not UTF-8, and for
    a value that is neither a file nor a shipped name (the names are listed).
    """
    path = Path(value)
    if not path.exists() and value in SHIPPED_TEMPLATES:
        folder = resources.files("trajectory_compressor.count") / "chat_templates"
        return (folder / SHIPPED_TEMPLATES[value]).read_text(encoding="utf-8")
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except OSError as exc:
        names = ", ".join(SHIPPED_TEMPLATES)
        raise TokenizerLoadError(
            f"cannot read chat template {value}: {exc.strerror or exc} (shipped templates by name: {names})"
        ) from None
    except UnicodeDecodeError as exc:
        raise TokenizerLoadError(f"chat template {value} is not valid UTF-8 (byte {exc.start})") from None
