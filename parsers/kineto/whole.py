"""Kineto JSON read whole with ``msgspec`` (extra ``trace``): only the fields rooftop reads are
decoded, into small structs, in C; floats become exact ``Decimal`` (``float_hook``) as ``ijson``
gives them, so the events are the same as the streamed reader's (:mod:`rooftop.parsers.kineto.reader`,
held equal by ``tests/test_kineto_whole.py``). Used for inputs up to :data:`WHOLE_MAX_BYTES`
decompressed; larger ones, other layouts, or a document these structs do not fit (a field of an
unexpected shape) are streamed instead. The structs are not tracked by the garbage collector
(``gc=False``: decoded JSON holds no reference cycles), so the collector's passes during the decode do
not walk every event decoded so far (0.18 s -> 0.07 s for a 26 MB trace, bench/NOTES.md).
``docs/formulas.md#timelines``."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from rooftop.parsers.source import Source
from rooftop.parsers.trace_io import open_stream

WHOLE_MAX_BYTES = 128 << 20
# cpu_op arguments read (struct attribute, Kineto key); parsers/kineto/ops.py turns them into text
OP_ARGS = (("input_dims", "Input Dims"), ("input_types", "Input type"), ("input_strides", "Input Strides"),
           ("concrete_inputs", "Concrete Inputs"))
COMM_ARGS = (("coll_name", "Collective name"), ("coll_in", "In msg nelems"), ("coll_out", "Out msg nelems"),
             ("coll_group", "Group size"), ("coll_dtype", "dtype"))  # record_param_comms  # decompressed bytes read into memory at once; beyond: streamed


class Missing:
    """A key that is absent (not null): ``args.device`` / ``args.stream`` fall back when missing."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING = Missing()


@dataclass
class Whole:
    events: list[Any]  # structs with .cat .ph .name .ts .dur .pid .tid .args (op arguments as msgspec.Raw)
    device_properties: list[Any]


def _build_decoder() -> tuple[Any, tuple[type[Exception], ...]] | None:
    """The msgspec decoder of a Kineto document and its errors, or ``None`` without msgspec.
    (Structs are built here so the module imports without msgspec; ``typing.Any`` fields keep
    ``ijson``'s value types, the ``Args | None`` field takes only an object or null.)"""
    try:
        import msgspec
    except ImportError:
        return None
    raw: Any = msgspec.Raw  # op arguments: kept as JSON bytes, decoded once per distinct value
    op_args = [(attr, raw, msgspec.field(default=None, name=key)) for attr, key in OP_ARGS]
    comm_args = [(attr, Any, msgspec.field(default=None, name=key)) for attr, key in COMM_ARGS]
    args: Any = msgspec.defstruct("Args", [("device", Any, MISSING), ("stream", Any, MISSING), ("correlation", Any, None),
                                           ("grid", Any, None), ("block", Any, None), ("bytes", Any, None),
                                           ("external_id", Any, msgspec.field(default=None, name="External id")),
                                           *op_args, *comm_args], gc=False)
    args_or_null: Any = args | None
    event: Any = msgspec.defstruct("Event", [("ph", Any, None), ("cat", Any, None), ("name", Any, None),
                                        ("ts", Any, None), ("dur", Any, MISSING), ("pid", Any, None),
                                        ("tid", Any, None), ("args", args_or_null, None)], gc=False)
    events: Any = list[event]
    doc = msgspec.defstruct("Doc", [("traceEvents", events), ("deviceProperties", Any, MISSING)])
    return msgspec.json.Decoder(doc, float_hook=Decimal), (msgspec.DecodeError, msgspec.ValidationError)


_ARG_DECODER: list[Any] = []


def decode_arg(data: bytes) -> Any:
    """A raw op argument decoded as the streamed reader sees it (exact decimals)."""
    if not _ARG_DECODER:
        import msgspec

        _ARG_DECODER.append(msgspec.json.Decoder(float_hook=Decimal))
    return _ARG_DECODER[0].decode(data)


_DECODER: list[Any] = []


def _decoder() -> tuple[Any, tuple[type[Exception], ...]] | None:
    if not _DECODER:
        _DECODER.append(_build_decoder())
    result: tuple[Any, tuple[type[Exception], ...]] | None = _DECODER[0]
    return result


def read_whole(src: Source) -> Whole | None:
    """The document's events and ``deviceProperties``, or ``None`` when it is to be streamed."""
    dec = _decoder()
    if dec is None:
        return None
    decoder, errors = dec
    try:
        with open_stream(src) as fh:
            data = fh.read(WHOLE_MAX_BYTES + 1)
    except (OSError, EOFError, ValueError):
        return None  # the streamed reader reports the damage
    if len(data) > WHOLE_MAX_BYTES:
        return None
    try:
        doc = decoder.decode(data)
    except errors:
        return None
    except RecursionError:  # too deep for msgspec: the streamed reader names the file
        return None
    props = doc.deviceProperties
    return Whole(doc.traceEvents, props if isinstance(props, list) else [])
