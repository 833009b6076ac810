"""The coding family: fixing a bug in a fictional Python repository, through a shell or an editor.

Why it is the longest family: its outputs (file views, grep hits, pytest logs with failures,
tracebacks, diffs) are the long, dense tool turns a compressor most often has to shrink.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from typing import Any

from .family import Family
from .fragments import NOUNS
from .pools import pools
from .run import Call, Run
from .tools import coding_tools

EXCEPTIONS = (
    ("AssertionError", "assert {a} == {b}"),
    ("KeyError", "'{n}_id'"),
    ("TypeError", "unsupported operand type(s) for +: 'NoneType' and 'int'"),
    ("ValueError", "invalid literal for int() with base 10: '{b}x'"),
    ("AttributeError", "'NoneType' object has no attribute '{n}'"),
    ("IndexError", "list index out of range"),
    ("{E}", "empty {n}: ''"),
)

BUG_CAUSES = (
    "it compares the raw {n} instead of the normalized one",
    "the loop stops one element early when the input length is a multiple of the chunk size",
    "None is passed through to `{fn2}` without a check",
    "the default argument is a mutable list shared between calls",
    "the time zone offset is applied twice for naive datetimes",
    "the cache key ignores the `strict` flag, so a lenient result is reused in strict mode",
    "an empty {n} falls through to the numeric branch",
    "the error is caught and silently replaced with a default value",
    "the module-level `_SEEN` set is never cleared between runs",
)

REASONING = (
    "The failure mentions `{fn}`, so the problem is probably in how {n}s are prepared before they reach it.",
    "There are several call sites; only the one in `{path}` passes `strict=True`.",
    "If I change the signature I also have to update every caller, so a local fix inside the function is safer.",
    "The test expects {a} but gets {b}, which looks like an off-by-one in the {n} handling.",
    "I should check whether the same pattern exists in the sibling modules before editing.",
    "The issue says this started after the last release, so a recent refactor may have changed a default.",
    "Before editing, I want to confirm the behaviour with a minimal reproduction.",
    "The traceback ends in `{fn}`, but the bad value is created earlier, in `{fn2}`.",
    "Keeping the change minimal: one condition in `{fn}` plus a regression test.",
    "The existing tests only cover the happy path, which is why this slipped through.",
    "The output is long; the relevant part is the assertion at the end of the first failure.",
    "`{fn2}` is only used by the CLI, so changing its return type would not affect the library API.",
    "Nothing in the diff touches serialization, so the round-trip tests should still pass.",
    "I am not sure yet whether the empty case is intended; the docstring suggests it should return None.",
    "The grep shows the helper is duplicated in two modules, and only one copy was updated.",
)


def _fit_lines(lines: Sequence[str], start: int, budget_chars: int) -> list[str]:
    """Consecutive lines from `start` (wrapping around) until about `budget_chars` are used."""
    out, used, n = [], 0, len(lines)
    i = start % n
    while used < budget_chars and len(out) < n:
        line = lines[i]
        out.append(line)
        used += len(line) + 1
        i = (i + 1) % n
    return out


CODING_TASKS = {
    "en": (
        "The test `{test}` started failing after the last merge. The failure is:\n\n```\n{exc}: {msg}\n```\n\n"
        "Please find the cause in `{path}` and fix it. Keep the change small and do not edit unrelated tests.",
        "Bug report from a user of {repo}:\n\n> When I call `{fn}` with an empty value I get `{exc}` instead of "
        "`None`. This worked in the previous release.\n\nReproduce it, fix it, and add a regression test.",
        "Our CI is red on main. `pytest {testfile}` fails with {exc}. Investigate and fix the code "
        "(not the tests). The repository is checked out at `{root}`.",
        "Can you look into `{fn}` in `{path}`? It seems to {symptom}. Please fix it and make sure the full "
        "test suite still passes.",
    ),
    "fr": (
        "Le test `{test}` échoue depuis la dernière fusion, avec l'erreur `{exc}: {msg}`. Peux-tu trouver la "
        "cause dans `{path}` et corriger le code, sans modifier les tests existants ?",
        "Bonjour ! Quand j'appelle `{fn}` avec une valeur vide, j'obtiens `{exc}` au lieu de `None`. Ça "
        "marchait dans la version précédente. Merci de reproduire le problème, de le corriger et d'ajouter un "
        "test de non-régression.",
    ),
    "zh": (
        "合并最新代码后，测试 `{test}` 开始失败，错误信息是 `{exc}: {msg}`。请在 `{path}` 中找出原因并修复，"
        "改动尽量小，不要修改无关的测试。",
        "用户反馈：调用 `{fn}` 时传入空值会抛出 `{exc}`，而不是返回 `None`。上一个版本是正常的。请复现问题、"
        "修复它，并补充一个回归测试。",
    ),
}
CODING_SYMPTOMS = (
    "drop the last item of every batch",
    "return stale values after a config reload",
    "ignore the strict flag",
    "shift timestamps by one hour for naive datetimes",
    "raise on empty input instead of returning None",
)
CODING_FOLLOWUPS = {
    "en": (
        "Also, please make sure it still works on Python 3.9.",
        "Quick note: don't touch the public API.",
        "Any progress? Please keep the diff minimal.",
        "FYI the same bug was reported for the CLI path too.",
        "Please also run the linters before you finish.",
    ),
    "fr": ("Au fait, il faut que ça reste compatible avec Python 3.9.", "Merci de ne pas toucher à l'API publique."),
    "zh": ("另外，请确认在 Python 3.9 下也能运行。", "请不要修改公开的 API。"),
}
CODING_FINAL = {
    "en": "I fixed the bug in `{path}`.\n\n**Cause:** {cause}.\n\n**Fix:** `{fn}` now handles that case "
    "explicitly, and I added a regression test in `{testfile}`.\n\n**Verification:** `pytest` passes "
    "({passed} passed, {skipped} skipped). The diff touches {files} file(s).",
    "fr": "J'ai corrigé le bug dans `{path}`.\n\n**Cause :** {cause}.\n\n**Correction :** `{fn}` traite "
    "désormais ce cas explicitement, et j'ai ajouté un test de non-régression dans `{testfile}`.\n\n"
    "**Vérification :** `pytest` passe ({passed} réussis, {skipped} ignorés).",
    "zh": "已修复 `{path}` 中的问题。\n\n**原因：** {cause}。\n\n**修复：** `{fn}` 现在会显式处理这种情况，"
    "并在 `{testfile}` 中添加了回归测试。\n\n**验证：** `pytest` 全部通过（{passed} 个通过，{skipped} 个跳过）。",
}
CODING_SAY = {
    "explore": (
        "Let me look at the repository layout first.",
        "I'll start with an overview of the project.",
        "First, let me see which files are in the package and where the tests live.",
    ),
    "read": (
        "Now let me read `{path}`.",
        "Let me open `{path}` around the function from the traceback.",
        "I need to see the rest of `{path}` before changing anything.",
        "Let me check how `{fn}` is written.",
    ),
    "grep": (
        "Let me find every place that uses `{fn}`.",
        "I'll search for `{fn}` across the package.",
        "Searching for related call sites.",
    ),
    "test": (
        "Let me run the failing test.",
        "Running the test module to see where we stand.",
        "Now the full suite, to check for regressions.",
        "Let me re-run the tests.",
    ),
    "repro": ("Let me write a small script that reproduces the issue.", "I'll reproduce this in isolation first."),
    "edit": (
        "The bug is in `{fn}`: {cause}. I'll fix that.",
        "I'll update `{fn}` accordingly.",
        "Let me apply the fix.",
        "Adding a guard for the empty case.",
    ),
    "diff": ("Let me review the full diff before finishing.", "Checking the final diff."),
}


class Coding(Family):
    """Bug fixing in a fictional Python repository, through a shell or an editor toolset."""

    name = "coding"

    def __init__(self, rng: random.Random, lang: str) -> None:
        super().__init__(rng, lang)
        self.repo = rng.choice(pools().repos)
        self.harness = rng.choice(("shell", "editor"))
        self.exit_style = rng.randrange(2)
        self.root = rng.choice(("/workspace", "/testbed", "/repo", "/home/agent/src")) + "/" + self.repo.name
        self.module = rng.choice(self.repo.modules)
        self.path = f"{self.repo.name}/{self.module}.py"
        self.testfile = f"tests/test_{self.module}.py"
        self.fn = rng.choice(self.repo.functions)
        self.fn2 = rng.choice(self.repo.functions)
        self.test = f"{self.testfile}::test_{self.fn.lstrip('_')}"
        self.cause = rng.choice(BUG_CAUSES).format(n=rng.choice(NOUNS), fn2=self.fn2)
        exc, msg = rng.choice(EXCEPTIONS)
        self.exc = exc.format(E=self.repo.error_class)
        self.msg = msg.format(a=rng.randint(0, 9), b=rng.randint(10, 99), n=rng.choice(NOUNS))
        self.passed = rng.randint(80, 900)
        self.steps_done = 0
        self.thoughts = tuple(
            t.format(
                fn=self.fn,
                fn2=self.fn2,
                path=self.path,
                n=rng.choice(NOUNS),
                a=rng.randint(0, 9),
                b=rng.randint(10, 99),
            )
            for t in REASONING
        )
        self.intro = (
            f"You are an autonomous software engineering agent working in a checkout of `{self.repo.name}` "
            f"({self.repo.summary.lower()}) at `{self.root}`. Solve the user's request with the smallest correct "
            "change. Explore before editing, run the tests to verify your work, and never modify tests to make "
            "them pass unless asked. When you are done, reply with a short summary of the cause and the fix."
        )

    tool_schemas = staticmethod(coding_tools)

    def task(self) -> str:
        return self.rng.choice(CODING_TASKS[self.lang]).format(
            test=self.test,
            exc=self.exc,
            msg=self.msg,
            path=self.path,
            fn=self.fn,
            repo=self.repo.name,
            testfile=self.testfile,
            root=self.root,
            symptom=self.rng.choice(CODING_SYMPTOMS),
        )

    def followup(self) -> str:
        return self.rng.choice(CODING_FOLLOWUPS[self.lang])

    def meta(self) -> dict[str, Any]:
        return {"repo": self.repo.name, "harness": self.harness}

    def variant(self) -> str:
        return self.harness

    # outputs ---------------------------------------------------------------------------

    def _shell(self, output: str, code: int = 0) -> str:
        if self.exit_style == 0:
            return f"exit_code: {code}\n--- output ---\n{output}"
        return f"{output}\n[process exited with code {code}]"

    def _view(self, budget: int) -> tuple[str, str, int, int]:
        """A module's path and a run of its numbered lines (cat -n), with the first and last line."""
        target = self.repo.modules.index(self.module)
        index = target if self.rng.random() < 0.6 else self.rng.randrange(len(self.repo.sources))
        numbered = self.repo.sources[index][1]
        start = self.rng.randrange(max(1, int(len(numbered) * (1 - budget / numbered.chars))))
        text = numbered.take(start, budget)
        return f"{self.repo.name}/{self.repo.modules[index]}.py", text, start + 1, start + text.count("\n") + 1

    def _numbered(self, text: str, budget: int) -> tuple[str, int, int]:
        lines = text.split("\n")
        start = self.rng.randrange(max(1, len(lines) - 20))
        chosen = _fit_lines(lines, start, budget)
        numbered = "\n".join(f"{start + i + 1:>6}\t{line}" for i, line in enumerate(chosen))
        return numbered, start + 1, start + len(chosen)

    def _listing(self, budget: int) -> tuple[str, str]:
        if self.rng.random() < 0.5:
            return f"ls -la {self.repo.name}", self.repo.ls_text
        return "find . -type f -not -path './.git/*'", self.repo.find_lines.take(0, max(budget, 400))

    def _grep(self, budget: int) -> str:
        lines = self.repo.grep_lines
        return lines.take(self.rng.randrange(len(lines)), budget)

    def _traceback(self, frames: int) -> str:
        chosen = self.rng.sample(self.repo.frames, min(frames, len(self.repo.frames)))
        body = "\n".join(chosen).replace("@ROOT@", self.root)
        return f"Traceback (most recent call last):\n{body}\n{self.exc}: {self.msg}"

    def _pytest(self, budget: int, failing: int) -> str:
        rng = self.rng
        total = self.passed + failing + rng.randint(0, 12)
        head = (
            "============================= test session starts ==============================\n"
            f"platform linux -- Python 3.11.{rng.randint(2, 9)}, pytest-8.{rng.randint(0, 3)}.{rng.randint(0, 2)}, "
            f"pluggy-1.5.0\nrootdir: {self.root}\nconfigfile: pyproject.toml\nplugins: cov-5.0.0, timeout-2.3.1\n"
            f"collected {total} items\n"
        )
        verbose = budget > 9000 and rng.random() < 0.6
        pool = self.repo.verbose_lines if verbose else self.repo.progress_lines
        reserve = failing * 900 + 400
        body = pool.take(rng.randrange(len(pool)), budget - reserve - len(head))
        failures = []
        for _ in range(failing):
            test_unit = rng.choice(self.repo.test_units).split("\n\n\n")[0]
            lines = test_unit.split("\n")
            first = next((i for i, ln in enumerate(lines) if ln.lstrip().startswith("assert")), len(lines) - 1)
            marked = "\n".join((">   " if i == first else "    ") + ln for i, ln in enumerate(lines[: first + 1]))
            name = re.search(r"def (\w+)", test_unit)
            title = name.group(1) if name else "test_case"
            failures.append(
                f"{'_' * 30} {title} {'_' * 30}\n\n{marked}\n"
                f"E       {self.exc}: {self.msg}\n\n{self.testfile}:{rng.randint(10, 300)}: {self.exc}\n"
                "----------------------------- Captured log call ------------------------------\n"
                f"WARNING  {self.repo.name}.{self.module}:{self.module}.py:{rng.randint(20, 400)} "
                f"attempt 1 failed (timed out); retrying in 0.5s"
            )
        tail = f"{failing} failed, " if failing else ""
        seconds = rng.uniform(0.8, 40)
        summary = f"========== {tail}{self.passed} passed, {rng.randint(0, 9)} skipped in {seconds:.2f}s =========="
        parts = [head, body]
        if failures:
            parts.append(
                "=================================== FAILURES ===================================\n"
                + "\n".join(failures)
            )
            parts.append(
                "=========================== short test summary info ============================\n"
                + "\n".join(f"FAILED {self.test} - {self.exc}: {self.msg}" for _ in range(failing))
            )
        parts.append(summary)
        return "\n".join(parts)

    def _diff(self, budget: int) -> str:
        rng = self.rng
        unit = rng.choice(self.repo.units).split("\n")
        at = rng.randint(10, 300)
        context = unit[: max(3, min(len(unit), budget // 60))]
        cut = max(1, len(context) // 2)
        body = [" " + ln for ln in context[:cut]]
        body += [
            "-" + context[cut] if cut < len(context) else "-    pass",
            "+    if value is None:",
            "+        return None",
        ]
        body += [" " + ln for ln in context[cut + 1 :]]
        return (
            f"diff --git a/{self.path} b/{self.path}\nindex {rng.getrandbits(28):07x}..{rng.getrandbits(28):07x} "
            f"100644\n--- a/{self.path}\n+++ b/{self.path}\n@@ -{at},{len(context)} +{at},{len(context) + 1} @@\n"
            + "\n".join(body)
        )

    # steps -----------------------------------------------------------------------------

    def step(self, run: Run, budget: int, progress: float) -> None:
        rng = self.rng
        if progress < 0.12:
            weights = {"explore": 5, "grep": 3, "read": 2}
        elif progress < 0.45:
            weights = {"read": 4, "grep": 3, "test": 2, "repro": 2, "explore": 1}
        elif progress < 0.8:
            weights = {"edit": 3, "test": 3, "read": 2, "grep": 1, "repro": 1}
        else:
            weights = {"test": 4, "diff": 2, "read": 1, "edit": 1}
        kind = rng.choices(list(weights), weights=list(weights.values()))[0]
        parallel = kind in ("read", "grep") and rng.random() < 0.2
        count = rng.randint(2, 3) if parallel else 1
        calls = [self._call(kind, budget // count, progress) for _ in range(count)]
        opened = calls[0][1].get("path", self.path) if count == 1 else self.path
        say = rng.choice(CODING_SAY[kind]).format(path=opened, fn=self.fn, cause=self.cause)
        if self.steps_done == 0:  # nothing has been seen yet, so no reasoning about outputs
            thought = f"The task points at `{self.fn}` in `{self.path}`; I'll get oriented before changing anything."
        else:
            thought = " ".join(rng.sample(self.thoughts, rng.randint(1, 4)))
        self.steps_done += 1
        run.act(say, calls, thought)

    def _call(self, kind: str, budget: int, progress: float) -> Call:
        rng, shell = self.rng, self.harness == "shell"
        if kind == "explore":
            command, output = self._listing(budget)
            return "bash", {"command": command}, self._shell(output)
        if kind == "read":
            path, text, first, last = self._view(budget)
            if shell:
                if rng.random() < 0.5:
                    index = rng.randrange(len(self.repo.sources))
                    path = f"{self.repo.name}/{self.repo.modules[index]}.py"
                    return "bash", {"command": f"cat {path}"}, self._shell(self.repo.sources[index][0].take(0, budget))
                return "bash", {"command": f"cat -n {path} | sed -n '{first},{last}p'"}, self._shell(text)
            return "view_file", {"path": path, "start_line": first, "end_line": last}, text
        if kind == "grep":
            pattern = rng.choice((self.fn, self.fn2, rng.choice(NOUNS) + "_id", self.repo.error_class))
            output = self._grep(budget)
            if shell:
                return "bash", {"command": f"grep -rn '{pattern}' {self.repo.name} tests"}, self._shell(output)
            return "search", {"pattern": pattern, "path": "."}, output
        if kind == "test":
            failing = 0 if progress > 0.8 else rng.choice((0, 1, 1, 2, 3))
            output = self._pytest(budget, failing)
            target = rng.choice((self.testfile, self.test, ""))
            if shell:
                return (
                    "bash",
                    {"command": f"python -m pytest {target} -x -q".replace("  ", " ")},
                    self._shell(output, 1 if failing else 0),
                )
            return "run_tests", {"target": target}, output
        if kind == "repro":
            script = (
                f"from {self.repo.name}.{self.module} import {self.fn}\n\n"
                f"print({self.fn}(''))\nprint({self.fn}('  x  '))\n"
            )
            output = self._traceback(rng.randint(2, 6 + budget // 900))
            return (
                "bash",
                {"command": f"cat > /tmp/repro.py << 'EOF'\n{script}EOF\npython /tmp/repro.py"},
                self._shell(output, 1),
            )
        if kind == "edit":
            unit = rng.choice(self.repo.units).split("\n")
            i = rng.randrange(max(1, len(unit) - 2))
            old = "\n".join(unit[i : i + 2])
            new = old + "\n        if value is None:\n            return None"
            snippet, _, _ = self._numbered("\n".join(unit), min(budget, 1600))
            if shell:
                command = (
                    f"python - << 'EOF'\nfrom pathlib import Path\np = Path('{self.path}')\n"
                    f"s = p.read_text()\ns = s.replace({old!r}, {new!r}, 1)\np.write_text(s)\nEOF"
                )
                return "bash", {"command": command}, self._shell("")
            note = f"Edited {self.path}: 1 replacement. The edited region now reads:\n{snippet}"
            return "str_replace", {"path": self.path, "old_str": old, "new_str": new}, note
        return "bash", {"command": "git diff"}, self._shell(self._diff(budget))

    def final(self, run: Run) -> None:
        text = CODING_FINAL[self.lang].format(
            path=self.path,
            cause=self.cause,
            fn=self.fn,
            testfile=self.testfile,
            passed=self.passed + 1,
            skipped=self.rng.randint(0, 9),
            files=self.rng.randint(1, 3),
        )
        run.gpt(text, "All tests pass now and the diff is small; time to summarize.")
