"""Nsight Systems inputs: SQLite exports, ``.nsys-rep`` (exported through ``nsys``), ``nsys stats``."""
