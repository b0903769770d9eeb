"""How to print a diversity estimate so that it is not misread.

The entropy (Chao–Wang–Jost) and the Hill numbers of :mod:`collapse_probe.metrics.estimators`
estimate the diversity of the whole distribution, *including classes not seen in the sample*: with
few samples and many singletons they exceed what the seen classes allow (log of their number), and
their small-N bias is large. A printed value says so.
"""

from __future__ import annotations

import math

from collapse_probe.metrics.estimators import MIN_CONFIDENT_SAMPLES

INCL_UNSEEN = "estimate incl. unseen classes"


def entropy_note(h: float, n_classes: int | None, n: int | None, unit: str = "nats") -> str:
    """``h`` with what it is: an estimate including unseen classes; why it exceeds log(#classes seen)
    when it does; and a SMALL N flag below :data:`~collapse_probe.metrics.estimators.MIN_CONFIDENT_SAMPLES`.

    Example:
        >>> entropy_note(1.216, 2, 2)
        '1.216 nats (estimate incl. unseen classes; 2 classes seen in 2 samples; above log(2) = 0.693 because classes not seen are estimated) [SMALL N: 2 < 20, unreliable]'
    """
    parts = [INCL_UNSEEN]
    if n_classes is not None and n is not None:
        parts.append(f"{n_classes} classes seen in {n} samples")
    if n_classes and n_classes >= 1 and h > math.log(n_classes) + 1e-9:
        parts.append(f"above log({n_classes}) = {math.log(n_classes):.3f} because classes not seen are estimated")
    out = f"{h:.3f} {unit} ({'; '.join(parts)})"
    if n is not None and n < MIN_CONFIDENT_SAMPLES:
        out += f" [SMALL N: {n} < {MIN_CONFIDENT_SAMPLES}, unreliable]"
    return out
