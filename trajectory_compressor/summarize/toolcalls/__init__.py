"""Reading the tool markup of agent turns into small records, for summaries and fidelity scores.

Pure functions over strings, regexes compiled once (the extractive summarizer calls them on
every turn of every compressed row), and every one accepts anything and degrades to the raw
text instead of raising. Three jobs, one module each: `markup` (tool-call and tool-response
blocks, reasoning, prose), `outcomes` (the verdict on a tool result) and `shell` (the files a
command or call names or writes); `text` holds the tolerant JSON and clipping they share.
"""

from trajectory_compressor.summarize.toolcalls.markup import (
    ToolCall,
    ToolResponse,
    parse_tool_calls,
    parse_tool_responses,
    prose_of,
    said_in,
    strip_think,
    think_of,
)
from trajectory_compressor.summarize.toolcalls.outcomes import Outcome, analyze_output, json_error, outcome_of
from trajectory_compressor.summarize.toolcalls.shell import command_gist, files_in, files_written_in, normalize_path
from trajectory_compressor.summarize.toolcalls.text import clip, dumps, loads

__all__ = [
    "Outcome",
    "ToolCall",
    "ToolResponse",
    "analyze_output",
    "clip",
    "command_gist",
    "dumps",
    "files_in",
    "files_written_in",
    "json_error",
    "loads",
    "normalize_path",
    "outcome_of",
    "parse_tool_calls",
    "parse_tool_responses",
    "prose_of",
    "said_in",
    "strip_think",
    "think_of",
]
