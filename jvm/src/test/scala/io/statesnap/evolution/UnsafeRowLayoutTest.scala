package io.statesnap.evolution

import io.statesnap.evolution.Rows._
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.catalyst.util.{ArrayBasedMapData, GenericArrayData}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.types.{Decimal, StructType}
import org.apache.spark.unsafe.types.UTF8String
import org.junit.Assert._
import org.junit.Test

/** An entry is checked against the layout it is about to be read with, before any field is read (issue 24). */
class UnsafeRowLayoutTest {
  private def problem(row: UnsafeRow, as: StructType): Option[String] =
    new UnsafeRowLayout(as).problem(row.getBaseObject, row.getBaseOffset, row.getSizeInBytes)

  private val wide = schema("n BIGINT, tag STRING, score DOUBLE")
  private val narrow = schema("n INT, tag STRING")

  @Test def rowsAsSparkWritesThemPass(): Unit = {
    val nested = schema("id STRING, inner STRUCT<a: INT, b: STRING>, tags ARRAY<STRING>, m MAP<STRING, INT>, " +
      "big DECIMAL(30, 2), small DECIMAL(10, 2), empty STRING")
    def s(v: String) = UTF8String.fromString(v)
    val full = stored(nested, s("k"), InternalRow(1, s("x" * 13)), new GenericArrayData(Array[Any](s("a"), null)),
      ArrayBasedMapData(Array[Any](s("k")), Array[Any](7)), Decimal(BigDecimal("12345678901234567890.12"), 30, 2),
      Decimal(BigDecimal("1.50"), 10, 2), s(""))
    assertEquals(None, problem(full, nested))
    val nulls = stored(nested, Seq.fill(nested.length)(null): _*)
    assertEquals(None, problem(nulls, nested)) // a null wide decimal keeps its 16 reserved bytes
    assertEquals(None, problem(stored(narrow, -7, s("new")), narrow))
  }

  @Test def aRowOfAnotherLayoutIsRefusedNamingWhatIsWrong(): Unit = {
    // The trace of a deploy with Spark's check off: one entry written as v2, read as the recorded v1.
    val v2Entry = stored(wide, 8000000000L, UTF8String.fromString("new"), 1.5)
    val read = problem(v2Entry, narrow)
    assertTrue(read.toString, read.exists(_.contains("8 bytes at 24 that belong to no field")))
    val v1Entry = stored(narrow, 3, UTF8String.fromString("old"))
    assertTrue(problem(v1Entry, wide).toString, problem(v1Entry, wide).exists(_.contains("field 'tag' points at")))
    assertTrue(problem(v1Entry, schema("n INT")).isDefined)
  }

  @Test def aSlotPointingOutsideTheRowIsRefusedBeforeItIsRead(): Unit = {
    val row = stored(narrow, 1, UTF8String.fromString("abc")).copy()
    row.setLong(1, (4096L << 32) | 3L) // the 'tag' slot: offset 4096 in a row of 32 bytes
    val why = problem(row, narrow)
    assertTrue(why.toString, why.exists(_.contains("field 'tag' points at bytes 4096-4099, outside")))
  }
}
