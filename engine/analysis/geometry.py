"""From form to step (docs/geometries.md): a coefficient G turned into a step by each geometry, and which route
classes an update descended along. Pure numpy functions of matrices; nothing here reads a run.

G = −∂L/∂W is the form's coefficient (a covector); steepest descent under a norm ‖·‖ moves along
argmax_{‖D‖≤1} ⟨G, D⟩. Per weight matrix:

    euclidean   G                   Frobenius norm (SGD)
    sign        sign(G)             max-entry norm, ℓ∞ (sign descent: Adam with β1 = β2 = 0)
    adam        G / (√v̂ + ε)        diagonal metric with the run's own bias-corrected second moment v̂ (AdamW)
    spectral    U Vᵀ, G = U Σ Vᵀ    spectral norm (Muon; its Newton–Schulz iteration approximates U Vᵀ)

Each direction comes with its singular values, its effective rank (Roy & Vetterli 2007, "The effective
rank: a measure of effective dimensionality", EUSIPCO: exp of the Shannon entropy of the singular values
normalised to sum 1; it is k for k equal non-zero singular values and 1 for a rank-one matrix), and its
cosine with G and with the update ΔW the run applied. A vector (bias, gain) is taken as one row.

Route-class shares: to first order the probe loss changes over an update ΔW by ΔL ≈ −Σ_W ⟨G_W, ΔW⟩, and
since G_W = Σ_c G_{W,c} (its route classes, docs/route-classes.md), the decrease splits exactly by linearity:
−ΔL ≈ Σ_W Σ_c ⟨G_{W,c}, ΔW⟩. G is taken on the run's fixed probe batch at the start of the interval.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

GEOMETRIES = ("euclidean", "sign", "adam", "spectral")
LABELS = {"euclidean": "Euclidean: G (SGD)", "sign": "ℓ∞: sign G (sign descent)",
          "adam": "diagonal: G/(√v̂+ε) (AdamW)", "spectral": "spectral: U Vᵀ (Muon)"}


@dataclass(frozen=True, eq=False)
class Direction:
    """One geometry's step direction for one weight, with the numbers the view and the CSV show."""

    geometry: str
    matrix: np.ndarray           # the direction, in the weight's shape (float64)
    singular_values: np.ndarray  # descending
    effective_rank: float
    norm: float                  # Frobenius
    cos_G: float                 # cosine with G
    cos_dW: float                # cosine with the applied update ΔW (NaN when there is none)


def as_matrix(a: np.ndarray) -> np.ndarray:
    """A vector (bias, gain) as one row. (numpy only: the GUI thread imports this module, and
    engine.coefficients, which has the same helpers, imports torch.)"""
    a = np.asarray(a)
    return a.reshape(1, -1) if a.ndim == 1 else a


def inner(a: np.ndarray, b: np.ndarray) -> float:
    """⟨a, b⟩ = trace(aᵀ b), in float64 (`a` may be kept as its rows: engine.coefficients.RowSparse)."""
    from ..coefficients.rows import inner as rows_inner

    return rows_inner(a, b)


def norm(a: np.ndarray) -> float:
    return float(np.sqrt(inner(a, a)))


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    na, nb = norm(a), norm(b)
    return inner(a, b) / (na * nb) if na > 0 and nb > 0 else float("nan")


def effective_rank(singular_values: np.ndarray) -> float:
    """exp(−Σ p_i log p_i) with p = σ / Σσ (Roy & Vetterli 2007); 0 for the zero matrix."""
    s = np.asarray(singular_values, dtype=np.float64)
    total = s.sum()
    if total <= 0:
        return 0.0
    p = s[s > 0] / total
    return float(np.exp(-np.sum(p * np.log(p))))


def polar(G: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(U Vᵀ, singular values of G, singular values of U Vᵀ) from one reduced SVD of G; round-off is judged
    by G's own precision (a float32 coefficient's noise floor is ~1e-7 of its largest singular value)."""
    dtype = np.asarray(G).dtype
    eps = np.finfo(dtype if np.issubdtype(dtype, np.floating) else np.float64).eps
    U, s, Vh = np.linalg.svd(as_matrix(np.asarray(G, np.float64)), full_matrices=False)
    keep = s > (s[0] if s.size else 0.0) * max(U.shape[0], Vh.shape[1]) * eps
    return (U[:, keep] @ Vh[keep]).reshape(np.shape(G)), s, keep.astype(np.float64)


def spectral_direction(G: np.ndarray) -> np.ndarray:
    """The polar factor U Vᵀ of G from its reduced SVD, same shape as G: every singular value 1, except that
    singular values at round-off level (below σ_max · max(rows, cols) · ε of G's dtype, numpy's matrix_rank
    tolerance)
    count as zero, since their singular vectors are arbitrary; Muon's Newton–Schulz leaves them near 0 too."""
    return polar(G)[0]


def adam_direction(G: np.ndarray, v_hat: np.ndarray, eps: float) -> np.ndarray:
    """G / (√v̂ + ε): Adam's step for the gradient −G under its own diagonal metric (sign kept as G's)."""
    return np.asarray(G, np.float64) / (np.sqrt(np.asarray(v_hat, np.float64)) + eps)


def directions(G: np.ndarray, v_hat: np.ndarray | None = None, eps: float = 1e-8,
               spectral: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """geometry -> direction for G; `adam` only when the run's second moment v̂ is given (`spectral`: U Vᵀ
    when already computed)."""
    G = np.asarray(G, dtype=np.float64)
    out = {"euclidean": G, "sign": np.sign(G)}
    if v_hat is not None:
        out["adam"] = adam_direction(G, v_hat, eps)
    out["spectral"] = spectral_direction(G) if spectral is None else spectral
    return out


def describe(geometry: str, D: np.ndarray, G: np.ndarray, dW: np.ndarray | None,
             singular_values: np.ndarray | None = None) -> Direction:
    s = np.linalg.svd(as_matrix(D), compute_uv=False) if singular_values is None else singular_values
    return Direction(geometry, np.asarray(D, np.float64), s, effective_rank(s), norm(D),
                     cosine(D, G), cosine(D, dW) if dW is not None else float("nan"))


def geometries(G: np.ndarray, dW: np.ndarray | None = None, v_hat: np.ndarray | None = None,
               eps: float = 1e-8) -> list[Direction]:
    """Every geometry's direction for G, described (see the module docstring), in GEOMETRIES order. One SVD
    of G gives the Euclidean and the spectral spectra and U Vᵀ; sign and Adam need one spectrum each."""
    U_Vt, s_G, s_polar = polar(G)
    G = np.asarray(G, dtype=np.float64)
    known = {"euclidean": s_G, "spectral": s_polar}
    found = directions(G, v_hat, eps, spectral=U_Vt)
    return [describe(name, D, G, dW, known.get(name)) for name, D in found.items()]


def class_shares(classes: Mapping[str, np.ndarray], dW: np.ndarray) -> dict[str, float]:
    """route class -> ⟨G_c, ΔW⟩: its part of the first-order decrease ⟨G, ΔW⟩ = Σ_c ⟨G_c, ΔW⟩."""
    return {name: inner(Gc, dW) for name, Gc in classes.items()}


# A share is a part over the sum of the parts. When the parts nearly cancel, the sum is noise beside them
# and the quotient meaningless (a share of 22330.9% was shown for ⟨G, ΔW⟩ ≈ 0): below this fraction of
# Σ|part|, no share is given.
SHARE_DEFINED = 0.01


def fractions(parts: Mapping[str, float]) -> dict[str, float] | None:
    """part -> its fraction of the parts' sum; None when the sum is under SHARE_DEFINED of Σ|part| (zero
    parts included), where the parts cancel and a share says nothing."""
    total, size = sum(parts.values()), sum(abs(v) for v in parts.values())
    if not size or abs(total) < SHARE_DEFINED * size:
        return None
    return {k: v / total for k, v in parts.items()}


def why_no_shares(parts: Mapping[str, float]) -> str:
    """The one line said instead of the shares that `fractions` does not give."""
    total, size = sum(parts.values()), sum(abs(v) for v in parts.values())
    if not size:
        return "every part is 0, so no share is defined"
    return (f"the parts cancel: their sum {total:.3g} is under {SHARE_DEFINED:.0%} of the sum of their sizes "
            f"{size:.3g}, so a share of it would be meaningless; the parts themselves are shown")


def rank_routes(shares: Mapping[str, Mapping[str, float]]) -> list[tuple[str, float]]:
    """Per-weight shares (weight -> class -> share) summed over the weights per class, largest first: the
    routes the update descended along, over the whole model."""
    total: dict[str, float] = {}
    for per_class in shares.values():
        for name, value in per_class.items():
            total[name] = total.get(name, 0.0) + value
    return sorted(total.items(), key=lambda kv: -kv[1])


__all__ = ["GEOMETRIES", "LABELS", "Direction", "as_matrix", "inner", "norm", "cosine", "effective_rank",
           "polar", "spectral_direction", "adam_direction", "directions", "describe", "geometries", "class_shares",
           "SHARE_DEFINED", "fractions", "why_no_shares", "rank_routes"]
