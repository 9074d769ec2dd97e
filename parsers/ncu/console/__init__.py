"""Nsight Compute console logs (ncu's default stdout, no ``--csv``)."""
