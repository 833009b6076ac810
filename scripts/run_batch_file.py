"""Play `vllm run-batch`: send each request of a batch input file to a chat-completions server.

    python scripts/run_batch_file.py -i requests.jsonl -o results.jsonl --base-url http://127.0.0.1:8080/v1

Reads the OpenAI batch input format that `trajectory-compressor requests` writes and writes the
batch output format (`{"id", "custom_id", "response": {"status_code", "body"}, "error"}`) that
providers and `vllm run-batch` produce, for `compress --responses`. It exists to prove that round
trip against a real local model (llama.cpp's server) without vLLM or a provider; the API key, if
any, is read from `$OPENAI_API_KEY` and written nowhere. When every request failed it exits 1
(the output file still holds each failure's line).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import sys
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Any


def answer(base_url: str, line: dict[str, Any], timeout: float, attempts: int = 3) -> dict[str, Any]:
    """One request's output line; a dropped connection is tried again, as a batch runner would."""
    result: dict[str, Any] = {"id": f"batch_req_{line['custom_id'][:16]}", "custom_id": line["custom_id"]}
    for attempt in range(attempts):
        failure = _send(base_url, line, timeout, result)
        if failure is None:
            return result
        if attempt + 1 < attempts:
            time.sleep(1.0 + attempt)
    result["response"] = None
    result["error"] = {"code": "request_failed", "message": failure}
    return result


def _send(base_url: str, line: dict[str, Any], timeout: float, result: dict[str, Any]) -> str | None:
    """Fill `result` with the server's answer (an HTTP error is an answer); why not, if it could not."""
    url = base_url.rstrip("/") + "/chat/completions"
    headers = {"Content-Type": "application/json"}
    key = os.environ.get("OPENAI_API_KEY")
    if key:
        headers["Authorization"] = f"Bearer {key}"
    request = urllib.request.Request(url, data=json.dumps(line["body"]).encode(), headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            result["response"] = {"status_code": response.status, "body": json.loads(response.read())}
            result["error"] = None
    except urllib.error.HTTPError as exc:
        result["response"] = {"status_code": exc.code, "body": None}
        result["error"] = {"code": str(exc.code), "message": exc.reason}
    except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError) as exc:
        return f"{type(exc).__name__}: {exc}"  # a dropped connection, a timeout, a reply that is not JSON
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-i", "--input", required=True)
    parser.add_argument("-o", "--output", required=True)
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--timeout", type=float, default=300.0)
    args = parser.parse_args()
    with open(args.input, encoding="utf-8") as handle:
        lines = [json.loads(text) for text in handle if text.strip()]
    with ThreadPoolExecutor(max_workers=args.concurrency) as pool:
        results = list(pool.map(lambda line: answer(args.base_url, line, args.timeout), lines))
    with open(args.output, "w", encoding="utf-8") as handle:
        for result in results:
            handle.write(json.dumps(result, ensure_ascii=False) + "\n")
    failed = sum(1 for result in results if result["error"] is not None)
    print(f"{len(results)} requests, {failed} failed -> {args.output}", file=sys.stderr)
    if results and failed == len(results):
        print(f"error: no request was answered by {args.base_url}; see the error lines", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
