package io.statesnap.placement

import io.statesnap.StatesnapErrors

import io.statesnap.evolution.UnsafeRowLayout
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.types.StructType
import org.apache.spark.unsafe.Platform

/**
 * How Spark's RocksDB provider stores the keys of a store (or of one column family), and where in them are the
 * fields Spark's partitioning of the operator hashes.
 */
sealed trait StoredKey {
  /** The schema of the rows [[KeyPlacement]] hashes, and which of their fields. */
  def hashed: StructType
  def partitionKey: PartitionKey
}

object StoredKey {
  /** `[0][row]` (a format version byte, then a row of `schema`), its fields `partitionKey` hashed. */
  final case class Whole(schema: StructType, partitionKey: PartitionKey) extends StoredKey {
    override def hashed: StructType = schema
  }

  /**
   * `[int32 length][0][first row][0][rest row]`: the key of a store that scans by a prefix of its key (a session
   * window's: every field but the session start; a transformWithState map's or timer's: the grouping key) or by a
   * range of it (the first row then Spark's order-preserving encoding of the range's fields). The hashed row (every
   * field of it hashed) is found in the first row (`inFirst`) or the rest, at `path`: the ordinals of nested structs
   * leading to it (none: the row itself).
   * @param first the first row's schema, checked before it is read; None where it is a range scan's encoding, which
   *   is never read
   */
  final case class Split(first: Option[StructType], rest: StructType, inFirst: Boolean, path: Seq[Int])
      extends StoredKey {
    require(!(inFirst && first.isEmpty), "the hashed row is read from a part of known layout")
    /** The schema of each struct on the way to the hashed row, starting with the part's, ending with the hashed. */
    val structs: Seq[StructType] = path.scanLeft(if (inFirst) first.get else rest) { (schema, i) =>
      schema(i).dataType match {
        case s: StructType => s
        case other => throw StatesnapErrors.internal(s"field $i of ${schema.simpleString} is $other, no struct")
      }
    }
    override def hashed: StructType = structs.last
    override def partitionKey: PartitionKey = PartitionKey.WholeKey
  }
}

/**
 * [[KeyPlacement]] of a key as Spark's RocksDB provider stores it ([[StoredKey]]), read from disk. The bytes are
 * input: every row read is checked against its layout ([[UnsafeRowLayout]]) before a field of it is hashed, so a key
 * in another layout is refused by name, never placed by a hash of bytes read under the wrong schema; and a key must
 * have been read from the partition where Spark's partitioning of the count it was written under places it, so that
 * a store holding another's keys (files copied between partitions, a partitioning statesnap does not know, a layout
 * read at the wrong field) is refused, never spread. Not thread-safe: one per task.
 *
 * @param writtenIn the count the keys read were written under; @param partitions the count a key is placed under
 */
final class StoredKeyPlacement(stored: StoredKey, writtenIn: Int, partitions: Int) {
  private val writtenAndNow = new KeyPlacement(stored.hashed, stored.partitionKey, Seq(writtenIn, partitions))
  private val (firstLayout, restLayout, read) = stored match {
    case StoredKey.Whole(schema, _) => (None, new UnsafeRowLayout(schema), new UnsafeRow(schema.length))
    case split: StoredKey.Split => (split.first.map(new UnsafeRowLayout(_)), new UnsafeRowLayout(split.rest),
      new UnsafeRow(split.structs.head.length))
  }

  /**
   * The partition Spark reads the stored key `key`, read from partition `readFrom`, from.
   * @throws IllegalArgumentException saying how the bytes are not a key of the store's layout, or that Spark would
   *   not have written it to `readFrom`
   */
  def partition(key: Array[Byte], readFrom: Int): Int = {
    val row = stored match {
      case StoredKey.Whole(_, _) =>
        check(key, 0, key.length, Some(restLayout), "key")
        read.pointTo(key, Platform.BYTE_ARRAY_OFFSET + 1, key.length - 1)
        read
      case split @ StoredKey.Split(_, _, inFirst, path) =>
        // Written by Spark with Platform.putInt, in the platform's order: read back the same way.
        val length = if (key.length >= 4) Platform.getInt(key, Platform.BYTE_ARRAY_OFFSET) else -1
        if (length < 1 || 4 + length > key.length) refuse(key, s"no prefix length within its ${key.length} bytes")
        check(key, 4, length, firstLayout, "first part")
        check(key, 4 + length, key.length - 4 - length, Some(restLayout), "rest")
        if (inFirst) read.pointTo(key, Platform.BYTE_ARRAY_OFFSET + 5, length - 1)
        else read.pointTo(key, Platform.BYTE_ARRAY_OFFSET + 5 + length, key.length - 5 - length)
        path.zip(split.structs.tail).foldLeft(read: InternalRow) { case (r, (i, s)) => r.getStruct(i, s.length) }
    }
    val placed = writtenAndNow.partitions(row)
    val writtenTo = placed.getInt(0)
    if (writtenTo != readFrom) throw PlacementErrors.writtenElsewhere(hex(key), readFrom, writtenIn, writtenTo)
    placed.getInt(1)
  }

  /** The `length` bytes at `offset` are `[0][row]`, the row in `rows`'s layout if known. */
  private def check(key: Array[Byte], offset: Int, length: Int, rows: Option[UnsafeRowLayout], what: String): Unit = {
    if (length < 1 || key(offset) != 0) refuse(key, s"its $what has no format version byte 0")
    rows.foreach(_.problem(key, Platform.BYTE_ARRAY_OFFSET + offset + 1, length - 1).foreach(p =>
      refuse(key, s"its $what: $p")))
  }

  private def refuse(key: Array[Byte], why: String): Nothing = throw PlacementErrors.notAKey(hex(key), describe, why)

  private def describe: String = stored match {
    case StoredKey.Whole(schema, _) => schema.simpleString
    case StoredKey.Split(first, rest, _, _) =>
      s"${first.fold("a range")(_.simpleString)} then ${rest.simpleString}"
  }

  private def hex(key: Array[Byte]): String =
    s"0x${key.take(64).map("%02x".format(_)).mkString}${if (key.length > 64) "..." else ""}"
}
