"""Device ceilings: the built-in table, ``--device`` files, the export's own peaks, per kernel."""
