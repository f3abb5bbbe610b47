package org.apache.spark.sql.execution.streaming.state

import io.statesnap.StatesnapException
import io.statesnap.evolution.{EntrySources, UnsafeRowLayout}
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.types.StructType

/**
 * Rewrites every value of a Spark 3.5 store in the RocksDB instance behind Spark's RocksDB provider, in place, as
 * `RocksDB.put` writes except for the read before every put ([[StatesnapRewrite]]). A 3.5 store has no column
 * families and no list values: the whole database is its one state, each value `[version byte][UnsafeRow]`.
 */
final class StatesnapValueRewriter private (writes: StatesnapRewrite.RocksDBWrites, keySchema: Option[StructType],
    newValueSchema: StructType) {
  import EntrySources.{InSource, Source}

  /**
   * Streams through a point-in-time view of the store, replacing each value by the `convert` of the one source
   * layout it is in, and calling `afterEach` once per value. `convert` receives a row valid until the next call;
   * when it throws, the rewrite stops with an [[EntrySources.EntryFailure]] naming the entry's key. An entry in
   * no source layout, or in more than one, stops it with a [[EntrySources.LayoutFailure]].
   */
  def rewriteAll(sources: Seq[Source], afterEach: () => Unit): Unit = {
    val in = new InSource(sources, describeKey)
    val stored = new UnsafeRow(newValueSchema.length)
    val entries = writes.db.newIterator() // an implicit snapshot: the puts do not show up in it
    try {
      entries.seekToFirst()
      while (entries.isValid) {
        val key = entries.key
        RocksDBStateEncoder.decodeToUnsafeRow(entries.value, stored)
        writes.overwrite(key, RocksDBStateEncoder.encodeUnsafeRow(in.converted(key, stored)))
        afterEach()
        entries.next()
      }
    } finally entries.close()
  }

  /**
   * A stored key as the application sees it (for errors), or its bytes when it does not decode: a version byte,
   * then a row, checked against its layout before any field is read ([[UnsafeRowLayout.describe]]).
   */
  private def describeKey(key: Array[Byte]): String = UnsafeRowLayout.describe(key, 1, key.length - 1, keySchema)
}

object StatesnapValueRewriter {
  /**
   * A rewriter for the store behind `provider` (Spark's RocksDB provider, initialized).
   * @param keySchema the key's schema, if its rows are stored whole (not split for prefix scans: session windows)
   * @param describe the state, as errors name it
   * @throws StatesnapException `STATESNAP_UNSUPPORTED_CONFIGURATION`, naming what is missing, if this store or
   *                            Spark build does not have what the rewrite needs
   */
  def apply(provider: StateStoreProvider, keySchema: Option[StructType], newValueSchema: StructType,
      describe: String): StatesnapValueRewriter = {
    def unsupported(why: String) = SparkBuildErrors.cannotMigrateHere(describe, why)
    provider match {
      case rocks: RocksDBStateStoreProvider => StatesnapRewrite.RocksDBWrites(rocks.rocksDB).fold(missing =>
        throw unsupported(s"Spark's RocksDB has no member $missing in this Spark build " +
          s"(${org.apache.spark.SPARK_VERSION}); statesnap supports the Spark minors it ships a jar for"),
        new StatesnapValueRewriter(_, keySchema, newValueSchema))
      case other => throw unsupported(s"expected Spark's RocksDB provider, found ${other.getClass}")
    }
  }
}
