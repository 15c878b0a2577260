"""Software prefetch for the numba kernels that read rows at random: ``prefetch_row(table, row)``.

A gather of feature rows (or of a block's source rows in an aggregation) reads rows in an order the
hardware prefetchers cannot guess, so each row costs a full memory latency once the table outgrows the
caches. Asking for row ``ids[i + PREFETCH_DISTANCE]`` while copying row ``ids[i]`` keeps several rows in
flight: a 20,000-row gather of 512-byte rows from a 200 MB table took 2.25 ms without and 1.06 ms with a
distance of 8 on one core of the development VM (AMD EPYC; ``benchmarks/bench_gather.py`` and
docs/benchmarks.md have the store-level figures).

``prefetch_row`` compiles to LLVM's ``llvm.prefetch`` (x86 ``prefetcht0``) on each 64-byte line of the
row's first :data:`PREFETCH_BYTES` bytes. A prefetch is a hint: it never faults and never changes a
result, so callers need not check the row against the table's bounds (an id out of range is prefetched
from a meaningless address, harmlessly, and caught by the copy's own check). There is no reference
implementation to compare against: with or without the hint the kernels compute the same values, which
their tests check against their own numpy references.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

PREFETCH_DISTANCE = 8
"""Rows (or edges) ahead of the one being copied whose row is prefetched: 8 measured as fast as 16 or 32 and
twice as fast as none on 512-byte rows, while a short batch still gains from all but its last 8 rows."""

CACHE_LINE_BYTES = 64
PREFETCH_BYTES = 1024
"""At most this many leading bytes of a row are prefetched (16 lines): past them the copy is sequential
within the row and the hardware's own prefetcher follows it."""


@intrinsic
def prefetch_row(typingctx, table, row):  # noqa: ANN001, ANN201 - numba's intrinsic protocol
    """Hint the CPU to bring ``table[row, :]`` (a 2-d array of any layout, ``row`` an integer) into its caches.

    Only in numba-compiled code. No effect on any value; no bounds check (a prefetch cannot fault).
    """
    if not isinstance(table, types.Array) or table.ndim != 2 or not isinstance(row, types.Integer):
        return None
    signature = types.void(table, row)

    def codegen(context, builder, sig, args):  # noqa: ANN001, ANN202
        table_type, row_type = sig.args
        array = context.make_array(table_type)(context, builder, args[0])
        index = context.cast(builder, args[1], row_type, types.intp)
        strides = cgutils.unpack_tuple(builder, array.strides)
        shape = cgutils.unpack_tuple(builder, array.shape)
        byte = ir.IntType(8).as_pointer()
        start = builder.gep(builder.bitcast(array.data, byte), [builder.mul(index, strides[0])])
        item_bytes = context.get_constant(types.intp, context.get_abi_sizeof(context.get_data_type(table_type.dtype)))
        row_bytes = builder.mul(shape[1], item_bytes)
        limit = context.get_constant(types.intp, PREFETCH_BYTES)
        row_bytes = builder.select(builder.icmp_signed("<", row_bytes, limit), row_bytes, limit)
        int32 = ir.IntType(32)
        function_type = ir.FunctionType(ir.VoidType(), [byte, int32, int32, int32])
        prefetch = cgutils.get_or_insert_function(builder.module, function_type, "llvm.prefetch")
        step = context.get_constant(types.intp, CACHE_LINE_BYTES)
        zero = context.get_constant(types.intp, 0)
        with cgutils.for_range_slice(builder, zero, row_bytes, step) as (offset, _):
            # read access (0), keep in all cache levels (3), data cache (1)
            builder.call(prefetch, [builder.gep(start, [offset]), int32(0), int32(3), int32(1)])
        return context.get_dummy_value()

    return signature, codegen
