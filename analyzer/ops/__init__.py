"""Every PyTorch op on the roofline from a profiler trace (``docs/formulas.md#ops``): kernels attributed to
the ops that launched them (:mod:`.attribution`), FLOPs and bytes per op from its recorded shapes
(:mod:`.formulas`), and a verdict per op signature."""
