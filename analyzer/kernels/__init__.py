"""The per-kernel roofline core: facts, roofline, labels, evidence, lint, families, advice."""
