"""``dcgmi dmon`` text (DCGM 1.x/2.x ``# Entity``, 3.x ``#Entity``, 4.x wider columns)."""
