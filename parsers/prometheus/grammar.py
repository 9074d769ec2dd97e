"""The line grammar of the Prometheus text parser: which lines are DCGM samples, and their parts.

General path for every line :mod:`parsers.prometheus.scan` did not take (quoted, indented, tabbed lines,
odd spacing, chunks that are not valid UTF-8, non-UTF-8 files), vectorized with Arrow compute:

* :func:`candidates`: lines that start like a DCGM metric (``DCGM_FI_…``, optionally behind
  indentation, a Markdown ``> `` quote or ``*`` emphasis); other well-formed metric lines
  (``go_*``, ``DCGM_EXP_*``) are counted, comments and prose skipped;
* :func:`extract`: ``name{labels}``, value and timestamp of each candidate (rtrimmed, split at
  its last spaces; anything else by the full :data:`LINE` regex);
* :func:`merge`: fast and general candidates back in line order, heads dictionary-encoded.

The rules are docs/formulas.md#inputs (Prometheus text).
"""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rooftop.parsers.prometheus.scan import Fast, bool_mask, take

# "\ufeff?": a byte-order mark at a line start (files concatenated with `cat`) is no character
LINE = (
    "^\ufeff?" r"[ \t]*(?:>[ \t]*)?(?P<name>DCGM_FI_[A-Za-z0-9_]+)(?:\{(?P<labels>.*)\})?[ \t]+"
    r"(?P<value>[^ \t\r]+)(?:[ \t]+(?P<ts>-?[0-9]+))?[ \t\r]*$"
)
CANDIDATE = "^\ufeff?" r"[ \t]*(?:>[ \t]*)?\**DCGM_FI_[A-Za-z0-9_]+(?:[{ \t\r]|$)"
OTHER = (
    "^\ufeff?" r"[ \t]*[A-Za-z_:][A-Za-z0-9_:]*(?:\{.*\})?[ \t]+"
    r"[-+]?(?:[0-9.]+(?:[eE][-+]?[0-9]+)?|NaN|Inf)(?:[ \t]+-?[0-9]+)?[ \t\r]*$"
)
NUMBER = r"^[-+]?(?:[0-9]+\.?[0-9]*(?:[eE][-+]?[0-9]+)?|\.[0-9]+(?:[eE][-+]?[0-9]+)?|NaN|nan|[Ii]nf|[Ii]nfinity)$"
NAME_OK = re.compile(r"^DCGM_FI_[A-Za-z0-9_]+$")
TIMESTAMP = r"^(-?[0-9]+)?$"

Parts = tuple[pa.Array, pa.Array, pa.Array, np.ndarray]  # head, value, ts (null: none), parsed


def candidates(lines: pa.Array) -> tuple[np.ndarray, int]:
    """(indices of the lines that look like DCGM samples, number of other well-formed metric lines)."""
    # cheap prefix tests first; regexes only run on the few lines that need them
    hashed = bool_mask(pc.starts_with(lines, "#"))
    dcgm = bool_mask(pc.starts_with(lines, "DCGM_FI_"))
    odd = np.flatnonzero(~hashed & ~dcgm)  # quoted, indented or noise lines
    other = 0
    if len(odd):
        odd_lines = take(lines, odd)
        sub = bool_mask(pc.match_substring(odd_lines, "DCGM_FI_"))
        cand = sub & bool_mask(pc.match_substring_regex(odd_lines, CANDIDATE))
        dcgm[odd[cand]] = True
        # any other well-formed metric line (go_*, process_*, DCGM_EXP_*): counted, not a sample
        other = int(bool_mask(pc.match_substring_regex(take(odd_lines, np.flatnonzero(~cand)), OTHER)).sum())
    return np.flatnonzero(dcgm), other


def _split_plain(c: pa.Array) -> tuple[np.ndarray, pa.Array, pa.Array, pa.Array, np.ndarray]:
    """The lines of ``c`` that start with ``DCGM_FI_`` and split at their last one or two spaces:
    (those lines' mask over ``c``, head, value, ts for them, bad: the split does not hold)."""
    x = pc.ascii_rtrim_whitespace(c)
    fast = bool_mask(pc.starts_with(x, "DCGM_FI_"))
    sp = pc.split_pattern(x, " ", max_splits=1, reverse=True)
    fast &= np.asarray(pc.list_value_length(sp).to_numpy(zero_copy_only=False)) == 2
    f_idx = np.flatnonzero(fast)
    sp_f = take(sp, f_idx) if len(f_idx) < len(c) else sp
    head = pc.list_element(sp_f, 0)
    last = pc.list_element(sp_f, 1)
    bad_f = bool_mask(pc.ends_with(head, " ")) | bool_mask(pc.match_substring(last, "\t"))
    has_ts = ~bool_mask(pc.ends_with(head, "}"))
    if has_ts.any():
        h_idx = np.flatnonzero(has_ts)
        has_ts[h_idx[~bool_mask(pc.match_substring(take(head, h_idx), " "))]] = False
    value, ts = last, pa.nulls(len(f_idx), pa.string())
    if has_ts.any():
        t_idx = np.flatnonzero(has_ts)
        sp2 = pc.split_pattern(take(head, t_idx), " ", max_splits=1, reverse=True)
        two = np.asarray(pc.list_value_length(sp2).to_numpy(zero_copy_only=False)) == 2
        bad_f[t_idx[~two]] = True
        sp2 = pc.if_else(pa.array(two), sp2, pa.scalar(["", ""], sp2.type))
        mask = pa.array(has_ts)
        head = pc.replace_with_mask(head, mask, pc.list_element(sp2, 0))
        value = pc.replace_with_mask(last, mask, pc.list_element(sp2, 1))
        ts = pc.replace_with_mask(ts, mask, take(last, t_idx))
        bad_f |= ~bool_mask(pc.match_substring_regex(pc.fill_null(ts, ""), TIMESTAMP))
        bad_f |= bool_mask(pc.ends_with(head, " "))
    return fast, head, value, ts, bad_f


def _by_regex(c: pa.Array) -> tuple[np.ndarray, pa.Array, pa.Array, pa.Array]:
    """(parsed mask, head, value, ts of the parsed lines) by the full :data:`LINE` regex."""
    parts = pc.extract_regex(c, LINE)
    s_ok = bool_mask(pc.is_valid(parts))
    parts = parts.filter(pa.array(s_ok))
    labels = pc.struct_field(parts, "labels")
    s_head = pc.if_else(pc.equal(labels, ""), pc.struct_field(parts, "name"),
                        pc.binary_join_element_wise(pc.struct_field(parts, "name"), labels, "}", "{"))
    s_head = pc.binary_join_element_wise(s_head, "", "")  # plain string
    s_ts = pc.struct_field(parts, "ts")
    s_ts = pc.if_else(pc.equal(s_ts, ""), pa.scalar(None, pa.string()), s_ts)
    return s_ok, s_head, pc.struct_field(parts, "value"), s_ts


def extract(c: pa.Array) -> Parts:
    """(head, value, ts, ok) for candidate lines; ``head`` is ``name{labels}`` (or ``name``);
    head/value/ts hold the ``ok`` lines only, in order.

    Plain ``NAME{labels} value [ts]`` lines: two string splits, no regex. Anything else (quote
    prefixes, tabs, odd spacing) goes through the full :data:`LINE` regex. Heads repeat across
    scrapes, so the caller dictionary-encodes them and parses each distinct head once.
    """
    fast, head, value, ts, bad_f = _split_plain(c)
    f_idx = np.flatnonzero(fast)
    ok = fast.copy()
    ok[f_idx[bad_f]] = False
    if bad_f.any():
        keep_f = pa.array(~bad_f)
        head, value, ts = (pc.filter(a, keep_f) for a in (head, value, ts))
    slow_idx = np.flatnonzero(~ok)
    if not len(slow_idx):
        return head, value, ts, ok
    s_ok, s_head, s_value, s_ts = _by_regex(take(c, slow_idx))
    good_f = np.flatnonzero(ok)
    ok[slow_idx[s_ok]] = True
    perm = np.argsort(np.concatenate([good_f, slow_idx[s_ok]]), kind="stable")
    out = [pa.concat_arrays([f.cast(pa.string()), s.cast(pa.string())]).take(pa.array(perm))
           for f, s in ((head, s_head), (value, s_value), (ts, s_ts))]
    return out[0], out[1], out[2], ok


def empty_parts() -> Parts:
    return pa.array([], pa.string()), pa.array([], pa.string()), pa.array([], pa.string()), np.zeros(0, bool)


def merge(fast: Fast | None, slow_no: np.ndarray, slow: Parts
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray, pa.Array, pa.Array, pa.Array]:
    """Fast and general-path candidates in line order: (line index, ok, head index of each ok line,
    distinct heads, value, ts of each ok line)."""
    head_s, value_s, ts_s, ok = slow
    dh = pc.dictionary_encode(head_s)
    if fast is None or not len(fast.no):
        return slow_no, ok, np.asarray(dh.indices, dtype="int64"), dh.dictionary, value_s, ts_s
    f_idx = np.asarray(fast.heads.indices, dtype="int64")
    if not len(slow_no):
        return fast.no, np.ones(len(fast.no), bool), f_idx, fast.heads.dictionary, fast.value, fast.ts
    both = pc.dictionary_encode(pa.concat_arrays([fast.heads.dictionary, dh.dictionary.cast(pa.string())]))
    remap = np.asarray(both.indices, dtype="int64")
    s_idx = remap[len(fast.heads.dictionary) + np.asarray(dh.indices, dtype="int64")]
    no = np.concatenate([fast.no, slow_no])
    order = np.argsort(no, kind="stable")
    good = np.concatenate([np.ones(len(fast.no), bool), ok])
    ok_all = good[order]
    rows = np.argsort(no[good], kind="stable")
    perm = pa.array(rows, pa.int64())
    hidx = np.concatenate([remap[f_idx], s_idx])[rows]
    value = pa.concat_arrays([fast.value, value_s.cast(pa.string())]).take(perm)
    ts = pa.concat_arrays([fast.ts, ts_s.cast(pa.string())]).take(perm)
    return no[order], ok_all, hidx, both.dictionary, value, ts
