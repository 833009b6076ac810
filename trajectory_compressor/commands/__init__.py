"""The commands besides `compress`: `analyze` (what a run would do) and `merge` (shards into one output)."""
