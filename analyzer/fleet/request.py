"""``rooftop fleet --kernels``: the profiles analysed now and the windows they are compared with, as a
:class:`~rooftop.analyzer.fleet.join.JoinRequest` (the join itself: :mod:`rooftop.analyzer.fleet.join`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rooftop.analyzer.ceilings.devices import load_device_option
from rooftop.analyzer.fleet.join import JoinRequest
from rooftop.analyzer.pipeline import analyze_inputs
from rooftop.errors import InputError


def join_request(profiles: Sequence[str], filters: Mapping[str, str | None],
                 device: str | None) -> JoinRequest | None:
    """``rooftop fleet --kernels``: the profiles analysed now and at most one window filter
    (``{"job": ..., "pod": ..., ...}``, None where not given); None without profiles.
    :class:`InputError` for two filters, a filter without profiles, or profiles without launches."""
    given = {k: v for k, v in filters.items() if v is not None}
    if len(given) > 1:
        raise InputError("--" + "/--".join(given), "select the job's windows with one filter",
                         "give one of --job, --pod, --namespace, --host")
    if not profiles:
        if given:
            raise InputError(f"--{next(iter(given))}", "selects windows for --kernels, which is missing",
                             "add --kernels PROFILE (an ncu export of the job)")
        return None
    ai = analyze_inputs(list(profiles), device)
    if not len(ai.results):
        raise InputError(", ".join(profiles), "holds no kernel launches",
                         "--kernels takes ncu exports (or folders of them) of the job")
    column, value = next(iter(given.items())) if given else (None, None)
    return JoinRequest(results=ai.results, column=column, value=value,
                       ceilings=load_device_option(device), profiles=tuple(profiles))
