"""A small MovieLens-100k folder written by a test: users, items, and ratings from latent tastes (learnable)."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def write_movielens(
    folder: Path, users: int = 60, items: int = 40, per_user: int = 16, seed: int = 0
) -> tuple[Path, np.ndarray]:
    """Write ``u.user``, ``u.item``, ``u.occupation``, ``u1.base`` and ``u1.test`` (every fifth rating) into
    ``folder``; returns it and the int64 [R, 4] ratings ``(user, item, rating, time)`` (1-based ids, as the files).

    Each user and item has a random taste in {-1, 1}^2; a rating is 3 plus their agreement, plus noise, in 1..5,
    so a model that learns a row per node predicts it better than the mean."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True)
    (folder / "u.occupation").write_text("artist\nwriter\n")
    (folder / "u.user").write_text(
        "".join(f"{u + 1}|{20 + u % 40}|{'MF'[u % 2]}|{('artist', 'writer')[u % 2]}|0\n" for u in range(users))
    )
    genres = ["|".join("1" if g == i % 19 else "0" for g in range(19)) for i in range(items)]
    (folder / "u.item").write_text(
        "".join(f"{i + 1}|Film {i}|01-Jan-1995||http://x|{genres[i]}\n" for i in range(items))
    )
    user_taste = rng.choice([-1.0, 1.0], size=(users, 2))
    item_taste = rng.choice([-1.0, 1.0], size=(items, 2))
    rows = []
    for u in range(users):
        for i in rng.choice(items, size=per_user, replace=False):
            value = 3.0 + user_taste[u] @ item_taste[i] + rng.normal(0, 0.3)
            rows.append((u + 1, int(i) + 1, int(np.clip(np.rint(value), 1, 5)), int(rng.integers(8.7e8, 8.9e8))))
    ratings = np.array(rows, dtype=np.int64)
    test = np.arange(ratings.shape[0]) % 5 == 0
    for name, part in (("u1.base", ratings[~test]), ("u1.test", ratings[test])):
        (folder / name).write_text("".join("\t".join(map(str, r)) + "\n" for r in part.tolist()))
    return folder, ratings
