package io.statesnap.placement

import io.statesnap.placement.TransformWithStateKeys.Layout
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection
import org.apache.spark.sql.types.StructType
import org.apache.spark.unsafe.types.UTF8String
import org.junit.Assert._
import org.junit.Test

/**
 * The families of a transformWithState store as Spark 4.0.5, 4.1.4 and 4.3.0 write them (their schema files' key
 * schemas and encoder specs, and their stored bytes, read in a spike): each is placed by the grouping key it holds,
 * as [[KeyPlacement]] places that key alone.
 */
class TransformWithStateKeysTest {
  private val grouping = "id STRING"
  private def layout(name: String, ddl: String, prefixFields: Int = 0, range: Seq[Int] = Nil) =
    Layout(name, StructType.fromDDL(ddl), prefixFields, range)
  private val families = Seq(
    layout("v", grouping), layout("$count_lt", grouping), layout("$min_lt", grouping),
    layout("m", s"key STRUCT<$grouping>, userKey STRUCT<uk STRING>", prefixFields = 1),
    layout("$procTimers_keyToTimestamp", s"key STRUCT<$grouping>, expiryTimestampMs BIGINT", prefixFields = 1),
    layout("$procTimers_timestampToKey", s"expiryTimestampMs BIGINT, key STRUCT<$grouping>", range = Seq(0)),
    layout("$ttl_vt", s"expirationMs BIGINT, elementKey STRUCT<$grouping>", range = Seq(0)),
    layout("$ttl_mt", s"expirationMs BIGINT, elementKey STRUCT<key STRUCT<$grouping>, userKey STRUCT<uk STRING>>",
      range = Seq(0)))

  /** `[0][row]` of `ddl`. */
  private def row(ddl: String, values: Any*): Array[Byte] =
    Array[Byte](0) ++ UnsafeProjection.create(StructType.fromDDL(ddl))(InternalRow.fromSeq(values)).getBytes

  /** `[int32 LE length][first][rest]`, as Spark's prefix and range scan encoders write a key. */
  private def split(first: Array[Byte], rest: Array[Byte]): Array[Byte] =
    java.nio.ByteBuffer.allocate(4).order(java.nio.ByteOrder.LITTLE_ENDIAN).putInt(first.length).array() ++ first ++
      rest

  private def stored(family: String, id: String): Array[Byte] = {
    val key = InternalRow(UTF8String.fromString(id))
    val time = row("t BINARY", Array[Byte](1, 0, 0, 0, 0, 0, 0, 0, 7))  // the range encoding: never read
    family match {
      case "m" => split(row(s"key STRUCT<$grouping>", key), row("userKey STRUCT<uk STRING>",
        InternalRow(UTF8String.fromString("u"))))
      case "$procTimers_keyToTimestamp" => split(row(s"key STRUCT<$grouping>", key), row("t BIGINT", 7L))
      case "$procTimers_timestampToKey" | "$ttl_vt" => split(time, row(s"k STRUCT<$grouping>", key))
      case "$ttl_mt" => split(time, row(s"e STRUCT<key STRUCT<$grouping>, userKey STRUCT<uk STRING>>",
        InternalRow(key, InternalRow(UTF8String.fromString("u")))))
      case _ => row(grouping, UTF8String.fromString(id))
    }
  }

  @Test def everyFamilyIsPlacedByTheGroupingKeyItHolds(): Unit = {
    val keys = TransformWithStateKeys.storedKeys(families).fold(e => throw new AssertionError(e), identity)
    val ids = (0 until 60).map(i => s"k$i")
    val expected = {
      val placement = new KeyPlacement(StructType.fromDDL(grouping), PartitionKey.WholeKey, 5)
      ids.map(id => placement.partition(InternalRow(UTF8String.fromString(id))))
    }
    val from = new KeyPlacement(StructType.fromDDL(grouping), PartitionKey.WholeKey, 2)
    for (f <- families) {
      val placement = new StoredKeyPlacement(keys(f.name), 2, 5)
      val placed = ids.map(id => placement.partition(stored(f.name, id),
        from.partition(InternalRow(UTF8String.fromString(id)))))
      assertEquals(f.name, expected, placed)
    }
    assertEquals("the ids spread", 5, expected.distinct.size)
  }

  @Test def familiesThatDisagreeOnTheGroupingKeyOrHideItAreRefused(): Unit = {
    val other = TransformWithStateKeys.storedKeys(families :+ layout("w", "id STRING, n INT"))
    assertTrue(other.toString, other.left.exists(_.contains("'v' and 'w' hold different grouping keys")))
    val hidden = TransformWithStateKeys.storedKeys(Seq(layout("v", grouping),
      layout("$ttl_x", "expirationMs BIGINT, elementKey BINARY", range = Seq(0))))
    assertTrue(hidden.toString, hidden.left.exists(_.contains("'$ttl_x' keeps") &&
      hidden.left.exists(_.contains("where statesnap does not find the grouping key struct<id:string>"))))
  }
}
