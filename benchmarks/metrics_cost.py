"""Cost of the collapse metrics: Vendi dual vs naive eigendecomposition, and the embedding partitioner's
encoder overhead against the raw batched ``encode``.

Run: ``python benchmarks/metrics_cost.py [--n 2000] [--d 384] [--texts 512] [--repeats 3]``
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from collapse_probe.metrics import EmbeddingPartitioner, load_paraphrase_pairs, vendi_score


def best_of(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def bench_vendi(n: int, d: int, repeats: int) -> None:
    X = np.random.default_rng(0).normal(size=(n, d))
    v_dual = vendi_score(X, q=1, method="dual")
    v_naive = vendi_score(X, q=1, method="naive")
    t_dual = best_of(lambda: vendi_score(X, q=1, method="dual"), repeats)
    t_naive = best_of(lambda: vendi_score(X, q=1, method="naive"), repeats)
    print(f"vendi {n}x{d}: dual {t_dual * 1e3:.1f} ms, naive {t_naive * 1e3:.1f} ms, speed-up {t_naive / t_dual:.1f}x")
    print(f"  same score: dual {v_dual:.6f} vs naive {v_naive:.6f} (|diff| {abs(v_dual - v_naive):.2e})")


def bench_embedding(n_texts: int, repeats: int) -> None:
    base = [t for p in load_paraphrase_pairs() for t in (p["a"], p["b"])]
    texts = [f"{base[i % len(base)]} (reply {i})" for i in range(n_texts)]  # all distinct
    part = EmbeddingPartitioner(device="cpu")
    enc = part.encoder
    part.embed(texts[:64])  # warm-up

    def raw() -> None:
        enc.encode(texts, batch_size=part.batch_size, convert_to_numpy=True, normalize_embeddings=True,
                   show_progress_bar=False)  # fmt: skip

    t_raw = best_of(raw, repeats)
    t_part = best_of(lambda: part.embed(texts), repeats)
    print(
        f"embedding {n_texts} distinct texts: raw encode {n_texts / t_raw:.0f} texts/s, "
        f"EmbeddingPartitioner.embed {n_texts / t_part:.0f} texts/s, ratio (partitioner/raw time) {t_part / t_raw:.2f}"
    )
    dup = texts[: n_texts // 4] * 4  # sampled responses repeat; each distinct text is encoded once
    t_dup = best_of(lambda: part.embed(dup), repeats)
    t_dup_raw = best_of(
        lambda: enc.encode(dup, batch_size=part.batch_size, convert_to_numpy=True, normalize_embeddings=True,
                           show_progress_bar=False),
        repeats,
    )  # fmt: skip
    print(
        f"embedding {len(dup)} texts with 4 copies each: raw {len(dup) / t_dup_raw:.0f} texts/s, "
        f"partitioner {len(dup) / t_dup:.0f} texts/s, speed-up {t_dup_raw / t_dup:.2f}x"
    )
    groups = [texts[i : i + 32] for i in range(0, 256, 32)]
    t_cluster = best_of(lambda: part.partition_many(groups), repeats)
    print(f"partition_many: {len(groups)} states x 32 responses in {t_cluster * 1e3:.0f} ms")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--d", type=int, default=384)
    ap.add_argument("--texts", type=int, default=512)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    bench_vendi(args.n, args.d, args.repeats)
    bench_embedding(args.texts, args.repeats)


if __name__ == "__main__":
    main()
