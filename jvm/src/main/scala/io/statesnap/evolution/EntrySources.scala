package io.statesnap.evolution

import scala.util.control.NonFatal

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.types.StructType

/**
 * The layouts the stored entries of a state may be in when a rewrite reads them, and how each converts: every entry's
 * bytes are checked against them ([[UnsafeRowLayout]]) before it is converted, on every Spark minor and in every
 * rewrite (online, offline, list elements, group state).
 */
object EntrySources {
  /**
   * A layout a state's entries may be in, and how an entry in it becomes the new layout. A state has one (the
   * recorded layout), or two where `adopt` found entries that a deploy with Spark's schema check off wrote in its own.
   */
  final case class Source(layout: StructType, convert: UnsafeRow => UnsafeRow)

  /** `convert` of source `source` failed on the entry with key `key`, whose value in that layout is `oldRow`. */
  final class EntryFailure(val key: String, val oldRow: UnsafeRow, val source: Int, cause: Throwable)
    extends RuntimeException(s"rewriting the entry with key $key failed", cause)

  /** Giving the entry with key `key` its new key failed: `oldKey` is its key in the recorded layout. */
  final class KeyFailure(val key: String, val oldKey: UnsafeRow, cause: Throwable)
    extends RuntimeException(s"giving the entry with key $key its new key failed", cause)

  /**
   * The entry with key `key` would move to new key `newKey`, which another entry has already: one moved there (or kept
   * there), or, `unmoved`, one not moved yet whose old key has the new key's bytes.
   */
  final class KeysMeet(val key: String, val newKey: String, val unmoved: Boolean)
    extends RuntimeException(s"the entry with key $key would move to key $newKey, another entry's")

  /** The entry with key `key` is not in exactly one layout the migration reads it with: `problem` says how. */
  final class LayoutFailure(val key: String, val problem: String)
    extends RuntimeException(s"the entry with key $key is not in the recorded layout: $problem")

  /**
   * Finds the one source layout an entry's bytes are in (bytes on disk are input), then converts it from there.
   * `convert` receives a row valid until the next call.
   */
  final class InSource(sources: Seq[Source], describeKey: Array[Byte] => String) {
    private val layouts = sources.map(s => new UnsafeRowLayout(s.layout)).toArray
    private val rows = sources.map(s => new UnsafeRow(s.layout.length)).toArray
    private val converts = sources.map(_.convert).toArray

    def converted(key: Array[Byte], stored: UnsafeRow): UnsafeRow = {
      val (base, offset, size) = (stored.getBaseObject, stored.getBaseOffset, stored.getSizeInBytes)
      var found = -1
      var i = 0
      while (i < layouts.length) {
        if (layouts(i).problem(base, offset, size).isEmpty) {
          if (found >= 0) throw new LayoutFailure(describeKey(key), s"its bytes fit both " +
            s"${sources(found).layout.simpleString} and ${sources(i).layout.simpleString}, so which one wrote it " +
            "cannot be told")
          found = i
        }
        i += 1
      }
      if (found < 0) throw new LayoutFailure(describeKey(key), sources.indices.map { s =>
        (if (sources.size > 1) s"as ${sources(s).layout.simpleString}: " else "") +
          layouts(s).problem(base, offset, size).get
      }.mkString("; "))
      val row = rows(found)
      row.pointTo(base, offset, size)
      try converts(found)(row) catch {
        case NonFatal(e) => throw new EntryFailure(describeKey(key), row.copy(), found, e)
      }
    }
  }
}
