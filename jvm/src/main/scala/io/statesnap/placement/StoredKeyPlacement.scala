package io.statesnap.placement

import io.statesnap.evolution.UnsafeRowLayout
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.types.StructType
import org.apache.spark.unsafe.Platform

/**
 * [[KeyPlacement]] of a key as Spark's RocksDB stores it without column families, read from disk: `[0][row]` (a
 * format version byte, then the key row), or, for a store that scans by a prefix of its key (a session window's,
 * whose prefix is every field but the session start), `[int32 LE length][0][prefix row][0][rest row]`. The bytes are
 * input: every row is checked against its layout ([[UnsafeRowLayout]]) before a field of it is hashed, so a key in
 * another layout is refused by name, never placed by a hash of bytes read under the wrong schema; and a key must have
 * been read from the partition where Spark's partitioning of the count it was written under places it, so that a
 * store holding another's keys (files copied between partitions, a partitioning statesnap does not know) is refused,
 * never spread. Not thread-safe: one per task.
 *
 * @param prefixScan the store keeps its key split after all but its last field (the prefix Spark's partitioning
 *   hashes, `partitionKey` then being [[PartitionKey.WithoutLastField]])
 * @param writtenIn the count the keys read were written under; @param partitions the count a key is placed under
 */
final class StoredKeyPlacement(keySchema: StructType, partitionKey: PartitionKey, prefixScan: Boolean,
    writtenIn: Int, partitions: Int) {
  require(!prefixScan || partitionKey == PartitionKey.WithoutLastField, "a prefix-scanned key is placed by its prefix")

  private val prefixSchema = StructType(keySchema.dropRight(1))
  private val restSchema = StructType(keySchema.takeRight(1))
  private def placement(count: Int) =
    if (prefixScan) new KeyPlacement(prefixSchema, PartitionKey.WholeKey, count)
    else new KeyPlacement(keySchema, partitionKey, count)
  private val now = placement(partitions)
  private val written = placement(writtenIn)
  private val layout = new UnsafeRowLayout(if (prefixScan) prefixSchema else keySchema)
  private val restLayout = new UnsafeRowLayout(restSchema)
  private val row = new UnsafeRow(if (prefixScan) prefixSchema.length else keySchema.length)

  /**
   * The partition Spark reads the stored key `key`, read from partition `readFrom`, from.
   * @throws IllegalArgumentException saying how the bytes are not a key of the store's layout, or that Spark would
   *   not have written it to `readFrom`
   */
  def partition(key: Array[Byte], readFrom: Int): Int = {
    if (prefixScan) {
      // Written by Spark with Platform.putInt, in the platform's order: read back the same way.
      val length = if (key.length >= 4) Platform.getInt(key, Platform.BYTE_ARRAY_OFFSET) else -1
      if (length < 1 || 4 + length > key.length) refuse(key, s"no prefix length within its ${key.length} bytes")
      check(key, 4, length, layout, "prefix")
      check(key, 4 + length, key.length - 4 - length, restLayout, "last field")
      row.pointTo(key, Platform.BYTE_ARRAY_OFFSET + 5, length - 1)
    } else {
      check(key, 0, key.length, layout, "key")
      row.pointTo(key, Platform.BYTE_ARRAY_OFFSET + 1, key.length - 1)
    }
    val writtenTo = written.partition(row)
    if (writtenTo != readFrom) throw new IllegalArgumentException(s"the stored key ${hex(key)} was read from " +
      s"partition $readFrom, and Spark's partitioning of $writtenIn partitions writes it to partition $writtenTo: " +
      "the store holds a key its operator never wrote there")
    now.partition(row)
  }

  /** The `length` bytes at `offset` are `[0][row]`, the row in `rows`'s layout. */
  private def check(key: Array[Byte], offset: Int, length: Int, rows: UnsafeRowLayout, what: String): Unit = {
    if (length < 1 || key(offset) != 0) refuse(key, s"its $what has no format version byte 0")
    rows.problem(key, Platform.BYTE_ARRAY_OFFSET + offset + 1, length - 1).foreach(p => refuse(key, s"its $what: $p"))
  }

  private def refuse(key: Array[Byte], why: String): Nothing = throw new IllegalArgumentException(
    s"the stored key ${hex(key)} is not a key of ${keySchema.simpleString}: $why")

  private def hex(key: Array[Byte]): String =
    s"0x${key.take(64).map("%02x".format(_)).mkString}${if (key.length > 64) "..." else ""}"
}
