"""Minimal statistics."""

from minstats.core import mean, median
