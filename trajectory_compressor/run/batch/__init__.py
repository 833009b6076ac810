"""`--batch`: summaries through a provider's batch API, in rounds, before the run finishes from the cache."""
