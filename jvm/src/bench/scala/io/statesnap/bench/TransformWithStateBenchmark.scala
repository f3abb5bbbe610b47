package io.statesnap.bench

import java.nio.file.{Files, Paths}

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.{Dataset, Encoders, SparkSession}
import org.apache.spark.sql.streaming._

final case class Event(key: Long, amount: Int)
final case class TotalsV1(count: Int, total: Int)
final case class TotalsV2(count: Long, total: Long, note: String)

/** App v1: keeps (count, total) as ints per key. */
class TotalsAppV1 extends StatefulProcessor[Long, Event, (Long, Long)] {
  @transient private var totals: ValueState[TotalsV1] = _

  override def init(outputMode: OutputMode, timeMode: TimeMode): Unit =
    totals = getHandle.getValueState[TotalsV1]("totals", Encoders.product[TotalsV1], TTLConfig.NONE)

  override def handleInputRows(key: Long, rows: Iterator[Event], timers: TimerValues): Iterator[(Long, Long)] = {
    val before = if (totals.exists()) totals.get() else TotalsV1(0, 0)
    val after = rows.foldLeft(before)((t, e) => TotalsV1(t.count + 1, t.total + e.amount))
    totals.update(after)
    Iterator((key, after.total.toLong))
  }
}

/** App v2: the same state widened to longs, with a note added: every read sees v1's bytes or migrated ones. */
class TotalsAppV2 extends StatefulProcessor[Long, Event, (Long, Long)] {
  @transient private var totals: ValueState[TotalsV2] = _

  override def init(outputMode: OutputMode, timeMode: TimeMode): Unit =
    totals = getHandle.getValueState[TotalsV2]("totals", Encoders.product[TotalsV2], TTLConfig.NONE)

  override def handleInputRows(key: Long, rows: Iterator[Event], timers: TimerValues): Iterator[(Long, Long)] = {
    val before = if (totals.exists()) totals.get() else TotalsV2(0, 0, null)
    val after = rows.foldLeft(before)((t, e) => t.copy(count = t.count + 1, total = t.total + e.amount))
    totals.update(after)
    Iterator((key, after.total))
  }
}

/**
 * A transformWithState workload on the JVM (no Python round trips hiding the state path). One batch of app v1
 * touches every key; the timed run of app v2 then reads and updates every key in each of its batches.
 *  - mode `evolved` (v2 widens the state and adds a field):
 *    `stock-avro`: Spark's RocksDB provider with `encodingFormat=avro`, whose reads convert v1 bytes lazily;
 *    `statesnap`: statesnap with UnsafeRow, which migrates every entry once, then reads v2 bytes directly;
 *    `stock-unevolved`: the ceiling: Spark's store with UnsafeRow and v2 from the start (nothing to convert).
 *  - mode `steady` (v2 from the start, no schema change): `stock` vs `statesnap`, both UnsafeRow, and
 *    `stock-check-off`: Spark's provider with `stateSchemaCheck=false`, as statesnap runs (isolates that conf).
 * Prints `RESULT {json}`. Usage: TransformWithStateBenchmark <evolved|steady> <keys> <v2 batches> <repeats>
 */
object TransformWithStateBenchmark {
  private val stock = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
  private val statesnap = "io.statesnap.provider.StatesnapStateStoreProvider"

  def main(args: Array[String]): Unit = {
    val mode = args(0)
    val Array(keys, batches, repeats) = args.slice(1, 4).map(_.toInt)
    val spark = SparkSession.builder().master("local[2]").appName("statesnap-bench-jvm-tws")
      .config("spark.sql.shuffle.partitions", "2").config("spark.ui.enabled", "false").getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    val input = Files.createTempDirectory("statesnap-bench-tws").toString
    (0 to batches).foreach { b =>
      spark.range(0, keys.toLong, 1, 1).selectExpr("id AS key", s"CAST((id + $b) % 97 AS INT) AS amount")
        .write.json(s"$input/batch$b")
    }
    val ours = "statesnap" -> Map("providerClass" -> statesnap, "encodingFormat" -> "unsaferow",
      "stateSchemaCheck" -> "false")
    val stockUnsafeRow = Map("providerClass" -> stock, "encodingFormat" -> "unsaferow", "stateSchemaCheck" -> "true")
    val setups = mode match {
      case "evolved" => Seq("stock-avro" -> Map("providerClass" -> stock, "encodingFormat" -> "avro",
        "stateSchemaCheck" -> "true"), ours, "stock-unevolved" -> stockUnsafeRow)
      case "steady" => Seq("stock" -> stockUnsafeRow, ours,
        "stock-check-off" -> (stockUnsafeRow + ("stateSchemaCheck" -> "false")))
    }
    val evolve = mode == "evolved"
    val times = (0 until repeats).flatMap { i =>
      (if (i % 2 == 0) setups else setups.reverse).map { case (name, confs) =>
        confs.foreach { case (k, v) => spark.conf.set(s"spark.sql.streaming.stateStore.$k", v) }
        name -> run(spark, input, batches, evolve && name != "stock-unevolved")
      }
    }
    val json = times.groupBy(_._1).map { case (name, runs) =>
      val sorted = runs.map(_._2).sorted
      s""""$name": {"median": ${sorted(sorted.size / 2)}, "runs": [${runs.map(_._2).mkString(", ")}]}"""
    }.mkString(", ")
    println(s"""RESULT {"mode": "$mode", "keys": $keys, "batches": $batches, $json}""")
    spark.stop()
  }

  /** Seconds of the v2 run, on a fresh checkpoint and source directory that v1 filled first. */
  private def run(spark: SparkSession, input: String, batches: Int, evolve: Boolean): Double = {
    import spark.implicits._
    val checkpoint = Files.createTempDirectory("statesnap-bench-ck").toString
    val source = Files.createTempDirectory("statesnap-bench-in")
    def add(batch: Int): Unit = {
      val part = Files.list(Paths.get(s"$input/batch$batch")).iterator().asScala
        .find(_.getFileName.toString.startsWith("part-")).get
      Files.copy(part, source.resolve(f"batch$batch%03d.json"))
    }
    def query(app: StatefulProcessor[Long, Event, (Long, Long)]): Unit =
      spark.readStream.schema("key BIGINT, amount INT").option("maxFilesPerTrigger", 1).json(source.toString)
        .as[Event].groupByKey(_.key).transformWithState(app, TimeMode.None(), OutputMode.Update())
        .writeStream.format("noop").outputMode("update").option("checkpointLocation", checkpoint)
        .trigger(Trigger.AvailableNow()).start().awaitTermination()
    add(0)
    query(if (evolve) new TotalsAppV1 else new TotalsAppV2)
    (1 to batches).foreach(add)
    val start = System.nanoTime()
    query(new TotalsAppV2)
    (System.nanoTime() - start) / 1e9
  }
}
