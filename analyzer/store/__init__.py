"""The fleet dataset on disk: ingest, manifest, partitions, locks and repair (docs/architecture.md)."""
