"""PyTorch profiler / Kineto Chrome-trace JSON."""
