package io.statesnap.bench

import java.io.File
import java.nio.file.{Files, Path => JPath}

import io.statesnap.ProviderClasses
import io.statesnap.tools.{Migrate, ToolReport}
import org.apache.commons.io.FileUtils
import org.apache.hadoop.fs.{FileSystem, Path}
import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.streaming.{OutputMode, TimeMode, Trigger}
import org.apache.spark.sql.types.StructType

/**
 * statesnap's offline migrate (`python -m statesnap migrate`, [[Migrate]]) vs Spark's own offline rewrite,
 * `StateRewriter` (SPARK-54924, Spark 4.2+), on the same committed state, in one JVM (`local[2]`: the driver is the
 * executor, so its heap is the job's).
 *
 * The state: a Scala transformWithState query ([[ProfileAppV1]]) on Spark's RocksDB provider writes a 6-field
 * profile for each of `keys` keys in one batch, 2 partitions: a real query checkpoint (offsets and commits logs,
 * operator metadata v2, schema files), written on the JVM because a Python transformWithState takes minutes per
 * 200k keys. Each pass then works on a fresh copy of it:
 *  - `statesnap-migrate`: [[Migrate.run]], what the command line calls, to [[ProfileV2]]'s schema
 *    (`count` and `total` widened from int to bigint, `note` added): appends batch 1, rewriting every entry;
 *  - `spark-rewriter`: `StateRewriter` reading batch 0 and writing batch 1, as Spark's offline repartitioning drives
 *    it: offsets/1 copied from offsets/0 first (it requires the write batch's offsets), commits/1 after. Its
 *    transform function must return a DataFrame of the schema it was given and it writes every column family with
 *    the schema files of the batch it read, so it cannot change a state's schema: it is asked for the identity
 *    (no transform function), every row of every column family re-put through the state data source.
 * Each side first runs once untimed on its own copy, and its result is read back through Spark's state data source
 * (every key, the values as they must be); the timed passes then alternate which side goes first.
 * `StateRewriter` is reached by reflection, so that these harnesses still compile against Spark 4.1.
 * Prints `RESULT {json}`. Usage: OfflineRewriteBenchmark <keys> <repeats>
 */
object OfflineRewriteBenchmark {
  private val Rewriter = "org.apache.spark.sql.execution.streaming.state.StateRewriter"
  private val State = "profile"
  private val V2 = StructType.fromDDL("count BIGINT, total BIGINT, smallest INT, largest INT, last INT, " +
    "label STRING, note STRING")

  def main(args: Array[String]): Unit = {
    val Array(keys, repeats) = args.take(2).map(_.toInt)
    val spark = SparkSession.builder().master("local[2]").appName("statesnap-bench-offline-rewrite")
      .config("spark.sql.shuffle.partitions", "2").config("spark.ui.enabled", "false")
      .config("spark.sql.streaming.stateStore.providerClass", ProviderClasses.SparkRocksDB).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    val work = Files.createTempDirectory("statesnap-bench-rewrite")
    try {
      val original = query(spark, work, "original", keys)
      val sides = Seq("statesnap-migrate" -> (migrate _), "spark-rewriter" -> (rewrite _))
      // An untimed pass of each first, read back whole: each side's first pass on the real state ran up to twice as
      // long as its next ones (JIT, the heap growing to the job), even after a warm-up pass on a 20k-key state.
      sides.foreach { case (name, side) =>
        onCopy(work, original) { ck =>
          side(spark, ck)
          verify(spark, ck, keys, migrated = name == "statesnap-migrate")
        }
      }
      val passes = (0 until repeats).flatMap { i =>
        (if (i % 2 == 0) sides else sides.reverse).map { case (name, side) =>
          name -> onCopy(work, original) { ck =>
            val pass = Sampled(side(spark, ck))
            System.err.println(f"[$name] $keys%,d entries: ${pass.seconds}%.1f s, peak heap ${pass.peakHeapMb} MB, " +
              s"after GC ${pass.afterGcMb} MB (${pass.gcs} GCs)")
            pass
          }
        }
      }
      val json = passes.groupBy(_._1).toSeq.sortBy(_._1).map { case (name, runs) =>
        val best = runs.map(_._2).minBy(_.seconds)
        s""""$name": {"seconds": ${best.seconds}, "entriesPerSecond": ${(keys / best.seconds).toLong}, """ +
          s""""peakHeapMb": ${runs.map(_._2.peakHeapMb).max}, "afterGcMb": ${runs.map(_._2.afterGcMb).max}, """ +
          s""""gcs": [${runs.map(_._2.gcs).mkString(", ")}], """ +
          s""""coresUsed": ${best.coresUsed}, """ +
          s""""runs": [${runs.map(_._2.seconds).mkString(", ")}]}"""
      }.mkString(", ")
      println(s"""RESULT {"entries": $keys, "partitions": 2, "spark": "${spark.version}", $json}""")
    } finally {
      spark.stop()
      FileUtils.deleteQuietly(work.toFile)
    }
  }

  /** A checkpoint of [[ProfileAppV1]] on Spark's provider: one batch that writes a profile for each of `keys`. */
  private def query(spark: SparkSession, work: JPath, name: String, keys: Int): String = {
    import spark.implicits._
    val (input, checkpoint) = (s"$work/$name-input", s"$work/$name")
    spark.range(0, keys.toLong, 1, 2).selectExpr("id AS key", "CAST(id % 97 AS INT) AS amount").write.parquet(input)
    val started = System.nanoTime()
    spark.readStream.schema("key BIGINT, amount INT").parquet(input).as[Event].groupByKey(_.key)
      .transformWithState(new ProfileAppV1, TimeMode.None(), OutputMode.Update())
      .writeStream.format("noop").outputMode("update").option("checkpointLocation", checkpoint)
      .trigger(Trigger.AvailableNow()).start().awaitTermination()
    System.err.println(f"[setup] $name: the query wrote $keys%,d keys in ${(System.nanoTime() - started) / 1e9}%.0f s")
    checkpoint
  }

  /** `body` on a fresh copy of `checkpoint`, deleted after. */
  private def onCopy[T](work: JPath, checkpoint: String)(body: String => T): T = {
    val copy = Files.createTempDirectory(work, "pass").toFile
    FileUtils.copyDirectory(new File(checkpoint), copy)
    try body(copy.toString) finally FileUtils.deleteQuietly(copy)
  }

  /** statesnap's offline migrate, as `python -m statesnap migrate --no-file-sink --state profile --schema ...`. */
  private def migrate(spark: SparkSession, checkpoint: String): Unit = {
    val none = java.util.Collections.singletonList[String](null)
    val report = Migrate.run(spark, checkpoint, java.util.List.of(State), java.util.List.of(V2.json),
      none, none, none, none, null, java.util.Map.of(), null, noFileSink = true, dryRun = false)
    if (report.outcome != ToolReport.Change) throw new IllegalStateException(s"migrate did not migrate: " +
      report.lines.mkString("\n"))
  }

  /**
   * Spark's StateRewriter rewriting batch N's state as batch N+1, driven as `OfflineStateRepartitionRunner` drives
   * it: the new batch's offsets first (the rewriter reads the store conf from them), its commit after.
   */
  private def rewrite(spark: SparkSession, checkpoint: String): Unit = {
    val conf = spark.sparkContext.hadoopConfiguration
    val fs = FileSystem.getLocal(conf)
    val root = fs.makeQualified(new Path(checkpoint))
    val batch = fs.listStatus(new Path(root, "commits")).map(_.getPath.getName).flatMap(_.toLongOption).max
    def copyLog(log: String): Unit = FileUtils.copyFile(new File(s"$checkpoint/$log/$batch"),
      new File(s"$checkpoint/$log/${batch + 1}"))
    copyLog("offsets")
    val rewriter = Class.forName(Rewriter).getConstructors.head.newInstance(spark, Long.box(batch),
      Long.box(batch + 1), root.toString, conf, None, None, None)
    rewriter.getClass.getMethod("run").invoke(rewriter)
    copyLog("commits")
  }

  /**
   * Every key read back through Spark's state data source at the latest batch, the rewritten one: each profile
   * counted one event (v1 wrote it once) and, when migrated, reads as [[V2]] with no note.
   */
  private def verify(spark: SparkSession, checkpoint: String, keys: Int, migrated: Boolean): Unit = {
    val state: DataFrame = spark.read.format("statestore").option("stateVarName", State).load(checkpoint)
    val Array(row) = state.selectExpr("count(*)", "sum(value.count)", "min(value.total)", "max(value.total)",
      if (migrated) "count(value.note)" else "0").collect()
    val expected = Seq(keys.toLong, keys.toLong, 0L, 96L, 0L)
    val read = (0 until 5).map(i => row.get(i).asInstanceOf[Number].longValue)
    // Types only: Spark's file keeps the encoder's non-nullable ints as such.
    val valueType = state.schema("value").dataType.simpleString
    val expectedType = if (migrated) V2.simpleString else valueType
    if (read != expected || valueType != expectedType) throw new IllegalStateException(s"$checkpoint: read $read as " +
      s"$valueType, expected $expected as $expectedType: the rewrite is wrong, its figures are void")
  }
}
