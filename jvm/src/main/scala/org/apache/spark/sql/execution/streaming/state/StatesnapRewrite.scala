package org.apache.spark.sql.execution.streaming.state

import java.lang.reflect.Method

import scala.util.control.NonFatal

import io.statesnap.evolution.UnsafeRowLayout
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.types.StructType

/**
 * What an in-place rewrite of a state's values is on every Spark minor (each minor's [[StatesnapValueRewriter]]
 * finds the state's entries its own way): the layouts its entries may be in, how a rewrite fails, and the write
 * path of `RocksDB.put` it takes, without the read `trackTotalNumberOfRows` (on by default) makes before every put
 * to keep the row count. A rewrite only overwrites keys that exist, so that count cannot change, and the read
 * roughly halves write throughput.
 */
object StatesnapRewrite {
  /**
   * A layout a state's entries may be in, and how an entry in it becomes the new layout. A state has one (the
   * recorded layout), or two where `adopt` found entries that a deploy with Spark's schema check off wrote in its own.
   */
  final case class Source(layout: StructType, convert: UnsafeRow => UnsafeRow)

  /** `convert` of source `source` failed on the entry with key `key`, whose value in that layout is `oldRow`. */
  final class EntryFailure(val key: String, val oldRow: UnsafeRow, val source: Int, cause: Throwable)
    extends RuntimeException(s"rewriting the entry with key $key failed", cause)

  /** The entry with key `key` is not in exactly one layout the migration reads it with: `problem` says how. */
  final class LayoutFailure(val key: String, val problem: String)
    extends RuntimeException(s"the entry with key $key is not in the recorded layout: $problem")

  /**
   * Finds the one source layout an entry's bytes are in (bytes on disk are input), then converts it from there.
   * `convert` receives a row valid until the next call.
   */
  private[state] final class InSource(sources: Seq[Source], describeKey: Array[Byte] => String) {
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

  /**
   * The private members of Spark's `RocksDB` that `put` writes through (its native handle, write options and
   * changelog), reached by reflection: checked when a rewriter is built, before any byte is written.
   */
  private[state] final class RocksDBWrites private (rocksDB: RocksDB, members: RocksDBWrites.Members) {
    /** The native handle, for an iterator over a point-in-time view (the puts do not show up in it). */
    lazy val db: org.rocksdb.RocksDB = members.db.invoke(rocksDB).asInstanceOf[org.rocksdb.RocksDB]
    private lazy val writeOptions = members.writeOptions.invoke(rocksDB).asInstanceOf[org.rocksdb.WriteOptions]
    private lazy val changelog =
      members.changelogWriter.invoke(rocksDB).asInstanceOf[Option[StateStoreChangelogWriter]]

    /** What `RocksDB.put` does, without the read before it: the native put, then the changelog. */
    def overwrite(key: Array[Byte], value: Array[Byte]): Unit = {
      StatesnapRocksDBGlue.beforeOverwrite(rocksDB)
      db.put(writeOptions, key, value)
      changelog.foreach(_.put(key, value))
    }
  }

  private[state] object RocksDBWrites {
    private[state] final case class Members(db: Method, writeOptions: Method, changelogWriter: Method)

    private lazy val members: Either[String, Members] = for {
      db <- member("db")
      writeOptions <- member("writeOptions")
      changelogWriter <- member("changelogWriter")
    } yield Members(db, writeOptions, changelogWriter)

    /** The write path of `rocksDB`, or the name of a member this Spark build lacks. */
    def apply(rocksDB: RocksDB): Either[String, RocksDBWrites] = members.map(new RocksDBWrites(rocksDB, _))
  }

  /** A private method of Spark's `RocksDB`, made accessible, or its name if this Spark build has no such method. */
  private[state] def member(name: String, parameters: Class[_]*): Either[String, Method] =
    try {
      val method = classOf[RocksDB].getDeclaredMethod(name, parameters: _*)
      method.setAccessible(true)
      Right(method)
    } catch { case _: NoSuchMethodException | _: SecurityException => Left(name) }
}
