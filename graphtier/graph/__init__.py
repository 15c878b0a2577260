"""Graph topology algorithms over the dataset CSC: hotness scores, reordering and degree statistics."""
