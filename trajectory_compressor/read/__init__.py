"""Reading input records: files, directories and datasets, as a stream of `SourceRecord`."""
