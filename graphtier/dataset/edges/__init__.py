"""What a dataset holds per edge and per time, beside its CSC: edge feature and label columns (``edge_data``), the edge
table in read order (``edge_rows``), edge times and each list's time order (``edge_time``), node times
(``node_time``), the link split and its files (``link_split``, ``edge_split``), and the EdgeBank baseline
(``edgebank``), with their numba kernels."""
