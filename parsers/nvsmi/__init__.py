"""nvidia-smi streams: ``--query-gpu ... --format=csv`` and ``nvidia-smi dmon``."""
