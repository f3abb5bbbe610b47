package org.apache.spark.sql.execution.streaming.state

import java.lang.reflect.Method
import java.util.Arrays

import scala.collection.mutable.ArrayBuffer
import scala.util.control.NonFatal

import io.statesnap.StatesnapException
import io.statesnap.evolution.UnsafeRowLayout
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.types.StructType

/**
 * Rewrites every value of one column family (or of a store without them) in the RocksDB instance behind Spark's
 * RocksDB provider, in place, exactly as `RocksDB.put` and `putList` write (native put, then the changelog) except
 * for the read that `trackTotalNumberOfRows` (on by default) makes before every put to keep the row count. A rewrite only
 * overwrites keys that exist, so that count cannot change, and the read roughly halves write throughput.
 *
 * Spark 4.1 has no write without that read. This file is statesnap's one reach into Spark's internals: it lives
 * in Spark's package for the `private[sql]` types and reaches four private members of `RocksDB` by reflection,
 * checked when the rewriter is built, before any byte is written.
 */
final class StatesnapValueRewriter private (rocksDB: RocksDB, members: StatesnapValueRewriter.RocksDBMembers,
    columnFamily: Option[String], keySpec: KeyStateEncoderSpec, newValueSchema: StructType) {
  import StatesnapValueRewriter.{hasPrefix, join, Source}

  /**
   * Streams through a point-in-time view of the column family, replacing each value by the `convert` of the one
   * source layout it is in, and calling `afterEach` once per value. `convert` receives a row valid until the next
   * call; when it throws, the rewrite stops with an [[StatesnapValueRewriter.EntryFailure]] naming the entry's key.
   * An entry in no source layout, or in more than one, stops it with a [[StatesnapValueRewriter.LayoutFailure]].
   */
  def rewriteAll(sources: Seq[Source], afterEach: () => Unit): Unit = {
    val decoder = new UnsafeRowDataEncoder(keySpec, sources.head.layout)
    val encoder = new UnsafeRowDataEncoder(keySpec, newValueSchema)
    val in = new InSource(sources)
    forEachEntry { (key, value) =>
      overwrite(key, encoder.encodeValue(in.converted(key, decoder.decodeValue(value))))
      afterEach()
    }
  }

  /**
   * The same for a list state: each key's value holds all its elements, so each is decoded, converted and
   * re-encoded, and the list written back whole, exactly as `putList` joins it (one key's elements in memory at a
   * time). `afterEach` gets the number of elements of each key.
   */
  def rewriteAllLists(sources: Seq[Source], afterEach: Int => Unit): Unit = {
    val first = sources.head.layout
    val decoder = StatesnapSparkGlue.listValueEncoder(new UnsafeRowDataEncoder(keySpec, first), first, rocksDB)
    val encoder = StatesnapSparkGlue.listValueEncoder(new UnsafeRowDataEncoder(keySpec, newValueSchema),
      newValueSchema, rocksDB)
    val delimiter = StatesnapSparkGlue.mergeDelimiter(rocksDB)
    val elements = new ArrayBuffer[Array[Byte]]
    val in = new InSource(sources)
    forEachEntry { (key, value) =>
      elements.clear()
      decoder.decodeValues(value).foreach(old => elements += encoder.encodeValue(in.converted(key, old)))
      overwrite(key, join(elements, delimiter))
      afterEach(elements.length)
    }
  }

  /** Finds the one source layout an entry's bytes are in (bytes on disk are input), then converts it from there. */
  private final class InSource(sources: Seq[Source]) {
    private val layouts = sources.map(s => new UnsafeRowLayout(s.layout)).toArray
    private val rows = sources.map(s => new UnsafeRow(s.layout.length)).toArray
    private val converts = sources.map(_.convert).toArray

    def converted(key: Array[Byte], stored: UnsafeRow): UnsafeRow = {
      val (base, offset, size) = (stored.getBaseObject, stored.getBaseOffset, stored.getSizeInBytes)
      var found = -1
      var i = 0
      while (i < layouts.length) {
        if (layouts(i).problem(base, offset, size).isEmpty) {
          if (found >= 0) throw new StatesnapValueRewriter.LayoutFailure(describeKey(key), s"its bytes fit both " +
            s"${sources(found).layout.simpleString} and ${sources(i).layout.simpleString}, so which one wrote it " +
            "cannot be told")
          found = i
        }
        i += 1
      }
      if (found < 0) throw new StatesnapValueRewriter.LayoutFailure(describeKey(key), sources.indices.map { s =>
        (if (sources.size > 1) s"as ${sources(s).layout.simpleString}: " else "") +
          layouts(s).problem(base, offset, size).get
      }.mkString("; "))
      val row = rows(found)
      row.pointTo(base, offset, size)
      try converts(found)(row) catch {
        case NonFatal(e) => throw new StatesnapValueRewriter.EntryFailure(describeKey(key), row.copy(), found, e)
      }
    }
  }

  /** Calls `body` with each key and value of the state, from an iterator that the writes do not disturb. */
  private def forEachEntry(body: (Array[Byte], Array[Byte]) => Unit): Unit = {
    // A store without column families keeps its keys unprefixed: the whole database is the state.
    val prefix = columnFamily.fold(Array.emptyByteArray)(cf =>
      members.keyPrefix.invoke(rocksDB, Array.emptyByteArray, cf).asInstanceOf[Array[Byte]])
    val entries = db.newIterator() // an implicit snapshot: the puts do not show up in it
    // Each call to `key` copies the key out of RocksDB: read it once per entry.
    def keyInFamily(): Array[Byte] = {
      val key = if (entries.isValid) entries.key else null
      if (key != null && hasPrefix(key, prefix)) key else null
    }
    try {
      entries.seek(prefix)
      var key = keyInFamily()
      while (key != null) {
        body(key, entries.value)
        entries.next()
        key = keyInFamily()
      }
    } finally entries.close()
  }

  /** What `RocksDB.put` does, without the read before it: the native put, then the changelog. */
  private def overwrite(key: Array[Byte], value: Array[Byte]): Unit = {
    StatesnapRocksDBGlue.beforeOverwrite(rocksDB)
    db.put(writeOptions, key, value)
    changelog.foreach(_.put(key, value))
  }

  private lazy val db = members.db.invoke(rocksDB).asInstanceOf[org.rocksdb.RocksDB]
  private lazy val writeOptions = members.writeOptions.invoke(rocksDB).asInstanceOf[org.rocksdb.WriteOptions]
  private lazy val changelog =
    members.changelogWriter.invoke(rocksDB).asInstanceOf[Option[StateStoreChangelogWriter]]

  /**
   * A stored key as the application sees it (for errors), or its bytes when it does not decode. A plain key (a
   * version byte, then a row) is checked against its layout before any field is read ([[UnsafeRowLayout.describe]]);
   * the composite key of a map state is decoded by Spark's own encoder.
   */
  private def describeKey(key: Array[Byte]): String = {
    val stored = if (columnFamily.isDefined) RocksDBStateStoreProvider.decodeStateRowWithPrefix(key) else key
    keySpec match {
      case NoPrefixKeyStateEncoderSpec(keySchema) =>
        UnsafeRowLayout.describe(stored, 1, stored.length - 1, Some(keySchema))
      case _ => try {
        RocksDBStateEncoder.getKeyEncoder(new UnsafeRowDataEncoder(keySpec, newValueSchema), keySpec,
          columnFamily.isDefined).decodeKey(stored).toSeq(keySpec.keySchema).mkString("[", ", ", "]")
      } catch {
        case NonFatal(_) => UnsafeRowLayout.describe(key, 0, key.length, None)
      }
    }
  }
}

object StatesnapValueRewriter {
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

  /** The private members of Spark's `RocksDB` that `put` uses: its native handle, write options and changelog. */
  private final case class RocksDBMembers(db: Method, writeOptions: Method, changelogWriter: Method,
      keyPrefix: Method)

  private lazy val members: Either[String, RocksDBMembers] = for {
    db <- member("db")
    writeOptions <- member("writeOptions")
    changelogWriter <- member("changelogWriter")
    keyPrefix <- member("encodeStateRowWithPrefix", classOf[Array[Byte]], classOf[String])
  } yield RocksDBMembers(db, writeOptions, changelogWriter, keyPrefix)

  /**
   * A rewriter for `columnFamily` of the store behind `provider` (Spark's RocksDB provider, initialized), or of
   * the whole store if it has no column families (None).
   * @param describe the state, as errors name it
   * @throws StatesnapException `STATESNAP_UNSUPPORTED_CONFIGURATION`, naming what is missing, if this store or
   *                            Spark build does not have what the rewrite needs
   */
  def apply(provider: StateStoreProvider, columnFamily: Option[String], keySpec: KeyStateEncoderSpec,
      newValueSchema: StructType, describe: String): StatesnapValueRewriter = {
    def unsupported(why: String) = new StatesnapException(StatesnapException.UnsupportedConfiguration,
      s"$describe needs a migration, which statesnap cannot run here: $why. Nothing was rewritten.")
    (provider, members) match {
      case (rocks: RocksDBStateStoreProvider, _) if StatesnapSparkGlue.rowChecksums(rocks.rocksDB) =>
        throw unsupported("the store keeps a checksum with every value " +
          "(spark.sql.streaming.stateStore.rowChecksum.enabled=true, pinned in the query's offset log), which " +
          "statesnap's in-place rewrite does not write; statesnap supports stores without row checksums")
      case (rocks: RocksDBStateStoreProvider, Right(found)) =>
        new StatesnapValueRewriter(rocks.rocksDB, found, columnFamily, keySpec, newValueSchema)
      case (_: RocksDBStateStoreProvider, Left(missing)) => throw unsupported(s"Spark's RocksDB has no member " +
        s"$missing in this Spark build (${org.apache.spark.SPARK_VERSION}); statesnap supports the Spark minors it " +
        "ships a jar for")
      case (other, _) => throw unsupported(s"expected Spark's RocksDB provider, found ${other.getClass}")
    }
  }

  private def member(name: String, parameters: Class[_]*): Either[String, Method] =
    try {
      val method = classOf[RocksDB].getDeclaredMethod(name, parameters: _*)
      method.setAccessible(true)
      Right(method)
    } catch { case _: NoSuchMethodException | _: SecurityException => Left(name) }

  /** The elements of a list joined as Spark's merge operator joins them. */
  private def join(elements: ArrayBuffer[Array[Byte]], delimiter: Array[Byte]): Array[Byte] = {
    val joined = new Array[Byte](elements.map(_.length).sum + delimiter.length * math.max(0, elements.length - 1))
    var at = 0
    var i = 0
    while (i < elements.length) {
      if (i > 0) { System.arraycopy(delimiter, 0, joined, at, delimiter.length); at += delimiter.length }
      System.arraycopy(elements(i), 0, joined, at, elements(i).length)
      at += elements(i).length
      i += 1
    }
    joined
  }

  private def hasPrefix(key: Array[Byte], prefix: Array[Byte]): Boolean =
    key.length >= prefix.length && Arrays.equals(key, 0, prefix.length, prefix, 0, prefix.length)
}
