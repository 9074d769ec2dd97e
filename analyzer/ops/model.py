"""Each attributed op through the formula table (``docs/formulas.md#op-formulas``): its category, its
work (FLOPs, bytes interval, compute roof) or why it is unmodelled. Ops repeat a few signatures, so each
distinct (name, dims, types, concrete inputs) is computed once."""

from __future__ import annotations

import re
from dataclasses import dataclass

from rooftop.analyzer.ops.args import OpArgs, Unmodelled
from rooftop.analyzer.ops.formulas import lookup
from rooftop.analyzer.ops.models import comm
from rooftop.analyzer.ops.work import Work

NO_SHAPES = "no shapes in the trace (record with torch.profiler.profile(record_shapes=True))"
_COMM = re.compile(r"^(nccl:|c10d::|record_param_comms$|symm_mem::|_c10d_functional::|rccl)")
COMM_SOURCE = "docs/formulas.md#op-communication"
_INDUCTOR = re.compile(r"^triton_(poi|red|per|tem)_")


@dataclass(frozen=True)
class Modelled:
    """An op signature's category and work, or the reason it is unmodelled (``work`` None)."""

    category: str
    work: Work | None
    reason: str = ""
    source: str = ""


def category_of(name: str) -> str:
    """The category of an op without a formula (communication is known by name)."""
    return "communication" if _COMM.match(name) else "other"


def model(name: str, dims: str | None, types: str | None, concrete: str | None,
          collective: str | None = None) -> Modelled:
    """Apply the formula of ``name`` to the recorded arguments."""
    row = lookup(name)
    if row is None and _COMM.match(name):
        try:
            work = comm.collective(name, collective, OpArgs.of(dims, types, concrete))
        except Unmodelled as exc:
            return Modelled("communication", None, str(exc), COMM_SOURCE)
        return Modelled("communication", work, "", COMM_SOURCE)
    if row is None:
        if _INDUCTOR.match(name):
            why = "Inductor-generated fused kernel: its arithmetic is in the generated code, not in the op's arguments"
        else:
            why = f"no formula for {name}"
        return Modelled(category_of(name), None, why)
    if dims is None:
        return Modelled(row.category, None, NO_SHAPES, row.source)
    args = OpArgs.of(dims, types, concrete)
    if not args.has_shapes:
        return Modelled(row.category, None, NO_SHAPES, row.source)
    try:
        work = row.model(args, row.params)
    except Unmodelled as exc:
        return Modelled(row.category, None, str(exc), row.source)
    except (IndexError, ValueError, TypeError, ZeroDivisionError, KeyError) as exc:  # arguments of another schema
        return Modelled(row.category, None, f"arguments do not fit the {name} schema ({type(exc).__name__})",
                        row.source)
    return Modelled(row.category, work, "", row.source)
