package io.statesnap.bench

import java.nio.file.{Files, Paths}

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.{Dataset, Encoders, SparkSession}
import org.apache.spark.sql.streaming._

final case class Event(key: Long, amount: Int)

/**
 * v1 of a per-customer profile: the kind of state a real job keeps per key (counters, extremes, a label),
 * rather than a single number, so each read and update carries a realistic row.
 */
final case class ProfileV1(count: Int, total: Int, smallest: Int, largest: Int, last: Int, label: String) {
  def add(amount: Int): ProfileV1 =
    ProfileV1(count + 1, total + amount, smallest min amount, largest max amount, amount, label)
}

/** v2: the counters widened to longs and a note added (null for profiles written by v1). */
final case class ProfileV2(count: Long, total: Long, smallest: Int, largest: Int, last: Int, label: String,
    note: String) {
  def add(amount: Int): ProfileV2 =
    copy(count = count + 1, total = total + amount, smallest = smallest min amount, largest = largest max amount,
      last = amount)
}

/** App v1: keeps a [[ProfileV1]] per key. */
class ProfileAppV1 extends StatefulProcessor[Long, Event, (Long, Long)] {
  @transient private var profile: ValueState[ProfileV1] = _

  override def init(outputMode: OutputMode, timeMode: TimeMode): Unit =
    profile = getHandle.getValueState[ProfileV1]("profile", Encoders.product[ProfileV1], TTLConfig.NONE)

  override def handleInputRows(key: Long, rows: Iterator[Event], timers: TimerValues): Iterator[(Long, Long)] = {
    val before = if (profile.exists()) profile.get() else ProfileV1(0, 0, Int.MaxValue, Int.MinValue, 0, s"c$key")
    val after = rows.foldLeft(before)((p, e) => p.add(e.amount))
    profile.update(after)
    Iterator((key, after.total.toLong))
  }
}

/** App v2: the same state evolved: every read sees v1's bytes (converted by Spark's Avro path) or migrated ones. */
class ProfileAppV2 extends StatefulProcessor[Long, Event, (Long, Long)] {
  @transient private var profile: ValueState[ProfileV2] = _

  override def init(outputMode: OutputMode, timeMode: TimeMode): Unit =
    profile = getHandle.getValueState[ProfileV2]("profile", Encoders.product[ProfileV2], TTLConfig.NONE)

  override def handleInputRows(key: Long, rows: Iterator[Event], timers: TimerValues): Iterator[(Long, Long)] = {
    val before =
      if (profile.exists()) profile.get() else ProfileV2(0, 0, Int.MaxValue, Int.MinValue, 0, s"c$key", null)
    val after = rows.foldLeft(before)((p, e) => p.add(e.amount))
    profile.update(after)
    Iterator((key, after.total))
  }
}

/**
 * A transformWithState workload on the JVM (no Python round trips hiding the state path). One batch of app v1
 * touches every key; the timed run of app v2 then reads and updates every key in each of its batches. Input is
 * Parquet, so parsing does not hide the state path either.
 *  - mode `evolved` (v2 widens the state and adds a field):
 *    `stock-avro`: Spark's RocksDB provider with `encodingFormat=avro`, whose reads convert v1 bytes lazily;
 *    `statesnap`: statesnap with UnsafeRow, which migrates every entry once, then reads v2 bytes directly;
 *    `stock-unevolved`: the ceiling: Spark's store with UnsafeRow and v2 from the start (nothing to convert).
 *  - mode `steady` (v2 from the start, no schema change): `stock` vs `statesnap`, both UnsafeRow, and
 *    `stock-check-off`: Spark's provider with `stateSchemaCheck=false`, as statesnap runs (isolates that conf).
 *  - mode `avro-evolved`: the wide nested state of [[WideAppV1]] / [[WideAppV2]], Avro-encoded on both sides:
 *    `stock-avro`: Spark's RocksDB provider, `encodingFormat=avro`, its schema check on: v1 entries stay under
 *    their schema id and are resolved v1 -> v2 on read until an update rewrites them;
 *    `statesnap-avro`: statesnap's provider, `encodingFormat=avro`, `stateSchemaCheck=false` as statesnap runs:
 *    the first v2 batch rewrites every entry to v2 before the state is read;
 *    `stock-avro-unevolved`: the ceiling: Spark's Avro store with v2 from the start (no v1 entry ever).
 * Each setup also reports its first v2 batch (where the conversion or migration happens), its later batches, and
 * statesnap's `statesnapMigrationTimeMs` (summed over partitions).
 * Prints `RESULT {json}`. Usage: TransformWithStateBenchmark <evolved|steady|avro-evolved> <keys> <v2 batches>
 * <repeats>
 */
object TransformWithStateBenchmark {
  /** A directory of the run's input or checkpoints, deleted when the benchmark's JVM exits. */
  private def scratch(prefix: String): java.nio.file.Path = {
    val dir = Files.createTempDirectory(prefix)
    sys.addShutdownHook(org.apache.commons.io.FileUtils.deleteQuietly(dir.toFile))
    dir
  }

  private val stock = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
  private val statesnap = "io.statesnap.provider.StatesnapStateStoreProvider"

  def main(args: Array[String]): Unit = {
    val mode = args(0)
    val Array(keys, batches, repeats) = args.slice(1, 4).map(_.toInt)
    val spark = SparkSession.builder().master("local[2]").appName("statesnap-bench-jvm-tws")
      .config("spark.sql.shuffle.partitions", "2").config("spark.ui.enabled", "false").getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    val input = scratch("statesnap-bench-tws").toString
    (0 to batches).foreach { b =>
      spark.range(0, keys.toLong, 1, 1).selectExpr("id AS key", s"CAST((id + $b) % 97 AS INT) AS amount")
        .write.parquet(s"$input/batch$b")
    }
    val ours = "statesnap" -> Map("providerClass" -> statesnap, "encodingFormat" -> "unsaferow",
      "stateSchemaCheck" -> "false")
    val stockUnsafeRow = Map("providerClass" -> stock, "encodingFormat" -> "unsaferow", "stateSchemaCheck" -> "true")
    val stockAvro = Map("providerClass" -> stock, "encodingFormat" -> "avro", "stateSchemaCheck" -> "true")
    val setups = mode match {
      case "evolved" => Seq("stock-avro" -> stockAvro, ours, "stock-unevolved" -> stockUnsafeRow)
      case "steady" => Seq("stock" -> stockUnsafeRow, ours,
        "stock-check-off" -> (stockUnsafeRow + ("stateSchemaCheck" -> "false")))
      case "avro-evolved" => Seq("stock-avro" -> stockAvro, "statesnap-avro" -> (ours._2 + ("encodingFormat" ->
        "avro")), "stock-avro-unevolved" -> stockAvro)
    }
    val (v1App, v2App): (() => StatefulProcessor[Long, Event, (Long, Long)],
        () => StatefulProcessor[Long, Event, (Long, Long)]) =
      if (mode == "avro-evolved") (() => new WideAppV1, () => new WideAppV2)
      else (() => new ProfileAppV1, () => new ProfileAppV2)
    def timed(name: String, confs: Map[String, String], v2Batches: Int): Run = {
      confs.foreach { case (k, v) => spark.conf.set(s"spark.sql.streaming.stateStore.$k", v) }
      val evolve = mode != "steady" && !name.endsWith("unevolved")
      run(spark, input, v2Batches, if (evolve) v1App else v2App, v2App)
    }
    // Untimed warm-up of every setup: each has code paths of its own (Avro, statesnap) for the JIT to compile.
    setups.foreach { case (name, confs) => timed(name, confs, 2) }
    val times = (0 until repeats).flatMap { i =>
      (if (i % 2 == 0) setups else setups.reverse).map { case (name, confs) => name -> timed(name, confs, batches) }
    }
    def median[T: Ordering](values: Seq[T]): T = values.sorted.apply(values.size / 2)
    val json = times.groupBy(_._1).map { case (name, named) =>
      val runs = named.map(_._2)
      s""""$name": {"median": ${median(runs.map(_.seconds))}, "runs": [${runs.map(_.seconds).mkString(", ")}], """ +
        s""""firstBatchMs": ${median(runs.map(_.batchMs.head))}, "laterBatchMs": """ +
        s"""${median(runs.map(r => r.batchMs.tail.sum / math.max(1, r.batchMs.size - 1)))}, """ +
        s""""migrationMs": ${median(runs.map(_.migrationMs))}, "migratedEntries": ${runs.map(_.migrated).max}}"""
    }.mkString(", ")
    println(s"""RESULT {"mode": "$mode", "keys": $keys, "batches": $batches, $json}""")
    spark.stop()
  }

  /**
   * One v2 run: its seconds, each of its batches' `triggerExecution` time, and what statesnap's metrics say it
   * migrated (summed over partitions; 0 on Spark's provider).
   */
  private final case class Run(seconds: Double, batchMs: Seq[Long], migrationMs: Long, migrated: Long)

  /** The v2 run, on a fresh checkpoint and source directory that `first` (one batch) filled first. */
  private def run(spark: SparkSession, input: String, batches: Int,
      first: () => StatefulProcessor[Long, Event, (Long, Long)],
      second: () => StatefulProcessor[Long, Event, (Long, Long)]): Run = {
    import spark.implicits._
    val checkpoint = scratch("statesnap-bench-ck").toString
    val source = scratch("statesnap-bench-in")
    def add(batch: Int): Unit = {
      val part = Files.list(Paths.get(s"$input/batch$batch")).iterator().asScala
        .find(_.getFileName.toString.startsWith("part-")).get
      Files.copy(part, source.resolve(f"batch$batch%03d.parquet"))
    }
    def query(app: StatefulProcessor[Long, Event, (Long, Long)]): StreamingQuery = {
      val q = spark.readStream.schema("key BIGINT, amount INT").option("maxFilesPerTrigger", 1)
        .parquet(source.toString).as[Event].groupByKey(_.key)
        .transformWithState(app, TimeMode.None(), OutputMode.Update())
        .writeStream.format("noop").outputMode("update").option("checkpointLocation", checkpoint)
        .trigger(Trigger.AvailableNow()).start()
      q.awaitTermination()
      q
    }
    add(0)
    query(first())
    (1 to batches).foreach(add)
    val start = System.nanoTime()
    val q = query(second())
    val seconds = (System.nanoTime() - start) / 1e9
    val progress = q.recentProgress.filter(_.stateOperators.nonEmpty).toSeq
    def metric(name: String): Long = progress.map(p => Option(p.stateOperators.head.customMetrics.get(name))
      .map(_.longValue).getOrElse(0L)).sum
    Run(seconds, progress.map(_.durationMs.get("triggerExecution").longValue),
      metric("statesnapMigrationTimeMs"), metric("statesnapMigratedEntries"))
  }
}
