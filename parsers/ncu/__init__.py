"""Nsight Compute inputs: CSV pages (raw, details), console logs and ``.ncu-rep`` reports."""
