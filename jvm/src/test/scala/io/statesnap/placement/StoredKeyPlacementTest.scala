package io.statesnap.placement

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection
import org.apache.spark.sql.types.StructType
import org.apache.spark.unsafe.types.UTF8String
import org.junit.Assert._
import org.junit.Test

/**
 * [[StoredKeyPlacement]] reads a key as RocksDB stores it: it places the stored bytes as [[KeyPlacement]] places the
 * row, and refuses bytes that are not a key of the store's layout before hashing any of them. Real stores:
 * tests/test_repartition.py.
 */
class StoredKeyPlacementTest {
  private val schema = StructType.fromDDL("id STRING, sessionStartTime TIMESTAMP")
  private val rows = (0 until 100).map(i => InternalRow(UTF8String.fromString(s"k$i"), i * 1000L))
  private val sessionWindow = StoredKey.Split(Some(StructType(schema.take(1))), StructType(schema.drop(1)),
    inFirst = true, Nil)

  private def encoded(schema: StructType, row: InternalRow): Array[Byte] =
    Array[Byte](0) ++ UnsafeProjection.create(schema)(row).getBytes

  /** `[int32 LE prefix length][0][prefix row][0][rest row]`, as Spark's prefix-scan encoder writes it. */
  private def prefixScanned(row: InternalRow): Array[Byte] = {
    val prefix = encoded(StructType(schema.take(1)), InternalRow(row.getUTF8String(0)))
    val rest = encoded(StructType(schema.drop(1)), InternalRow(row.getLong(1)))
    val length = java.nio.ByteBuffer.allocate(4).order(java.nio.ByteOrder.LITTLE_ENDIAN).putInt(prefix.length).array()
    length ++ prefix ++ rest
  }

  @Test def aStoredKeyIsPlacedAsItsRow(): Unit = {
    val rowPlacement = new KeyPlacement(schema, PartitionKey.WholeKey, 7)
    val stored = new StoredKeyPlacement(StoredKey.Whole(schema, PartitionKey.WholeKey), 1, 7)
    assertEquals(rows.map(rowPlacement.partition), rows.map(r => stored.partition(encoded(schema, r), 0)))
  }

  @Test def aPrefixScannedKeyIsPlacedByItsPrefix(): Unit = {
    val rowPlacement = new KeyPlacement(schema, PartitionKey.WithoutLastField, 7)
    val stored = new StoredKeyPlacement(sessionWindow, 1, 7)
    val placed = rows.map(r => stored.partition(prefixScanned(r), 0))
    assertEquals(rows.map(rowPlacement.partition), placed)
    assertEquals("the keys spread over the partitions", 7, placed.distinct.size)
  }

  @Test def bytesThatAreNoKeyOfTheLayoutAreRefusedNotHashed(): Unit = {
    val plain = new StoredKeyPlacement(StoredKey.Whole(schema, PartitionKey.WholeKey), 1, 7)
    val key = encoded(schema, rows.head)
    def refusal(bytes: Array[Byte], placement: StoredKeyPlacement = plain): String =
      try { placement.partition(bytes, 0); fail(s"placed ${bytes.toSeq}"); "" }
      catch { case e: IllegalArgumentException => e.getMessage }
    assertTrue(refusal(key.updated(0, 1.toByte)).contains("has no format version byte 0"))
    assertTrue(refusal(key.dropRight(8)).contains("points at bytes"))
    assertTrue(refusal(encoded(StructType.fromDDL("id STRING"), InternalRow(UTF8String.fromString("k"))))
      .contains("is not a key of struct<id:string,sessionStartTime:timestamp>"))
    val prefixed = new StoredKeyPlacement(sessionWindow, 1, 7)
    assertTrue(refusal(key, prefixed).contains("no prefix length"))
    val scanned = prefixScanned(rows.head)
    assertTrue(refusal(scanned.dropRight(8), prefixed).contains("its rest"))
  }

  @Test def aKeyReadFromAPartitionSparkNeverWroteItToIsRefused(): Unit = {
    val rowPlacement = new KeyPlacement(schema, PartitionKey.WholeKey, 3)
    val stored = new StoredKeyPlacement(StoredKey.Whole(schema, PartitionKey.WholeKey), 3, 7)
    rows.foreach { r =>
      val home = rowPlacement.partition(r)
      stored.partition(encoded(schema, r), home)
      val elsewhere = (home + 1) % 3
      val refused = try { stored.partition(encoded(schema, r), elsewhere); "" }
        catch { case e: IllegalArgumentException => e.getMessage }
      assertTrue(refused, refused.contains(s"was read from partition $elsewhere, and Spark's partitioning of 3 " +
        s"partitions writes it to partition $home"))
    }
  }
}
