package io.statesnap.keys

import scala.collection.mutable

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{AttributeReference, Literal, UnsafeProjection}
import org.apache.spark.sql.catalyst.expressions.aggregate.{Average, CollectList, Count, Max, Min, Sum}
import org.apache.spark.sql.types.{DataType, LongType}
import org.junit.Assert._
import org.junit.Test

/**
 * Buffers merged by the functions' own merge ([[AggregateMerge]]), as a streaming aggregation's state keeps them
 * (unsafe rows; a typed function's buffer serialized): the merge of two groups' buffers is the buffer of one group
 * that saw both groups' rows.
 */
class AggregateMergeTest {
  private val value = AttributeReference("value", LongType)()

  private def unsafe(types: Seq[DataType], values: Any*): InternalRow =
    UnsafeProjection.create(types.toArray)(InternalRow(values: _*)).copy()

  @Test def declarativeFunctionsMergeAsSparkMergesPartialAggregates(): Unit = {
    val merge = AggregateMerge(Seq(Count(Seq(Literal(1))), Sum(value), new Average(value), Min(value), Max(value)))
    val types = merge.bufferSchema.map(_.dataType)
    // count; sum; avg's (sum, count); min; max. Rows 1, 5 in one group, 2 in the other.
    val merged = merge.newMerger()(unsafe(types, 2L, 6L, 6.0, 2L, 1L, 5L), unsafe(types, 1L, 2L, 2.0, 1L, 2L, 2L))
    assertEquals(Seq(3L, 8L, 8.0, 3L, 1L, 5L), types.indices.map(i => merged.get(i, types(i))))
  }

  @Test def aTypedFunctionsSerializedBufferIsMergedAsItsObject(): Unit = {
    val collect = CollectList(value)
    val merge = AggregateMerge(Seq(Count(Seq(Literal(1))), collect))
    val types = merge.bufferSchema.map(_.dataType)
    def list(values: Long*) = collect.serialize(mutable.ArrayBuffer[Any](values: _*))
    val merged = merge.newMerger()(unsafe(types, 2L, list(1L, 5L)), unsafe(types, 1L, list(2L)))
    assertEquals(3L, merged.getLong(0))
    assertEquals(Seq(1L, 5L, 2L), collect.deserialize(merged.getBinary(1)).toSeq)
  }
}
