package io.statesnap.bench

import java.nio.file.Files
import java.util.UUID
import java.util.concurrent.{Callable, CountDownLatch, Executors}

import io.statesnap.ProviderClasses
import io.statesnap.provider.StatesnapStateStoreProvider
import org.apache.commons.io.FileUtils
import io.statesnap.snapshot.GroupStateSnapshot
import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{UnsafeProjection, UnsafeRow}
import io.statesnap.SparkClasses.StreamExecution
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types.StructType
import org.apache.spark.unsafe.types.UTF8String

/**
 * Migration throughput on real RocksDB state, in one JVM, on the running Spark minor. Workloads:
 *  - `value`: a transformWithState value state (a column family), a field added and one widened;
 *  - `list`: the same change on a list state, 4 elements per key (entries = elements);
 *  - `groupState`: an applyInPandasWithState / flatMapGroupsWithState state (no column families; Spark's
 *    `struct<groupState, timeoutTimestamp>` wrapper around the same user fields);
 *  - `partitions`: the `value` migration of 4 partitions at once vs one partition, each of entries / 4 values;
 *  - `avroValue`: the `value` state in an Avro-encoded store (`encodingFormat=avro`), Spark's schema ids as its
 *    driver numbers them after the change (id 0 the old schema, id 1 the new one, current). Spark's copies here open
 *    the state under the new schema, so each re-put entry is read through Avro resolution from id 0 and written
 *    under id 1: what Spark's lazy path does to an entry it updates, for every entry.
 * The first three compare, on the same committed version of one partition: `stock-copy`, Spark's stock store
 * iterating and re-putting the same rows with its default settings; `stock-copy-untracked`, the same with
 * `trackTotalNumberOfRows=false` (no read before each put); and `statesnap-migration`, statesnap migrating every
 * entry on first access with row tracking on (its rewrite skips that read by itself). Each pass starts from the
 * same committed version; copies are aborted, a migration commits the next version, which the next pass
 * overwrites. Every migration is checked by reading a sample of entries back through Spark's provider.
 * Prints one `RESULT {json}` line. Usage: MigrationBenchmark <workload> <entries> [repeats]
 */
object MigrationBenchmark {
  private val keySchema = StructType.fromDDL("id BIGINT")
  private val user1 = StructType.fromDDL("count INT, total DOUBLE, name STRING")
  private val user2 = StructType.fromDDL("count BIGINT, total DOUBLE, name STRING, note STRING")
  private val state = "bench"
  private val listLength = 4
  private val partitions = 4

  def main(args: Array[String]): Unit = {
    val workload = args(0) match {
      case "value" => ValueState
      case "list" => ListState
      case "groupState" => GroupState
      case "partitions" => ValueState
      case "avroValue" => AvroValueState
      case other => throw new IllegalArgumentException(s"unknown workload $other")
    }
    val entries = args(1).toLong
    val repeats = if (args.length > 2) args(2).toInt else 3
    val checkpoint = Files.createTempDirectory("statesnap-bench").toString
    val result = try {
      if (args(0) == "partitions") scaling(checkpoint, entries / partitions, repeats)
      else copiesAndMigration(workload, checkpoint, entries, repeats)
    } finally FileUtils.deleteQuietly(new java.io.File(checkpoint))
    val spark = org.apache.spark.SPARK_VERSION
    println(s"""RESULT {"workload": "${args(0)}", "entries": $entries, "spark": "$spark", $result}""")
  }

  private def copiesAndMigration(w: Workload, checkpoint: String, entries: Long, repeats: Int): String = {
    w.write(checkpoint, 0, entries)
    val passes = (1 to repeats).flatMap { _ =>
      Seq(
        "stock-copy" -> copyPass(w, checkpoint, trackRows = true),
        "stock-copy-untracked" -> copyPass(w, checkpoint, trackRows = false),
        "statesnap-migration" -> migrationPass(w, checkpoint, 0))
    }
    passes.groupBy(_._1).toSeq.sortBy(_._1).map { case (name, runs) => json(name, runs.map(_._2).minBy(_.seconds),
      entries) }.mkString(", ")
  }

  /** One partition migrated alone, then `partitions` migrated at once, each of `perPartition` entries. */
  private def scaling(checkpoint: String, perPartition: Long, repeats: Int): String = {
    parallel(0 until partitions)(p => ValueState.write(checkpoint, p, perPartition))
    val passes = (1 to repeats).flatMap { _ =>
      Seq("one-partition" -> migrateAtOnce(checkpoint, 1), s"$partitions-partitions" -> migrateAtOnce(checkpoint,
        partitions))
    }
    val best = passes.groupBy(_._1).map { case (name, runs) => name -> runs.map(_._2).minBy(_.seconds) }
    val one = perPartition / best("one-partition").seconds
    val all = partitions * perPartition / best(s"$partitions-partitions").seconds
    s""""cores": ${Runtime.getRuntime.availableProcessors}, "perPartition": $perPartition, """ +
      s"""${json("one-partition", best("one-partition"), perPartition)}, """ +
      s"""${json(s"$partitions-partitions", best(s"$partitions-partitions"), partitions * perPartition)}, """ +
      s""""scaling": ${all / one}"""
  }

  private def json(name: String, p: Pass, entries: Long): String =
    s""""$name": {"seconds": ${p.seconds}, "entriesPerSecond": ${(entries / p.seconds).toLong}, """ +
      s""""coresUsed": ${p.coresUsed}, "peakHeapMb": ${p.peakHeapBytes / (1 << 20)}, """ +
      s""""migrated": ${p.migrated}}"""

  /** Wall time, the process's CPU time over it (RocksDB's background threads included), peak heap. */
  private final case class Pass(seconds: Double, cpuSeconds: Double, peakHeapBytes: Long, migrated: Long) {
    def coresUsed: Double = cpuSeconds / seconds
  }

  /** The layout of one kind of state, written, copied and opened the way its operator does. */
  private sealed trait Workload {
    def columnFamilies: Boolean = true
    /** An Avro-encoded store: Spark's encoder writes each value under the current schema id of its column family. */
    def avro: Boolean = false
    /** The schema Spark's copy opens the state under: the old one (a raw copy), or the new one (Avro resolution). */
    def copySchema: StructType = v1
    def v1: StructType
    def v2: StructType
    /** Declares the state in a store opened for `schema` (a column family's first access; nothing otherwise). */
    def open(store: StateStore, schema: StructType): Unit
    def put(store: StateStore, key: UnsafeRow, values: Iterator[UnsafeRow]): Unit
    def read(store: StateStore, key: UnsafeRow): Seq[UnsafeRow]
    /** Entry number `i` of key `key`, in the old layout (a user row, wrapped where the operator wraps it). */
    def oldValue(i: Long): InternalRow
    /** What a migrated entry number `i` must read as. */
    def newValue(i: Long): Seq[Any]
    def perKey: Int = 1

    def write(checkpoint: String, partition: Int, entries: Long): Unit = {
      val p = provider(this, checkpoint, partition, statesnap = true, v1, avroIds = Map(0 -> v1))
      val store = p.getStore(0, None)
      open(store, v1)
      val key = UnsafeProjection.create(keySchema)
      val value = UnsafeProjection.create(v1)
      var i = 0L
      while (i < entries / perKey) {
        put(store, key(InternalRow(i)), (0 until perKey).iterator.map(j => value(oldValue(i * perKey + j))))
        i += 1
      }
      store.commit()
      p.close()
    }

    /** Spark's store re-putting what it iterates: one row per key, or each key's list. */
    def copy(store: StateStore): Unit
  }

  private object ValueState extends ValueStateWorkload
  private object AvroValueState extends ValueStateWorkload {
    override def avro: Boolean = true
    override def copySchema: StructType = v2
  }

  private class ValueStateWorkload extends Workload {
    val v1: StructType = user1
    val v2: StructType = user2
    def open(store: StateStore, schema: StructType): Unit =
      store.createColFamilyIfAbsent(state, keySchema, schema, NoPrefixKeyStateEncoderSpec(keySchema))
    def put(store: StateStore, key: UnsafeRow, values: Iterator[UnsafeRow]): Unit = store.put(key, values.next(), state)
    def read(store: StateStore, key: UnsafeRow): Seq[UnsafeRow] = Option(store.get(key, state)).toSeq
    def oldValue(i: Long): InternalRow = userRow(i)
    def newValue(i: Long): Seq[Any] = migratedUserRow(i)
    def copy(store: StateStore): Unit = {
      val it = store.iterator(state)
      try while (it.hasNext) { val pair = it.next(); store.put(pair.key, pair.value, state) } finally it.close()
    }
  }

  private object ListState extends Workload {
    val v1: StructType = user1
    val v2: StructType = user2
    override def perKey: Int = listLength
    def open(store: StateStore, schema: StructType): Unit = store.createColFamilyIfAbsent(state, keySchema, schema,
      NoPrefixKeyStateEncoderSpec(keySchema), useMultipleValuesPerKey = true)
    def put(store: StateStore, key: UnsafeRow, values: Iterator[UnsafeRow]): Unit =
      putList(store, key, values.map(_.copy()).toArray)
    def read(store: StateStore, key: UnsafeRow): Seq[UnsafeRow] =
      store.valuesIterator(key, state).map(_.copy()).toSeq
    def oldValue(i: Long): InternalRow = userRow(i)
    def newValue(i: Long): Seq[Any] = migratedUserRow(i)
    /** The least Spark's store API can do: each key once, its list read and put back whole. */
    def copy(store: StateStore): Unit = {
      val it = store.iterator(state)
      try while (it.hasNext) {
        val key = it.next().key.copy()
        putList(store, key, store.valuesIterator(key, state).map(_.copy()).toArray)
      } finally it.close()
    }

    /**
     * A whole list written as Spark's ListState writes it: `putList` from Spark 4.1 on (found by reflection, so that
     * one harness compiles for every minor; a JIT-compiled `Method.invoke` costs little beside a RocksDB write);
     * Spark 4.0's ListState puts the first element and merges the others.
     */
    private def putList(store: StateStore, key: UnsafeRow, values: Array[UnsafeRow]): Unit = sparkPutList match {
      case Some(method) => method.invoke(store, key, values, state)
      case None =>
        store.put(key, values.head, state)
        values.tail.foreach(store.merge(key, _, state))
    }
    private lazy val sparkPutList = classOf[StateStore].getMethods.find(_.getName == "putList")
  }

  private object GroupState extends Workload {
    override def columnFamilies: Boolean = false
    val v1: StructType = GroupStateSnapshot.wrap(user1, withTimeout = true)
    val v2: StructType = GroupStateSnapshot.wrap(user2, withTimeout = true)
    def open(store: StateStore, schema: StructType): Unit = ()
    def put(store: StateStore, key: UnsafeRow, values: Iterator[UnsafeRow]): Unit = store.put(key, values.next())
    def read(store: StateStore, key: UnsafeRow): Seq[UnsafeRow] = Option(store.get(key)).toSeq
    def oldValue(i: Long): InternalRow = InternalRow(userRow(i), 1000L + i)
    def newValue(i: Long): Seq[Any] = Seq(migratedUserRow(i), 1000L + i)
    def copy(store: StateStore): Unit = {
      val it = store.iterator()
      try while (it.hasNext) { val pair = it.next(); store.put(pair.key, pair.value) } finally it.close()
    }
  }

  private def userRow(i: Long): InternalRow =
    InternalRow((i % 1000).toInt, i * 0.5, UTF8String.fromString(s"customer-$i"))

  private def migratedUserRow(i: Long): Seq[Any] = Seq(i % 1000, i * 0.5, s"customer-$i", null)

  /**
   * A provider of one partition, initialized the way its operator does: statesnap or Spark's stock provider. A
   * column-family store gets a schema provider, as transformWithState's do: statesnap migrates only those. An Avro
   * store's value schema ids are `avroIds`, by default the old schema under id 0 and the new one under id 1, the
   * current id: what Spark's driver hands the stores after an evolution its Avro check accepts.
   */
  private def provider(w: Workload, checkpoint: String, partition: Int, statesnap: Boolean, schema: StructType,
      trackRows: Boolean = true, avroIds: Map[Int, StructType] = Map.empty): StateStoreProvider = {
    val sqlConf = new SQLConf
    sqlConf.setConfString("spark.sql.streaming.stateStore.rocksdb.trackTotalNumberOfRows", trackRows.toString)
    if (w.avro) sqlConf.setConfString("spark.sql.streaming.stateStore.encodingFormat", "avro")
    val hadoopConf = new Configuration
    hadoopConf.set(StreamExecution.RUN_ID_KEY, UUID.randomUUID().toString)
    val p = if (statesnap) new StatesnapStateStoreProvider
      else StateStoreProvider.create(ProviderClasses.SparkRocksDB)
    val valueSchema = if (w.columnFamilies) StructType.fromDDL("value BINARY") else schema
    p.init(StateStoreId(checkpoint, 0, partition), keySchema, valueSchema, NoPrefixKeyStateEncoderSpec(keySchema),
      useColumnFamilies = w.columnFamilies, new StateStoreConf(sqlConf), hadoopConf, useMultipleValuesPerKey = false,
      Some(if (w.avro) new AvroSchemaIds(if (avroIds.nonEmpty) avroIds else Map(0 -> w.v1, 1 -> w.v2))
        else new InMemoryStateSchemaProvider(StateSchemaMetadata(Map.empty))).filter(_ => w.columnFamilies))
    p
  }

  /**
   * Schema ids of the state's column family: its key under id 0, each value schema under its id, the highest one
   * current. Spark's decoder fails on a value written under an id not listed.
   */
  private final class AvroSchemaIds(values: Map[Int, StructType]) extends StateSchemaProvider {
    private val key = StatesnapAvroSchemas.metadata(keySchema)
    private val byId = values.map { case (id, schema) => id -> StatesnapAvroSchemas.metadata(schema) }
    override def getCurrentStateSchemaId(colFamilyName: String, isKey: Boolean): Short =
      if (isKey) 0 else values.keys.max.toShort
    override def getSchemaMetadataValue(k: StateSchemaMetadataKey): StateSchemaMetadataValue =
      if (k.isKey) key else byId.getOrElse(k.schemaId, throw new IllegalStateException(s"a value of " +
        s"${k.colFamilyName} was written under schema id ${k.schemaId}, not one of ${values.keys.mkString(", ")}"))
  }

  /**
   * A store without column families migrates before `getStore` returns it, so for it every pass times the load of
   * the version too; a column family migrates on its first access, and only the copy or migration is timed.
   */
  private def loadAndRun(w: Workload, p: StateStoreProvider)(body: StateStore => Unit): (StateStore, Pass) =
    if (w.columnFamilies) { val store = p.getStore(1, None); (store, measure(body(store))) }
    else {
      var store: StateStore = null
      val pass = measure { store = p.getStore(1, None); body(store) }
      (store, pass)
    }

  private def copyPass(w: Workload, checkpoint: String, trackRows: Boolean): Pass = {
    val p = provider(w, checkpoint, 0, statesnap = false, w.copySchema, trackRows)
    var store: StateStore = null
    try {
      val (opened, pass) = loadAndRun(w, p) { s => store = s; w.open(s, w.copySchema); w.copy(s) }
      store = opened
      pass
    } finally { if (store != null) store.abort(); p.close() }
  }

  /** statesnap opening version 1 under the new schema, which migrates every entry. */
  private def migrationPass(w: Workload, checkpoint: String, partition: Int): Pass = {
    val p = provider(w, checkpoint, partition, statesnap = true, w.v2)
    try {
      val (store, pass) = loadAndRun(w, p)(w.open(_, w.v2))
      store.commit() // metrics are readable after commit only
      verify(w, checkpoint, partition)
      pass.copy(migrated = store.metrics.customMetrics.collectFirst {
        case (m, v) if m.name == "statesnapMigratedEntries" => v
      }.getOrElse(-1L))
    } finally p.close()
  }

  /**
   * Partitions 0 until `count` migrating at once, a thread each, as tasks of a batch do: wall time from when all
   * have loaded their version until the last has migrated (commits, mostly I/O, come after). RocksDB flushes what
   * a migration writes on background threads, beside the migrating thread: the CPU each pass keeps busy says how
   * much of the machine it used.
   */
  private def migrateAtOnce(checkpoint: String, count: Int): Pass = {
    val providers = (0 until count).map(p => provider(ValueState, checkpoint, p, statesnap = true, user2))
    val (loaded, go, done) = (new CountDownLatch(count), new CountDownLatch(1), new CountDownLatch(count))
    val pool = Executors.newFixedThreadPool(count)
    try {
      val tasks = (0 until count).map { p =>
        pool.submit(task {
          val store = try providers(p).getStore(1, None) finally loaded.countDown()
          go.await()
          try ValueState.open(store, user2) finally done.countDown()
          store
        })
      }
      loaded.await()
      val pass = measure { go.countDown(); done.await() }
      tasks.foreach(_.get().commit()) // a failed task fails the benchmark
      (0 until count).foreach(verify(ValueState, checkpoint, _))
      pass
    } finally { pool.shutdown(); providers.foreach(_.close()) }
  }

  /**
   * Reads every 997th key of version 2 through Spark's own provider and compares it with what it must be. An Avro
   * store's is told the new schema's id only, so the iteration over every entry fails on one left under the old id
   * (which Spark would otherwise resolve to the same values).
   */
  private def verify(w: Workload, checkpoint: String, partition: Int): Unit = {
    val p = provider(w, checkpoint, partition, statesnap = false, w.v2, avroIds = Map(1 -> w.v2))
    val store = p.getStore(2, None)
    w.open(store, w.v2)
    val key = UnsafeProjection.create(keySchema)
    try {
      var keys = 0L
      val it = if (w.columnFamilies) store.iterator(state) else store.iterator()
      try while (it.hasNext) { it.next(); keys += 1 } finally it.close()
      (0L until keys by 997).foreach { k =>
        val read = w.read(store, key(InternalRow(k))).map(row => toScala(row.toSeq(w.v2)))
        val expected = (0 until w.perKey).map(j => w.newValue(k * w.perKey + j))
        if (read != expected) throw new IllegalStateException(s"partition $partition, key $k: read $read, expected " +
          s"$expected: the migration is wrong, its figures are void")
      }
    } finally { store.abort(); p.close() }
  }

  private def toScala(values: Seq[Any]): Seq[Any] = values.map {
    case s: UTF8String => s.toString
    case r: InternalRow => toScala(r.toSeq(user2))
    case other => other
  }

  private def parallel(items: Seq[Int])(body: Int => Unit): Unit = {
    val pool = Executors.newFixedThreadPool(items.size)
    try items.map(i => pool.submit(task(body(i)))).foreach(_.get()) finally pool.shutdown()
  }

  private def task[T](body: => T): Callable[T] = new Callable[T] { def call(): T = body }

  /** Wall and CPU time of `body`, and the peak heap used while it ran ([[Sampled]]). */
  private def measure(body: => Unit): Pass = {
    val s = Sampled(body)
    Pass(s.seconds, s.cpuSeconds, s.peakHeapBytes, 0L)
  }
}
