"""The cache-policy simulator: the replayed trace of feature reads played against static, LRU, LFU and Belady caches
(``simulate``, numba ``_kernels``, plain-Python ``reference``)."""
