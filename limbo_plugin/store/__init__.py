"""The record store: where episode records are written, read, merged and kept.

Below both the reports and the plugin, so the one reader (:mod:`.read`: one JSONL scan, one
schema-version check, duplicates dropped by identity and said), the one writer
(:class:`~.files.RecordWriter`) and the file custody (:mod:`.custody`) serve every process that
touches a records file: the controller (writing and resuming), ``limbo summary``, ``gate``,
``runs``, ``merge`` and ``report``.
"""
