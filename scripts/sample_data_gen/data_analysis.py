"""The data analysis family: exploring a fictional table with a Python sandbox and a SQL tool.

Why its own module: its runs follow a fixed opening (load, info, describe), then vary, with one
deliberate KeyError and its retry, and one chart near the end; tool outputs are dense tables.
"""

from __future__ import annotations

import random
from typing import Any

from .family import Family
from .pools import pools
from .run import Call, Run
from .tables import is_label
from .tools import data_analysis_tools

DATA_TASKS = {
    "en": (
        "I uploaded `data/{file}`. Can you give me an overview of the data quality and the main patterns? "
        "In particular I care about `{col}`.",
        "Using `data/{file}`, find what drives `{col}` and produce a short report with one chart. Please check "
        "for missing values and outliers first.",
        "Quick analysis request: compare `{col}` across groups in `data/{file}` and tell me if the differences "
        "are meaningful. A table is fine, no need for fancy plots.",
    ),
    "fr": ("J'ai déposé `data/{file}`. Peux-tu analyser la colonne `{col}` et me dire ce qui ressort ?",),
    "zh": (
        "我上传了 `data/{file}`。请分析 `{col}` 的分布和主要影响因素，先检查缺失值和异常值，最后给出简短结论。",
        "请用 `data/{file}` 比较不同分组的 `{col}`，判断差异是否显著，并生成一张图表。",
    ),
}
DATA_FOLLOWUPS = {
    "en": (
        "Can you also break it down by month?",
        "Ignore rows with status 'offline', they are test devices.",
        "Please save the final table as CSV too.",
        "Use the median rather than the mean, the data is skewed.",
    ),
    "fr": ("Peux-tu aussi faire la répartition par mois ?",),
    "zh": ("能否再按月份拆分一下？", "请使用中位数而不是平均值，数据是偏态的。"),
}
DATA_SAY = {
    "look": ("Let me load the file and look at the first rows.", "First, a look at the raw data."),
    "info": ("Checking column types and missing values.", "Let me check the schema and null counts."),
    "describe": ("Summary statistics for the numeric columns.", "Let me get descriptive statistics."),
    "group": ("Now let me aggregate by group.", "Grouping to compare segments."),
    "pivot": ("Let me pivot by day to see the trend.", "A day-by-group pivot next."),
    "error": ("Let me compute the breakdown.", "Computing the per-group figures."),
    "sql": ("The same data is in the warehouse; let me query it there.", "Let me cross-check with SQL."),
    "plot": ("Let me make the chart.", "Plotting the trend."),
    "dump": ("Let me look at the top rows sorted by the target.", "Printing the largest values to inspect outliers."),
}
DATA_REASONING = {
    "look": (
        "I should look at the raw rows before computing anything.",
        "The file may be large, so I'll start with the shape and the first rows.",
    ),
    "info": (
        "Some numeric columns may have been read as strings; I'll check dtypes and null counts.",
        "The null counts decide whether I can aggregate directly or must impute first.",
    ),
    "describe": (
        "The distribution may be right-skewed, so I want to compare the mean with the median.",
        "The column has some missing values, so the means could be biased; I should report counts too.",
    ),
    "group": (
        "The groups have very different sizes, so percentages are more comparable than raw counts.",
        "There might be duplicated ids; the counts per group will show it.",
    ),
    "pivot": (
        "Dates are stored as strings, so I need to parse them before grouping by day.",
        "A trend over time will show whether the differences between groups are stable.",
    ),
    "error": ("Now the per-group totals.", "Let me get the breakdown the user asked for."),
    "sql": ("The warehouse table should match the CSV; a cross-check will catch export problems.",),
    "plot": (
        "A bar chart of the medians is enough for the report.",
        "I have enough to answer the main question; a chart will make it easier to read.",
    ),
    "dump": ("A few extreme values dominate the totals; I'll look at them separately.",),
    "final": ("I have the numbers for every part of the question; time to write it up.",),
}
DATA_FINAL = {
    "en": "## Summary of `{file}`\n\n- {rows:,} rows, {cols} columns; {missing:.1f}% of `{col}` is missing.\n"
    "- The median `{col}` is {median:.2f}; the top group is **{group}** ({share:.1f}% above the overall median).\n"
    "- {outliers} extreme values (beyond 3 IQR) were excluded from the comparisons.\n"
    "- The month-over-month trend is {trend}.\n\nThe chart is saved at `output/{col}_by_group.png`.",
    "fr": "## Résumé de `{file}`\n\n- {rows:,} lignes, {cols} colonnes ; {missing:.1f} % de `{col}` manquant.\n"
    "- Médiane de `{col}` : {median:.2f} ; groupe principal : **{group}**.\n- Tendance mensuelle : {trend}.",
    "zh": "## `{file}` 分析结论\n\n- 共 {rows:,} 行、{cols} 列；`{col}` 缺失 {missing:.1f}%。\n"
    "- `{col}` 的中位数为 {median:.2f}，表现最好的分组是 **{group}**。\n- 剔除了 {outliers} 个极端值。\n"
    "- 月度趋势：{trend}。",
}
TRENDS = (
    "broadly flat",
    "rising in the second half of the year",
    "seasonal, with a peak in summer",
    "declining since the spring",
)


class DataAnalysis(Family):
    """Exploring a fictional table with a Python sandbox and a SQL tool."""

    name = "data_analysis"
    chars_per_token = (3.8, 3.14)

    def __init__(self, rng: random.Random, lang: str) -> None:
        super().__init__(rng, lang)
        self.data = rng.choice(pools().datasets)
        self.chars_per_token = (3.8, self.data.chars_per_token)
        self.col = rng.choice(self.data.columns[3:])
        self.group_col = self.data.columns[2]
        self.failed_column = ""
        self.queue = ["look", "info", "describe"] if rng.random() < 0.7 else ["look", "info"]
        self.last_kind = ""
        self.plotted = False
        self.errored = False
        categorical = [c for c, v in zip(self.data.columns, self.data.rows[0], strict=True) if is_label(v)]
        self.other_group = rng.choice(categorical)
        self.intro = (
            "You are a data analysis assistant with a Python sandbox (pandas, numpy, matplotlib installed) and "
            "read-only access to the analytics warehouse. Work step by step: inspect the data before drawing "
            "conclusions, state assumptions, and keep answers short and quantitative. Files uploaded by the user "
            "are under `data/`; write outputs under `output/`."
        )

    tool_schemas = staticmethod(data_analysis_tools)

    def task(self) -> str:
        return self.rng.choice(DATA_TASKS[self.lang]).format(file=self.data.file, col=self.col)

    def followup(self) -> str:
        return self.rng.choice(DATA_FOLLOWUPS[self.lang])

    def meta(self) -> dict[str, Any]:
        return {"dataset": self.data.file}

    def _table(self, budget: int, start: int | None = None) -> str:
        if start is None:
            start = self.rng.randrange(len(self.data.table_lines))
        return self.data.table_header + "\n" + self.data.table_lines.take(start, budget)

    def _next_kind(self, budget: int, progress: float) -> str:
        """Load, inspect and describe first; then varied analyses, one chart near the end."""
        if self.queue:
            return self.queue.pop(0)
        if self.failed_column:
            return "group"
        if progress > 0.75 and not self.plotted:
            self.plotted = True
            return "plot"
        kinds = ["pivot", "dump", "sql"] if budget >= 1500 else ["group", "sql", "describe"]
        if not self.errored and budget < 1500:
            kinds.append("error")
        kind = self.rng.choice([k for k in kinds if k != self.last_kind] or kinds)
        self.errored = self.errored or kind == "error"
        return kind

    def step(self, run: Run, budget: int, progress: float) -> None:
        rng = self.rng
        kind = self._next_kind(budget, progress)
        self.last_kind = kind
        calls = [self._call(kind, budget)]
        if kind == "describe" and rng.random() < 0.3:
            calls.append(("list_files", {"path": "data/"}, self._files()))
        thought = rng.choice(DATA_REASONING[kind])
        if self.failed_column and kind == "group":
            thought = (
                f"The KeyError says there is no `{self.failed_column}` column: the real name is "
                f"`{self.col}`. Retrying with the right name."
            )
            self.failed_column = ""
        elif kind == "error":
            self.failed_column = calls[0][1]["code"].split("['")[1].split("']")[0]
        run.act(rng.choice(DATA_SAY[kind]), calls, thought)

    def _files(self) -> str:
        rng = self.rng
        return "\n".join(f"{rng.randint(10, 90_000):>8} KB  data/{d.file}" for d in pools().datasets)

    def _call(self, kind: str, budget: int) -> Call:
        rng, d, f = self.rng, self.data, f"data/{self.data.file}"
        if kind == "look":
            table = self._table(budget, 0)
            shown = table.count("\n")
            code = f"import pandas as pd\n\ndf = pd.read_csv('{f}')\nprint(df.shape)\nprint(df.head({shown}))"
            return "python", {"code": code}, f"({d.total_rows}, {len(d.columns)})\n" + table
        if kind == "info":
            lines = [
                "<class 'pandas.core.frame.DataFrame'>",
                f"RangeIndex: {d.total_rows} entries, 0 to {d.total_rows - 1}",
                f"Data columns (total {len(d.columns)} columns):",
                " #   Column            Non-Null Count   Dtype  ",
                "---  ------            --------------   -----  ",
            ]
            for i, c in enumerate(d.columns):
                value = d.rows[0][i]
                dtype = "int64" if value.isdigit() else "float64" if value.replace(".", "", 1).isdigit() else "object"
                lines.append(f" {i:<3} {c:<17} {d.total_rows - rng.randint(0, 900):>8} non-null   {dtype}")
            lines.append(f"memory usage: {rng.uniform(1, 90):.1f}+ MB")
            code = "df.info()\nprint(df.isna().sum())"
            nulls = "\n".join(f"{c:<18}{rng.choice((0, 0, 0, rng.randint(1, 900)))}" for c in d.columns)
            return "python", {"code": code}, "\n".join(lines) + "\n" + nulls + "\ndtype: int64"
        if kind == "describe":
            cols = [c for c, v in zip(d.columns, d.rows[0], strict=True) if v.replace(".", "", 1).isdigit()][-5:]
            columns = []  # per column: count, mean, std, min, 25%, 50%, 75%, max
            for _ in cols:
                low, high = rng.uniform(0, 10), rng.uniform(20, 5000)
                q1, q2, q3 = sorted(rng.uniform(low, high / 3) for _ in range(3))
                count = float(d.total_rows - rng.randint(0, 900))
                columns.append((count, (q2 + q3) / 2, (q3 - q1) * 1.4, low, q1, q2, q3, high))
            out = ["        " + "".join(c.rjust(18) for c in cols)]
            for i, stat in enumerate(("count", "mean", "std", "min", "25%", "50%", "75%", "max")):
                out.append(f"{stat:<8}" + "".join(f"{values[i]:>18.6f}" for values in columns))
            return "python", {"code": "print(df.describe())"}, "\n".join(out)
        if kind == "group":
            code = (
                f"df['{self.col}'] = pd.to_numeric(df['{self.col}'], errors='coerce')\n"
                f"summary = df.groupby('{self.group_col}')['{self.col}'].agg(['count', 'mean', 'median', 'std'])\n"
                f"print(summary.sort_values('median', ascending=False).to_string())"
            )
            header = f"{self.group_col:<14}{'count':>10}{'mean':>14}{'median':>14}{'std':>14}"
            body = "\n".join(
                f"{g:<14}{rng.randint(900, 90000):>10}{rng.uniform(1, 900):>14.4f}"
                f"{rng.uniform(1, 900):>14.4f}{rng.uniform(1, 300):>14.4f}"
                for g in d.groups
            )
            return "python", {"code": code}, f"{header}\n{body}"
        if kind == "pivot":
            code = (
                f"df['date'] = pd.to_datetime(df['{d.columns[1]}']).dt.date\n"
                f"pivot = df.pivot_table(index='date', columns='{self.group_col}', values='{self.col}', "
                f"aggfunc='sum')\nprint(pivot.to_string())"
            )
            return "python", {"code": code}, d.pivot_lines.lines[0] + "\n" + d.pivot_lines.take(1, budget)
        if kind == "dump":
            table = self._table(budget)
            shown = table.count("\n")
            code = f"print(df.sort_values('{self.col}', ascending=False).head({shown}).to_string())"
            return "python", {"code": code}, table
        if kind == "error":
            wrong = self.col.title().replace("_", "")
            code = f"df.groupby('{self.group_col}')['{wrong}'].sum()"
            frames = "\n".join(
                f'  File "/opt/conda/lib/python3.11/site-packages/pandas/core/{m}.py", line {rng.randint(200, 9000)}, '
                f"in {fn}\n    {src}"
                for m, fn, src in (
                    ("groupby/generic", "__getitem__", "return super().__getitem__(key)"),
                    ("base", "__getitem__", 'raise KeyError(f"Column not found: {key}")'),
                )
            )
            content = (
                f"---------------------------------------------------------------------------\nKeyError"
                f"                                  Traceback (most recent call last)\nCell In[{rng.randint(3, 40)}], "
                f"line 1\n----> 1 {code}\n\n{frames}\nKeyError: 'Column not found: {wrong}'"
            )
            return "python", {"code": code}, content
        if kind == "sql":
            start = rng.randrange(len(d.rows))
            count = max(1, budget // (25 * len(d.columns)))
            rows = [dict(zip(d.columns, row, strict=True)) for row in (d.rows[start:] + d.rows[:start])[:count]]
            query = (
                f"SELECT *\nFROM analytics.{d.file.split('.')[0]}\nWHERE {self.other_group} = "
                f"'{rows[0][self.other_group]}'\nORDER BY {self.col} DESC\nLIMIT {count}"
            )
            return "sql", {"query": query, "limit": count}, rows
        code = (
            f"import matplotlib.pyplot as plt\n\nax = df.groupby('{self.group_col}')['{self.col}'].median().plot"
            f"(kind='bar', figsize=(10, 5))\nax.set_title('{self.col} by {self.group_col}')\n"
            f"plt.tight_layout()\nplt.savefig('output/{self.col}_by_group.png', dpi=120)"
        )
        return "python", {"code": code}, f"<Figure size 1000x500 with 1 Axes>\nSaved output/{self.col}_by_group.png"

    def final(self, run: Run) -> None:
        rng = self.rng
        text = DATA_FINAL[self.lang].format(
            file=self.data.file,
            rows=self.data.total_rows,
            cols=len(self.data.columns),
            col=self.col,
            missing=rng.uniform(0, 8),
            median=rng.uniform(1, 500),
            group=rng.choice(self.data.rows)[2],
            share=rng.uniform(2, 40),
            outliers=rng.randint(0, 60),
            trend=rng.choice(TRENDS),
        )
        run.gpt(text, rng.choice(DATA_REASONING["final"]))
