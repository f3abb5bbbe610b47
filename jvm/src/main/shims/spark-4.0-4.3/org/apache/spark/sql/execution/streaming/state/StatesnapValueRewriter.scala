package org.apache.spark.sql.execution.streaming.state

import java.lang.reflect.Method
import java.util.Arrays

import scala.collection.mutable.ArrayBuffer
import scala.util.control.NonFatal

import io.statesnap.StatesnapException
import io.statesnap.evolution.UnsafeRowLayout
import org.apache.spark.sql.types.StructType

/**
 * Rewrites every value of one column family (or of a store without them) in the RocksDB instance behind Spark's
 * RocksDB provider, in place, exactly as `RocksDB.put` and `putList` write except for the read before every put
 * ([[StatesnapRewrite]]). Spark 4.x has no write without that read. It lives in Spark's package for the
 * `private[sql]` types, and reaches a fourth private member of `RocksDB` by reflection, the key prefix of a column
 * family, checked with the others when the rewriter is built, before any byte is written.
 */
final class StatesnapValueRewriter private (rocksDB: RocksDB, writes: StatesnapRewrite.RocksDBWrites,
    keyPrefix: Method, columnFamily: Option[String], keySpec: KeyStateEncoderSpec, newValueSchema: StructType) {
  import StatesnapRewrite.{InSource, Source}
  import StatesnapValueRewriter.{hasPrefix, join}

  /**
   * Streams through a point-in-time view of the column family, replacing each value by the `convert` of the one
   * source layout it is in, and calling `afterEach` once per value. `convert` receives a row valid until the next
   * call; when it throws, the rewrite stops with an [[StatesnapRewrite.EntryFailure]] naming the entry's key.
   * An entry in no source layout, or in more than one, stops it with a [[StatesnapRewrite.LayoutFailure]].
   */
  def rewriteAll(sources: Seq[Source], afterEach: () => Unit): Unit = {
    val decoder = new UnsafeRowDataEncoder(keySpec, sources.head.layout)
    val encoder = new UnsafeRowDataEncoder(keySpec, newValueSchema)
    val in = new InSource(sources, describeKey)
    forEachEntry { (key, value) =>
      writes.overwrite(key, encoder.encodeValue(in.converted(key, decoder.decodeValue(value))))
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
    val in = new InSource(sources, describeKey)
    forEachEntry { (key, value) =>
      elements.clear()
      decoder.decodeValues(value).foreach(old => elements += encoder.encodeValue(in.converted(key, old)))
      writes.overwrite(key, join(elements, delimiter))
      afterEach(elements.length)
    }
  }

  /** Calls `body` with each key and value of the state, from an iterator that the writes do not disturb. */
  private def forEachEntry(body: (Array[Byte], Array[Byte]) => Unit): Unit = {
    // A store without column families keeps its keys unprefixed: the whole database is the state.
    val prefix = columnFamily.fold(Array.emptyByteArray)(cf =>
      keyPrefix.invoke(rocksDB, Array.emptyByteArray, cf).asInstanceOf[Array[Byte]])
    val entries = writes.db.newIterator() // an implicit snapshot: the puts do not show up in it
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
  /** The key prefix of a column family: the one member beyond [[StatesnapRewrite.RocksDBWrites]] a rewrite uses. */
  private lazy val keyPrefix =
    StatesnapRewrite.member("encodeStateRowWithPrefix", classOf[Array[Byte]], classOf[String])

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
    provider match {
      case rocks: RocksDBStateStoreProvider if StatesnapSparkGlue.rowChecksums(rocks.rocksDB) =>
        throw unsupported("the store keeps a checksum with every value " +
          "(spark.sql.streaming.stateStore.rowChecksum.enabled=true, pinned in the query's offset log), which " +
          "statesnap's in-place rewrite does not write; statesnap supports stores without row checksums")
      case rocks: RocksDBStateStoreProvider =>
        val rewriter = for {
          prefix <- keyPrefix
          writes <- StatesnapRewrite.RocksDBWrites(rocks.rocksDB)
        } yield new StatesnapValueRewriter(rocks.rocksDB, writes, prefix, columnFamily, keySpec, newValueSchema)
        rewriter.fold(missing => throw unsupported(s"Spark's RocksDB has no member $missing in this Spark build " +
          s"(${org.apache.spark.SPARK_VERSION}); statesnap supports the Spark minors it ships a jar for"), identity)
      case other => throw unsupported(s"expected Spark's RocksDB provider, found ${other.getClass}")
    }
  }

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
