"""The compress run's orchestration: prepare a chunk, finish each row, commit rows in order, resumably."""
