package io.statesnap.bench

import java.lang.management.ManagementFactory
import java.nio.file.Files
import java.util.UUID
import java.util.concurrent.atomic.AtomicLong

import io.statesnap.provider.StatesnapStateStoreProvider
import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection
import org.apache.spark.sql.execution.streaming.runtime.StreamExecution
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types.StructType
import org.apache.spark.unsafe.types.UTF8String

/**
 * Migration throughput on one partition of real RocksDB state, in the same JVM and on the same checkpoint:
 *  - `stock-copy`: Spark's stock store with its default settings iterates and re-puts the same bytes;
 *  - `stock-copy-untracked`: the same with `trackTotalNumberOfRows=false` (no read before each put);
 *  - `statesnap-migration`: statesnap migrates every entry (a field added, one widened) on first access,
 *    with row tracking on: its rewrite skips the read before each put by itself.
 * Each pass starts from the same committed version and is aborted, so all see the same state. Prints one
 * `RESULT {json}` line. Usage: MigrationBenchmark <entries> [repeats]
 */
object MigrationBenchmark {
  private val keySchema = StructType.fromDDL("id BIGINT")
  private val v1 = StructType.fromDDL("count INT, total DOUBLE, name STRING")
  private val v2 = StructType.fromDDL("count BIGINT, total DOUBLE, name STRING, note STRING")
  private val state = "bench"

  def main(args: Array[String]): Unit = {
    val entries = args(0).toLong
    val repeats = if (args.length > 1) args(1).toInt else 3
    val checkpoint = Files.createTempDirectory("statesnap-bench").toString
    val loadStart = System.nanoTime()
    write(checkpoint, entries)
    val loadSeconds = (System.nanoTime() - loadStart) / 1e9
    val passes = (1 to repeats).flatMap { _ =>
      Seq(
        "stock-copy" -> copyPass(checkpoint, trackRows = true),
        "stock-copy-untracked" -> copyPass(checkpoint, trackRows = false),
        "statesnap-migration" -> migrationPass(checkpoint))
    }
    val best = passes.groupBy(_._1).map { case (name, runs) => name -> runs.map(_._2).minBy(_.seconds) }
    val json = best.toSeq.sortBy(_._1).map { case (name, p) =>
      s""""$name": {"seconds": ${p.seconds}, "entriesPerSecond": ${(entries / p.seconds).toLong}, """ +
        s""""peakHeapMb": ${p.peakHeapBytes / (1 << 20)}, "migrated": ${p.migrated}}"""
    }.mkString(", ")
    println(s"""RESULT {"entries": $entries, "writeSeconds": $loadSeconds, $json}""")
  }

  private final case class Pass(seconds: Double, peakHeapBytes: Long, migrated: Long)

  private def provider(checkpoint: String, statesnap: Boolean, trackRows: Boolean = true): StateStoreProvider = {
    val sqlConf = new SQLConf
    sqlConf.setConfString("spark.sql.streaming.stateStore.rocksdb.trackTotalNumberOfRows", trackRows.toString)
    val hadoopConf = new Configuration
    hadoopConf.set(StreamExecution.RUN_ID_KEY, UUID.randomUUID().toString)
    val p = if (statesnap) new StatesnapStateStoreProvider
      else StateStoreProvider.create(StatesnapStateStoreProvider.InnerProviderClass)
    p.init(StateStoreId(checkpoint, 0, 0), keySchema, StructType.fromDDL("value BINARY"),
      NoPrefixKeyStateEncoderSpec(keySchema), useColumnFamilies = true, new StateStoreConf(sqlConf), hadoopConf,
      useMultipleValuesPerKey = false,
      // As transformWithState's stores get one: statesnap migrates only stores with a schema provider.
      Some(new InMemoryStateSchemaProvider(StateSchemaMetadata(Map.empty))))
    p
  }

  private def open(store: StateStore, schema: StructType): Unit =
    store.createColFamilyIfAbsent(state, keySchema, schema, NoPrefixKeyStateEncoderSpec(keySchema))

  private def write(checkpoint: String, entries: Long): Unit = {
    val p = provider(checkpoint, statesnap = true)
    val store = p.getStore(0, None)
    open(store, v1)
    val key = UnsafeProjection.create(keySchema)
    val value = UnsafeProjection.create(v1)
    var i = 0L
    while (i < entries) {
      store.put(key(InternalRow(i)), value(InternalRow((i % 1000).toInt, i * 0.5,
        UTF8String.fromString(s"customer-$i"))), state)
      i += 1
    }
    store.commit()
    p.close()
  }

  private def copyPass(checkpoint: String, trackRows: Boolean): Pass = {
    val p = provider(checkpoint, statesnap = false, trackRows)
    val store = p.getStore(1, None)
    open(store, v1)
    try measure(0L) {
      val it = store.iterator(state)
      try while (it.hasNext) { val pair = it.next(); store.put(pair.key, pair.value, state) } finally it.close()
    } finally { store.abort(); p.close() }
  }

  private def migrationPass(checkpoint: String): Pass = {
    val p = provider(checkpoint, statesnap = true)
    val store = p.getStore(1, None)
    try {
      val pass = measure(0L)(open(store, v2))
      store.commit() // metrics are readable after commit only; the checkpoint's version 2 is never reused
      pass.copy(migrated = store.metrics.customMetrics.collectFirst {
        case (m, v) if m.name == "statesnapMigratedEntries" => v
      }.getOrElse(-1L))
    } finally p.close()
  }

  /** Wall time of `body`, and the peak heap used while it ran (sampled every 5 ms after a GC). */
  private def measure(migrated: Long)(body: => Unit): Pass = {
    val memory = ManagementFactory.getMemoryMXBean
    System.gc()
    val peak = new AtomicLong(memory.getHeapMemoryUsage.getUsed)
    @volatile var running = true
    val sampler = new Thread(() => while (running) {
      peak.accumulateAndGet(memory.getHeapMemoryUsage.getUsed, math.max)
      Thread.sleep(5)
    })
    sampler.setDaemon(true)
    sampler.start()
    val start = System.nanoTime()
    body
    val seconds = (System.nanoTime() - start) / 1e9
    running = false
    sampler.join()
    Pass(seconds, peak.get, migrated)
  }
}
