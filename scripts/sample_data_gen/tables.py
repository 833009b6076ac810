"""The data analysis family's tables: fictional CSV files, rendered once as pandas-style text.

Why pre-built: every `head()`, `sort_values()` or SQL result in a run is a slice of one of these
tables, so a row costs a join, not a DataFrame.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from .fragments import LinePool, words

# Data analysis: fictional tables, rendered once as CSV and as pandas-style text.
# Each table's output tokenizes differently (numbers are dense, padding is cheap): the last item
# is its measured characters per token, which keeps row lengths on target.
DATASETS: tuple[tuple[str, tuple[str, ...], float], ...] = (
    (
        "sales_2023.csv",
        words("order_id order_date region store_id product category units unit_price discount revenue"),
        3.08,
    ),
    (
        "sensor_readings.csv",
        words("sensor_id timestamp site temp_c humidity_pct pressure_hpa battery_v status"),
        2.81,
    ),
    (
        "customers_churn.csv",
        words("customer_id signup_date plan tenure_months monthly_charges support_tickets last_login_days churned"),
        3.77,
    ),
    (
        "taxi_trips_march.csv",
        words("trip_id pickup_time pickup_zone dropoff_zone distance_km fare tip payment_type passengers"),
        3.02,
    ),
)
REGIONS = ("North", "South", "East", "West", "Central")
CATEGORIES = ("Outdoor", "Kitchen", "Office", "Garden", "Toys", "Electronics")
ZONES = ("Harbor", "Midtown", "Old Town", "Airport", "University", "Riverside", "Market", "Northgate")


def is_label(value: str) -> bool:
    """A categorical cell (a region, a plan), as opposed to an id, a date or a number."""
    return value.replace("-", "").isalpha() and value != "NaN"


def _data_row(rng: random.Random, file: str, i: int) -> tuple[str, ...]:
    day = f"2023-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    if file.startswith("sales"):
        units, price, disc = rng.randint(1, 40), round(rng.uniform(2, 250), 2), rng.choice((0, 0, 0.05, 0.1, 0.2))
        return (
            str(100000 + i),
            day,
            rng.choice(REGIONS),
            f"S{rng.randint(1, 48):03d}",
            f"P-{rng.randint(100, 999)}",
            rng.choice(CATEGORIES),
            str(units),
            f"{price:.2f}",
            str(disc),
            f"{units * price * (1 - disc):.2f}",
        )
    if file.startswith("sensor"):
        status = rng.choice(("ok", "ok", "ok", "ok", "degraded", "offline"))
        temp = "NaN" if status == "offline" else f"{rng.gauss(18, 7):.2f}"
        return (
            f"TS-{rng.randint(1, 64):03d}",
            f"{day} {rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:00",
            rng.choice(("plant-a", "plant-b", "depot", "roof")),
            temp,
            f"{rng.uniform(20, 95):.1f}",
            f"{rng.gauss(1012, 6):.1f}",
            f"{rng.uniform(3.1, 4.2):.2f}",
            status,
        )
    if file.startswith("customers"):
        plan = rng.choice(("basic", "standard", "premium", "family"))
        return (
            f"C{200000 + i}",
            day,
            plan,
            str(rng.randint(1, 72)),
            f"{rng.uniform(9, 120):.2f}",
            str(rng.choice((0, 0, 0, 1, 1, 2, 3, 5, 8))),
            str(rng.randint(0, 180)),
            str(int(rng.random() < 0.27)),
        )
    return (
        f"T{7000000 + i}",
        f"2023-03-{rng.randint(1, 31):02d} {rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}",
        rng.choice(ZONES),
        rng.choice(ZONES),
        f"{rng.expovariate(0.25):.2f}",
        f"{rng.uniform(4, 80):.2f}",
        f"{rng.choice((0, 0, 1, 2, 3.5, 5)):.2f}",
        rng.choice(("card", "card", "cash", "app")),
        str(rng.choice((1, 1, 1, 2, 2, 3, 4))),
    )


@dataclass(frozen=True)
class Dataset:
    """A fictional table: its CSV lines and a pandas-style rendering, sliced to fit a budget."""

    file: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    table_header: str
    table_lines: LinePool
    total_rows: int
    chars_per_token: float
    groups: tuple[str, ...]
    pivot_lines: LinePool  # a day-by-group table, for pivots of any length


def build_dataset(rng: random.Random, file: str, columns: tuple[str, ...], per_token: float) -> Dataset:
    rows = tuple(_data_row(rng, file, i) for i in range(1500))
    widths = [max(len(c), *(len(r[j]) for r in rows[:200])) + 2 for j, c in enumerate(columns)]
    header = "      " + "".join(c.rjust(w) for c, w in zip(columns, widths, strict=True))
    table = tuple(f"{i:<6d}" + "".join(v.rjust(w) for v, w in zip(r, widths, strict=True)) for i, r in enumerate(rows))
    groups = tuple(sorted({r[2] for r in rows}))[:6]
    pivot = [f"{'date':<12}" + "".join(g.rjust(14) for g in groups)]
    pivot += [
        f"2023-{m:02d}-{d:02d}  " + "".join(f"{rng.uniform(0, 9000):>14.2f}" for _ in groups)
        for m in range(1, 13)
        for d in range(1, 29)
    ]
    return Dataset(
        file=file,
        columns=columns,
        rows=rows,
        table_header=header,
        table_lines=LinePool(table),
        total_rows=rng.randint(12_000, 480_000),
        chars_per_token=per_token,
        groups=groups,
        pivot_lines=LinePool(pivot),
    )
