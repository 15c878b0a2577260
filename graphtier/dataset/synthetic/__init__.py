"""The synthetic graph generator (``graphtier generate``): a homogeneous power-law graph with planted classes
(``generate``), the typed MAG-like graph (``synthetic_mag``), their options (``synthetic_options``), the model's
random draws (``synthetic_draws``) and numba kernels."""
