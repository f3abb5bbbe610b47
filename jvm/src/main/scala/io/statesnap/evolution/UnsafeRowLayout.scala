package io.statesnap.evolution

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.Platform

/**
 * Whether bytes are an UnsafeRow of a given schema, checked before any field is read: a row in another layout
 * (state a deploy with Spark's schema check off left behind) read under the recorded one gives other values, and a
 * variable-length slot read under the wrong schema points anywhere. Structural, as Spark writes rows: a fixed region
 * of 8·⌈n/64⌉ + 8n bytes; no null bit beyond the n fields; a null field's slot zero; every variable-length field's
 * offset and size inside the row, 8-byte aligned, not overlapping another's, and together with the fixed region
 * accounting for the row's whole length; nested rows checked the same way, arrays and maps by their headers.
 * What it cannot see: a fixed-width field of the same width read as another type (int widened to bigint keeps the
 * row's size).
 *
 * A checker is built once per schema and reused for every entry of a migration (one thread), without allocating.
 */
final class UnsafeRowLayout(schema: StructType, at: String = "") {
  private val n = schema.length
  private val bitset = UnsafeRow.calculateBitSetWidthInBytes(n)
  private val fixed = bitset + 8L * n
  private val variable: Array[Boolean] = schema.fields.map(f => !UnsafeRow.isFixedLength(f.dataType))
  /** A decimal too wide for a long keeps 16 bytes reserved, even while null (Spark's UnsafeRowWriter). */
  private val wideDecimal: Array[Boolean] = schema.fields.map(_.dataType match {
    case d: DecimalType => d.precision > Decimal.MAX_LONG_DIGITS
    case _ => false
  })
  private val nested: Array[UnsafeRowLayout] = schema.fields.map(f => f.dataType match {
    case s: StructType => new UnsafeRowLayout(s, path(f.name))
    case _ => null
  })
  // The variable-length regions of the row being checked, as (start, allocated size), in field order.
  private val starts = new Array[Long](n)
  private val sizes = new Array[Long](n)

  /** None if the `length` bytes at `offset` of `base` are a row of the schema, else what is wrong. */
  def problem(base: AnyRef, offset: Long, length: Int): Option[String] = {
    if (length < fixed) return Some(s"${where}$length bytes, fewer than the $fixed of a row of $n fields")
    if (length % 8 != 0) return Some(s"${where}$length bytes, not a whole number of 8-byte words")
    if (n % 64 != 0 && (Platform.getLong(base, offset + bitset - 8) >>> (n % 64)) != 0) {
      return Some(s"${where}null bits set beyond its $n fields")
    }
    var regions = 0
    var i = 0
    while (i < n) {
      val slot = Platform.getLong(base, offset + bitset + 8L * i)
      val isNull = (Platform.getLong(base, offset + (i / 64) * 8L) & (1L << (i % 64))) != 0
      if (isNull && !(wideDecimal(i) && slot != 0)) {
        if (slot != 0) return Some(s"field '${path(schema(i).name)}' is null but its slot is not zero")
      } else if (variable(i)) {
        val start = slot >>> 32
        val size = slot & 0xFFFFFFFFL
        val allocated = if (wideDecimal(i)) 16L else (size + 7) / 8 * 8
        if (start < fixed || start + allocated > length || start % 8 != 0 || size > allocated) {
          return Some(s"field '${path(schema(i).name)}' points at bytes $start-${start + size}, outside the " +
            s"variable region $fixed-$length of the row")
        }
        if (!isNull) {
          val inner = value(base, offset + start, size.toInt, i)
          if (inner.isDefined) return inner
        }
        starts(regions) = start
        sizes(regions) = allocated
        regions += 1
      }
      i += 1
    }
    accounted(regions, length)
  }

  /** Whether the regions, in order, follow the fixed region and each other with no gap, up to the row's end. */
  private def accounted(regions: Int, length: Int): Option[String] = {
    var inOrder = true
    var r = 1
    while (r < regions) { inOrder &&= starts(r) >= starts(r - 1); r += 1 }
    if (!inOrder) { // not written in field order (Spark writes them in order): sort them
      val order = (0 until regions).sortBy(starts(_))
      val (sortedStarts, sortedSizes) = (order.map(starts(_)), order.map(sizes(_)))
      order.indices.foreach { r => starts(r) = sortedStarts(r); sizes(r) = sortedSizes(r) }
    }
    var end = fixed
    r = 0
    while (r < regions) {
      if (starts(r) != end) {
        return Some(if (starts(r) < end) s"${where}variable-length fields whose bytes overlap at ${starts(r)}"
          else s"${where}${starts(r) - end} bytes at $end that belong to no field")
      }
      end = starts(r) + sizes(r)
      r += 1
    }
    if (end != length) Some(s"${where}$length bytes, of which its fields account for $end") else None
  }

  /** The value of variable-length field `i`, as far as its type says anything about its bytes. */
  private def value(base: AnyRef, offset: Long, size: Int, i: Int): Option[String] = schema(i).dataType match {
    case _: StructType => nested(i).problem(base, offset, size)
    case ArrayType(element, _) =>
      if (size < 8) return Some(s"array '${path(schema(i).name)}' has $size bytes, fewer than its 8-byte header")
      val count = Platform.getLong(base, offset)
      if (count < 0 || 8 + (count + 63) / 64 * 8 + count * UnsafeRowLayout.elementSize(element) > size) {
        Some(s"array '${path(schema(i).name)}' says it has $count elements, which do not fit in its $size bytes")
      } else None
    case MapType(_, _, _) =>
      if (size < 8) return Some(s"map '${path(schema(i).name)}' has $size bytes, fewer than its 8-byte header")
      val keys = Platform.getLong(base, offset)
      if (keys < 0 || 8 + keys > size) {
        Some(s"map '${path(schema(i).name)}' says its keys take $keys of its ${size - 8} bytes")
      } else None
    case _ => None
  }

  private def path(name: String): String = if (at.isEmpty) name else s"$at.$name"

  private def where: String = if (at.isEmpty) "the row has " else s"the nested row '$at' has "
}

object UnsafeRowLayout {
  /**
   * The `length` bytes at `offset` of `bytes` as the row of `schema` they hold, its layout checked first, else as
   * hex: how a refusal names an entry's key without reading outside it.
   */
  def describe(bytes: Array[Byte], offset: Int, length: Int, schema: Option[StructType]): String = schema.filter { s =>
    length > 0 && offset + length <= bytes.length &&
      new UnsafeRowLayout(s).problem(bytes, Platform.BYTE_ARRAY_OFFSET + offset, length).isEmpty
  }.fold(bytes.map("%02x".format(_)).mkString("0x", "", "")) { s =>
    val row = new UnsafeRow(s.length)
    row.pointTo(bytes, Platform.BYTE_ARRAY_OFFSET + offset, length)
    row.toSeq(s).mkString("[", ", ", "]")
  }

  /** The bytes each element of an array takes before any variable-length data (Spark's UnsafeArrayData). */
  private def elementSize(dataType: DataType): Long = dataType match {
    case BooleanType | ByteType => 1
    case ShortType => 2
    case IntegerType | FloatType | DateType | _: YearMonthIntervalType => 4
    case _ => 8
  }
}
