"""Graph topology: CSC construction, degree statistics and parallel array checks."""
