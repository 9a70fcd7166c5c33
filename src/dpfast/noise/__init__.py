"""Additive noise: one object per family, the only Python code that calls the additive-noise
sampling kernels.

A noise object is a family (:class:`Laplace`, :class:`Gaussian`) at one scale, on integers or
on a grid of reals. It knows everything the releases used to re-derive, each in its own
module: its grid and kernel parameters, its per-cell variance, a tail bound, and its privacy
cost for a given sensitivity. It draws cell-addressed noise into a buffer
(:meth:`Laplace.fill`: cell ``i`` of chunk ``chunk0 + i // CHUNK`` gets noise that is a
function of the key and that position only) or for one value (:meth:`Laplace.scalar`).

The models are numpy's ``cont()``/``disc()`` (one generic driver every sampler goes through)
and OpenDP's ``MakeNoise`` (one trait for every noise; a measurement is a noise plus a
sensitivity): a mechanism is a noise object, a sensitivity, and a release.

A ``source`` is a release's key (:class:`dpfast._native.Key`), handed out by
:mod:`dpfast._release` after the release's charge (:meth:`~dpfast._release.Release.charge`,
:func:`~dpfast._release.release`, a :class:`~dpfast._release.Keys` stream) or to a raw
sampler (:func:`~dpfast._release.draw`, which charges nothing by contract); anything else
is refused (TypeError), so no code draws noise from a generator directly. :meth:`fill` and
:meth:`scalar` follow the kernel convention of :mod:`dpfast._release`,
``kernel(key, threads, *args)``, so a bound method is passed to ``release`` as its kernel.

Every release that adds noise draws it here, and this is the only Python package that calls
the sampling kernels: the selection kernels (:func:`noisy_argmax`, :func:`noisy_top_k`,
:func:`exponential_mechanism`, :func:`noisy_max_score`) and the uniforms of randomized
response and :func:`dpfast.uniform` (:func:`uniforms`) and the priorities of contribution
bounding (:func:`bounded_rows`) are called through the keyed functions of
:mod:`~dpfast.noise.kernels`, which refuse anything but a key like :meth:`Laplace.fill`.
(Randomized response's categorical answers also draw integers from the release's generator
through numpy, :meth:`dpfast._release.Keys.coins`: not a kernel of ours.)

The package's modules, one concern each: :mod:`~dpfast.noise.grids` (the noise parameters,
grids and floating-point terms), :mod:`~dpfast.noise.families` (the noise objects),
:mod:`~dpfast.noise.calibration` (a release's privacy keywords to its noise and cost,
:func:`measure`) and :mod:`~dpfast.noise.kernels` (the keyed selection, uniform and bounding
kernels). Every name is importable from the package.
"""
from __future__ import annotations

from .calibration import NOISES, Measure, gaussian_sigma_for, measure
from .families import Gaussian, Laplace, laplace, laplace_scalar_kernel, real_laplace
from .grids import (FP_ERROR, GRANULARITY_BITS, GRID_BITS, MAX_DISCRETE_SCALE,
                    MAX_DISCRETE_SIGMA, ROUNDING_SHARE, dlap_variance, eta, gaussian_fp_error,
                    gaussian_fp_loss, gaussian_grid, laplace_grid)
from .kernels import (bounded_rows, exponential_mechanism, noisy_argmax, noisy_max_score,
                      noisy_top_k, uniforms)

__all__ = ["Laplace", "Gaussian", "Measure", "NOISES", "measure", "gaussian_sigma_for",
           "laplace", "laplace_scalar_kernel", "noisy_argmax", "noisy_top_k",
           "exponential_mechanism", "noisy_max_score", "uniforms", "bounded_rows"]

# Also imported from the package by the samplers, the mechanisms and the tests.
__all__ += ["real_laplace", "ROUNDING_SHARE", "FP_ERROR",
            "GRANULARITY_BITS", "GRID_BITS", "MAX_DISCRETE_SCALE", "MAX_DISCRETE_SIGMA",
            "dlap_variance", "eta", "gaussian_fp_error", "gaussian_fp_loss", "gaussian_grid",
            "laplace_grid"]
