"""Every PyTorch op on the roofline from a profiler trace (``docs/formulas.md#ops``): kernels attributed to
the ops that launched them (:mod:`.attribution`), FLOPs and bytes per op from its recorded shapes (the
table in :mod:`.formulas`), a verdict per op signature (:mod:`.verdicts`), ranked op findings
(:mod:`.findings`). :func:`.analysis.analyze_ops` gives the document's ``ops`` and ``ops_coverage``."""
