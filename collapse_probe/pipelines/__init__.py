"""The pipelines behind the public one-call API (``collapse_probe.audit``, ``crossplay``, ``gate``,
``compare``; ``play``): :mod:`~collapse_probe.pipelines.play`, :mod:`~collapse_probe.pipelines.crossplay`,
:mod:`~collapse_probe.pipelines.gate`, :mod:`~collapse_probe.pipelines.audit`,
:mod:`~collapse_probe.pipelines.compare`. Each sits in a layer of its own (docs/architecture.md); this
package only groups them and imports none."""
