package org.apache.spark.sql.execution.streaming.state

import io.statesnap.StatesnapErrors

import java.lang.reflect.Method
import java.util.Arrays

import scala.collection.mutable.ArrayBuffer
import scala.util.control.NonFatal

import io.statesnap.StatesnapException
import io.statesnap.evolution.{EntrySources, UnsafeRowLayout}
import org.apache.spark.sql.catalyst.CatalystTypeConverters
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.types.StructType
import org.apache.spark.unsafe.Platform
import org.rocksdb.ReadOptions

/**
 * Rewrites every value of one column family (or of a store without them) in the RocksDB instance behind Spark's
 * RocksDB provider, in place, the bytes `RocksDB.put` and `putList` write without the read before every put
 * ([[StatesnapRewrite]]): Spark 4.x has no write without that read. Values overwritten as read, in key order, are
 * loaded in bulk (`overwritingInOrder`); a map's entries moved to new keys are put. It lives in Spark's package for
 * the `private[sql]` types, and reaches a fourth private member of `RocksDB` by reflection, the key prefix of a
 * column family, checked with the others when the rewriter is built, before any byte is written.
 */
final class StatesnapValueRewriter private (rocksDB: RocksDB, writes: StatesnapRewrite.RocksDBWrites,
    keyPrefix: Method, columnFamily: Option[String], keySpec: KeyStateEncoderSpec, newValueSchema: StructType) {
  import EntrySources.{EntryFailure, InSource, KeyFailure, KeysMeet, LayoutFailure, Source}
  import StatesnapValueRewriter.{hasPrefix, hex, join, listElements, mapKeyProblem}

  /**
   * Streams through a point-in-time view of the column family, replacing each value by the `convert` of the one
   * source layout it is in, and calling `afterEach` once per value. `convert` receives a row valid until the next
   * call; when it throws, the rewrite stops with an [[EntrySources.EntryFailure]] naming the entry's key.
   * An entry in no source layout, or in more than one, stops it with a [[EntrySources.LayoutFailure]].
   */
  def rewriteAll(sources: Seq[Source], afterEach: () => Unit): Unit = {
    val decoder = new UnsafeRowDataEncoder(keySpec, sources.head.layout)
    val encoder = new UnsafeRowDataEncoder(keySpec, newValueSchema)
    val in = new InSource(sources, describeKey(_))
    writes.overwritingInOrder(rocksDB.rocksDbOptions) { overwrite =>
      forEachEntry { (key, value) =>
        overwrite(key, encoder.encodeValue(in.converted(key, decoder.decodeValue(value))))
        afterEach()
      }
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
    val in = new InSource(sources, describeKey(_))
    writes.overwritingInOrder(rocksDB.rocksDbOptions) { overwrite =>
      forEachEntry { (key, value) =>
        elements.clear()
        decoder.decodeValues(value).foreach(old => elements += encoder.encodeValue(in.converted(key, old)))
        overwrite(key, join(elements, delimiter))
        afterEach(elements.length)
      }
    }
  }

  /**
   * Gives every entry of a map state its new key (`struct<key, userKey>`), UnsafeRow-encoded: each stored key checked
   * against the layout `keys` reads (the grouping key's and the user key's rows, each where Spark's prefix-scan
   * encoder puts it), decoded by Spark's own encoder of `oldKeySpec`, converted, encoded by the encoder of the new
   * spec, and the entry moved there with its value converted as in [[rewriteAll]]. An old key whose new key another
   * entry already has (a user key field dropped, two entries meeting) is merged into it by `merge` (the two values,
   * both converted: the one there first, then the one moving), the row count kept as Spark's `remove` keeps it; or,
   * without a merge, stops the rewrite with a [[EntrySources.KeysMeet]] naming both: the store then never commits.
   * The entry there holds a converted value when it was visited already (the entries are visited in key order) or
   * was not in the state as the rewrite found it (a move put it there); else it is an entry not yet moved whose old
   * key has the new key's bytes, and even a merge stops the rewrite, since nothing tells its layout.
   */
  def rewriteAllMapKeys(oldKeySpec: PrefixKeyScanStateEncoderSpec, keys: Source, sources: Seq[Source],
      merge: Option[(InternalRow, InternalRow) => UnsafeRow], afterEach: () => Unit): Unit = {
    val family = columnFamily.getOrElse(throw StatesnapErrors.internal("a map state lives in a column family"))
    val decoder = new UnsafeRowDataEncoder(keySpec, sources.head.layout)
    val encoder = new UnsafeRowDataEncoder(keySpec, newValueSchema)
    val oldKeys = RocksDBStateEncoder.getKeyEncoder(new UnsafeRowDataEncoder(oldKeySpec, sources.head.layout),
      oldKeySpec, true)
    val newKeys = RocksDBStateEncoder.getKeyEncoder(encoder, keySpec, true)
    val parts = keys.layout.fields.map(f => new UnsafeRowLayout(new StructType(Array(f))))
    val in = new InSource(sources, describeKeyIn(_, oldKeySpec))
    forEachEntryAsFound { (key, value, found) =>
      val stored = RocksDBStateStoreProvider.decodeStateRowWithPrefix(key)
      mapKeyProblem(stored, parts).foreach(problem => throw new LayoutFailure(hex(key), s"its key is not a map " +
        s"key of ${keys.layout.simpleString}: $problem"))
      val old = oldKeys.decodeKey(stored)
      val moved = try keys.convert(old) catch {
        case NonFatal(e) => throw new KeyFailure(describeKeyIn(key, oldKeySpec), old.copy(), e)
      }
      val target = keyPrefix.invoke(rocksDB, newKeys.encodeKey(moved), family).asInstanceOf[Array[Byte]]
      val converted = in.converted(key, decoder.decodeValue(value))
      val there = if (Arrays.equals(target, key)) null else writes.db.get(target)
      if (there == null) {
        if (!Arrays.equals(target, key)) writes.delete(key)
        writes.overwrite(target, encoder.encodeValue(converted))
      } else {
        val unmoved = Arrays.compareUnsigned(target, key) > 0 && found(target)
        if (merge.isEmpty || unmoved) throw new KeysMeet(describeKeyIn(key, oldKeySpec), shown(moved, keySpec),
          unmoved)
        val merged = merge.get(encoder.decodeValue(there), converted)
        writes.deleteCounted(key, family)
        writes.overwrite(target, encoder.encodeValue(merged))
      }
      afterEach()
    }
  }

  /**
   * The same for the Avro-encoded state of transformWithState (`encodingFormat=avro`), whose every value, and every
   * element of a list, starts with the schema id it was written under: each is decoded by Spark's own Avro decoder
   * in the schema Spark's files give that id (`sources(i)` for `ids(i)`), converted by that id's source, and encoded
   * by Spark's own encoder in the new schema, under the id `schemas` gives the state now. An entry under an id in
   * `refused` stops the rewrite with that refusal; one under an id Spark's files do not list, or whose bytes do not
   * decode, with a [[EntrySources.LayoutFailure]].
   */
  def rewriteAllAvro(schemas: StatesnapAvroSchemas, ids: Seq[Short], refused: Map[Short, RuntimeException],
      list: Boolean)(sources: Seq[Source], afterEach: Int => Unit): Unit = {
    val state = columnFamily.getOrElse(throw StatesnapErrors.internal("Avro state lives in column families"))
    val decoders = ids.zip(sources).zipWithIndex.map { case ((id, source), i) =>
      id -> (i, new AvroStateEncoder(keySpec, source.layout, Some(schemas), state))
    }.toMap
    val encoder = new AvroStateEncoder(keySpec, newValueSchema, Some(schemas), state)
    def converted(key: Array[Byte], value: Array[Byte]): UnsafeRow = {
      val id = StatesnapAvroSchemas.schemaIdOf(value).getOrElse(throw new LayoutFailure(describeKey(key, encoder),
        s"its value has no Avro format version byte 0 and schema id (${hex(value)})"))
      refused.get(id).foreach(refusal => throw refusal)
      val (index, decoder) = decoders.getOrElse(id, throw new LayoutFailure(describeKey(key, encoder), s"its " +
        s"value was written under schema id $id, which Spark's schema files do not list for the state (they list " +
        s"${(ids ++ refused.keys).sorted.mkString(", ")})"))
      val old = try decoder.decodeValue(value) catch {
        case NonFatal(e) => throw new LayoutFailure(describeKey(key, encoder), s"its value does not decode as the " +
          s"Avro record of schema id $id (${sources(index).layout.simpleString}): $e")
      }
      try sources(index).convert(old) catch {
        case NonFatal(e) => throw new EntryFailure(describeKey(key, encoder), old.copy(), index, e)
      }
    }
    writes.overwritingInOrder(rocksDB.rocksDbOptions) { overwrite =>
      if (!list) forEachEntry { (key, value) =>
        overwrite(key, encoder.encodeValue(converted(key, value)))
        afterEach(1)
      } else {
        val elementEncoder = StatesnapSparkGlue.listValueEncoder(encoder, newValueSchema, rocksDB)
        val delimiter = StatesnapSparkGlue.mergeDelimiter(rocksDB)
        val elements = new ArrayBuffer[Array[Byte]]
        forEachEntry { (key, value) =>
          elements.clear()
          listElements(value, delimiter, describeKey(key, encoder))
            .foreach(e => elements += elementEncoder.encodeValue(converted(key, e)))
          overwrite(key, join(elements, delimiter))
          afterEach(elements.length)
        }
      }
    }
  }

  /** A key row as the application sees it: `[id0, [u1, web]]`. */
  private def shown(key: UnsafeRow, spec: KeyStateEncoderSpec): String =
    CatalystTypeConverters.createToScalaConverter(spec.keySchema)(key).toString

  /** Calls `body` with each key and value of the state, from an iterator that the writes do not disturb. */
  private def forEachEntry(body: (Array[Byte], Array[Byte]) => Unit): Unit =
    forEachEntryAsFound((key, value, _) => body(key, value))

  /**
   * Calls `body` with each key and value of the state in key order, from a snapshot of the state as the rewrite
   * found it that the writes do not disturb, and whether a key was in that snapshot.
   */
  private def forEachEntryAsFound(body: (Array[Byte], Array[Byte], Array[Byte] => Boolean) => Unit): Unit = {
    // A store without column families keeps its keys unprefixed: the whole database is the state.
    val prefix = columnFamily.fold(Array.emptyByteArray)(cf =>
      keyPrefix.invoke(rocksDB, Array.emptyByteArray, cf).asInstanceOf[Array[Byte]])
    val snapshot = writes.db.getSnapshot
    val asFound = new ReadOptions().setSnapshot(snapshot)
    val entries = writes.db.newIterator(asFound)
    val found = (key: Array[Byte]) => writes.db.get(asFound, key) != null
    // Each call to `key` copies the key out of RocksDB: read it once per entry.
    def keyInFamily(): Array[Byte] = {
      val key = if (entries.isValid) entries.key else null
      if (key != null && hasPrefix(key, prefix)) key else null
    }
    try {
      entries.seek(prefix)
      var key = keyInFamily()
      while (key != null) {
        body(key, entries.value, found)
        entries.next()
        key = keyInFamily()
      }
    } finally {
      entries.close()
      asFound.close()
      writes.db.releaseSnapshot(snapshot)
    }
  }

  /**
   * A stored key as the application sees it (for errors), or its bytes when it does not decode. A plain UnsafeRow key
   * (a version byte, then a row) is checked against its layout before any field is read
   * ([[UnsafeRowLayout.describe]]); an Avro key (`avro`, the state's Avro encoder) and the composite key of a map
   * state are decoded by Spark's own encoder.
   */
  private def describeKey(key: Array[Byte], avro: RocksDBDataEncoder = null): String = describeKeyIn(key, keySpec, avro)

  /** A stored key written under `spec` (a map's old key, `avro` null), as [[describeKey]] describes it. */
  private def describeKeyIn(key: Array[Byte], spec: KeyStateEncoderSpec, avro: RocksDBDataEncoder = null): String = {
    val stored = if (columnFamily.isDefined) RocksDBStateStoreProvider.decodeStateRowWithPrefix(key) else key
    spec match {
      case NoPrefixKeyStateEncoderSpec(keySchema) if avro == null =>
        UnsafeRowLayout.describe(stored, 1, stored.length - 1, Some(keySchema))
      case _ => try {
        val data = Option(avro).getOrElse(new UnsafeRowDataEncoder(spec, newValueSchema))
        shown(RocksDBStateEncoder.getKeyEncoder(data, spec, columnFamily.isDefined).decodeKey(stored), spec)
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
    def unsupported(why: String) = SparkBuildErrors.cannotMigrateHere(describe, why)
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

  /**
   * What is wrong with `stored` as a map key of Spark's prefix-scan encoder, `[int32 length][0][row][0][row]`: the
   * grouping key's row in `parts(0)`'s layout, the user key's in `parts(1)`'s; None if nothing is.
   */
  private def mapKeyProblem(stored: Array[Byte], parts: Array[UnsafeRowLayout]): Option[String] = {
    val size = if (stored.length >= 4) Platform.getInt(stored, Platform.BYTE_ARRAY_OFFSET) else -1
    if (size < 1 || size > stored.length - 5) Some(s"no grouping key length within its ${stored.length} bytes " +
      s"(${hex(stored)})")
    else Seq((4, size), (4 + size, stored.length - 4 - size)).zip(parts).zip(Seq("grouping key", "user key"))
      .iterator.flatMap { case (((at, length), layout), what) =>
        if (stored(at) != 0) Some(s"its $what has no format version byte 0 (${hex(stored)})")
        else layout.problem(stored, Platform.BYTE_ARRAY_OFFSET + at + 1, length - 1).map(p => s"its $what: $p")
      }.toSeq.headOption
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

  /**
   * The elements of a list state's value, `[int32 length, native order][element]` each, joined by `delimiter`, each
   * checked to lie within the value. @throws LayoutFailure naming `key` where the bytes are not that
   */
  private def listElements(value: Array[Byte], delimiter: Array[Byte], key: => String): Seq[Array[Byte]] = {
    val elements = new ArrayBuffer[Array[Byte]]
    var at = 0
    while (at < value.length) {
      if (at > 0) {
        if (!Arrays.equals(value, at, math.min(value.length, at + delimiter.length), delimiter, 0, delimiter.length)) {
          throw new EntrySources.LayoutFailure(key, s"its list value has no delimiter after the element ending " +
            s"at byte $at (${hex(value)})")
        }
        at += delimiter.length
      }
      val length = if (at + 4 <= value.length) Platform.getInt(value, Platform.BYTE_ARRAY_OFFSET + at) else -1
      if (length < 0 || at + 4 + length > value.length) throw new EntrySources.LayoutFailure(key, s"its list " +
        s"value has no element length within its ${value.length} bytes at byte $at (${hex(value)})")
      elements += Arrays.copyOfRange(value, at + 4, at + 4 + length)
      at += 4 + length
    }
    elements.toSeq
  }

  private def hex(bytes: Array[Byte]): String = bytes.take(64).map("%02x".format(_)).mkString +
    (if (bytes.length > 64) "..." else "")

  private def hasPrefix(key: Array[Byte], prefix: Array[Byte]): Boolean =
    key.length >= prefix.length && Arrays.equals(key, 0, prefix.length, prefix, 0, prefix.length)
}
