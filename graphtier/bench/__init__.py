"""Benchmarks as library functions returning JSON-able dicts: ``graphtier bench`` prints them, ``benchmarks/*.py`` reuse them."""
