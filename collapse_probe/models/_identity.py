"""Model identity, where the backends have always imported it from: the fingerprints live in
:mod:`collapse_probe._identity`, at the bottom of the package, so that run directories and every
other layer can name a model without importing the model layer."""

from collapse_probe._identity import (
    NUMERICS_SEP,
    UNVERIFIED,
    bytes_fingerprint,
    clean_url,
    file_fingerprint,
    fingerprint_changes,
    http_fingerprint,
    model_fingerprint,
    numerics_fingerprint,
    participant_fingerprints,
    same_model,
    short,
)

__all__ = [
    "NUMERICS_SEP",
    "UNVERIFIED",
    "bytes_fingerprint",
    "clean_url",
    "file_fingerprint",
    "fingerprint_changes",
    "http_fingerprint",
    "model_fingerprint",
    "numerics_fingerprint",
    "participant_fingerprints",
    "same_model",
    "short",
]
