"""The function definitions each task family offers the model, and how the system prompt shows them.

Why apart from the families: schemas are static data (JSON Schema objects), the same for every
row of a family, and read like an API reference rather than like the logic of a run.
"""

from __future__ import annotations

from collections.abc import Sequence


def schema(name: str, description: str, params: dict[str, tuple[str, str]], required: Sequence[str]) -> dict:
    properties = {key: {"type": kind, "description": text} for key, (kind, text) in params.items()}
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": list(required)},
        },
    }


TOOL_FORMAT = (
    "You can call the functions described below. Their signatures are JSON Schema objects inside "
    "<tools></tools>:\n<tools>\n{schemas}\n</tools>\n\n"
    "To call a function, write one JSON object per call with the function name and its arguments, "
    'inside <tool_call></tool_call> tags:\n<tool_call>\n{{"name": <function-name>, "arguments": '
    "<arguments-object>}}\n</tool_call>\nYou may make several calls in one message when they do not "
    "depend on each other. Results come back in <tool_response></tool_response> blocks."
)


def coding_tools(variant: str = "") -> list[dict]:
    """A shell alone (variant "shell"), or a shell with an editor's view, search, replace and test tools."""
    bash = schema(
        "bash",
        "Run a shell command in the repository and return its output and exit code.",
        {
            "command": ("string", "The command to run."),
            "timeout": ("integer", "Seconds before the command is killed (default 120)."),
        },
        ["command"],
    )
    if variant == "shell":
        return [bash]
    return [
        bash,
        schema(
            "view_file",
            "Show a file with line numbers, optionally only a range of lines.",
            {
                "path": ("string", "Path relative to the repository root."),
                "start_line": ("integer", "First line to show (1-based)."),
                "end_line": ("integer", "Last line to show (inclusive)."),
            },
            ["path"],
        ),
        schema(
            "search",
            "Search the repository for a regular expression, like grep -rn.",
            {"pattern": ("string", "Regular expression."), "path": ("string", "Folder to search.")},
            ["pattern"],
        ),
        schema(
            "str_replace",
            "Replace one exact occurrence of old_str with new_str in a file.",
            {
                "path": ("string", "File to edit."),
                "old_str": ("string", "Exact text to replace."),
                "new_str": ("string", "Replacement text."),
            },
            ["path", "old_str", "new_str"],
        ),
        schema(
            "run_tests",
            "Run pytest on a path or node id and return the report.",
            {
                "target": ("string", "Test path or node id; empty for the whole suite."),
                "extra_args": ("string", "Extra pytest arguments."),
            },
            [],
        ),
    ]


def data_analysis_tools(variant: str = "") -> list[dict]:
    """A Python sandbox, a file listing and a read-only SQL warehouse."""
    return [
        schema(
            "python",
            "Execute Python code in a persistent Jupyter-like kernel; returns stdout and errors.",
            {"code": ("string", "Python source to run.")},
            ["code"],
        ),
        schema("list_files", "List files in a folder of the sandbox.", {"path": ("string", "Folder path.")}, ["path"]),
        schema(
            "sql",
            "Run a read-only SQL query on the warehouse; returns rows as JSON objects.",
            {"query": ("string", "A SELECT statement."), "limit": ("integer", "Maximum rows (default 200).")},
            ["query"],
        ),
    ]


def web_research_tools(variant: str = "") -> list[dict]:
    """Search, page fetches and a notebook."""
    return [
        schema(
            "web_search",
            "Search the web and return result titles, URLs and snippets.",
            {"query": ("string", "Search query."), "max_results": ("integer", "Number of results (1-10).")},
            ["query"],
        ),
        schema(
            "fetch_page",
            "Fetch a web page and return its main text as Markdown.",
            {"url": ("string", "Absolute URL.")},
            ["url"],
        ),
        schema(
            "save_note",
            "Append a note to the research notebook.",
            {"title": ("string", "Short title."), "text": ("string", "Note body.")},
            ["title", "text"],
        ),
    ]


def customer_service_tools(variant: str = "") -> list[dict]:
    """A hotel booking system: guests, bookings, availability, changes and a hand-off to a human."""
    guest = {"guest_id": ("string", "Guest id, such as 'ana_silva_1234'.")}
    booking = {"booking_id": ("string", "Six-character booking number.")}
    dates = {"check_in": ("string", "YYYY-MM-DD."), "check_out": ("string", "YYYY-MM-DD.")}
    return [
        schema("find_guest", "Find a guest id by e-mail address.", {"email": ("string", "E-mail.")}, ["email"]),
        schema("get_guest", "Get a guest profile: tier, payment methods and bookings.", guest, ["guest_id"]),
        schema("get_booking", "Get the details of a booking.", booking, ["booking_id"]),
        schema(
            "search_rooms",
            "Search available rooms in a city.",
            {"city": ("string", "City."), **dates, "guests": ("integer", "Number of adults.")},
            ["city", "check_in", "check_out"],
        ),
        schema(
            "create_booking",
            "Book a room for a verified guest.",
            {
                **guest,
                "hotel_id": ("string", "Hotel id from search_rooms."),
                "room_type": ("string", "Room type."),
                **dates,
                "rate_plan": ("string", "'flexible' or 'saver'."),
                "payment": ("string", "Payment method id."),
            },
            ["guest_id", "hotel_id", "room_type", "check_in", "check_out", "rate_plan", "payment"],
        ),
        schema(
            "cancel_booking",
            "Cancel a booking.",
            {**booking, "reason": ("string", "Reason.")},
            ["booking_id", "reason"],
        ),
        schema(
            "change_dates",
            "Move a booking to new dates.",
            {**booking, **dates},
            ["booking_id", "check_in", "check_out"],
        ),
        schema(
            "add_extras",
            "Add breakfast or parking to a booking.",
            {**booking, "extras": ("array", "Items such as 'breakfast' or 'parking'.")},
            ["booking_id", "extras"],
        ),
        schema(
            "issue_voucher",
            "Issue a goodwill voucher.",
            {**guest, "amount": ("number", "USD."), "reason": ("string", "Why.")},
            ["guest_id", "amount", "reason"],
        ),
        schema(
            "transfer_to_human",
            "Hand the conversation to a human agent.",
            {"summary": ("string", "What the guest needs.")},
            ["summary"],
        ),
    ]
