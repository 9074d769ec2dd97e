"""DCGM inputs: the field table shared by every DCGM format, and ``dcgmi dmon`` text."""
