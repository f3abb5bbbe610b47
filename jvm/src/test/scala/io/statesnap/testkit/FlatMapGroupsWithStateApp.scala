package io.statesnap.testkit

import java.util.concurrent.ConcurrentLinkedQueue

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.{Dataset, SparkSession}
import org.apache.spark.sql.streaming.{GroupState, GroupStateTimeout, OutputMode, Trigger}

/** Input rows of the test apps: `(id, value, op)`, as the Python apps read them. */
final case class Event(id: String, value: Long, op: String)

/** Version 1 of the Scala app's state. */
final case class TotalV1(total: Int)

/** Version 2: `total` widened, and a non-nullable `visits` that entries written by version 1 do not have. */
final case class TotalV2(total: Long, visits: Int)

/** Version 2 of the app with a timeout: a count of sets inserted before `total`, which is widened. */
final case class TotalFront(sets: Int, total: Long)

/**
 * Two versions of a Scala `flatMapGroupsWithState` application, compiled like the jar, which the end-to-end tests
 * restart on one checkpoint (driven through py4j). Each input row emits `id:<state before it>`, then
 * `op == "set"` writes the row's value into the state.
 */
object FlatMapGroupsWithStateApp {
  /** Runs app `version` (1 or 2) over the input not yet processed; returns what it emitted, sorted. */
  def run(spark: SparkSession, source: String, checkpoint: String, version: Int): java.util.List[String] = {
    import spark.implicits._
    val events = spark.readStream.schema("id string, value bigint, op string").json(source).as[Event]
      .groupByKey(_.id)
    val emitted = version match {
      case 1 => events.flatMapGroupsWithState(OutputMode.Update, GroupStateTimeout.NoTimeout)(
        update[TotalV1](v => TotalV1(v.toInt)))
      case 2 => events.flatMapGroupsWithState(OutputMode.Update, GroupStateTimeout.NoTimeout)(
        update[TotalV2](v => TotalV2(v, 1)))
    }
    val seen = new ConcurrentLinkedQueue[String]()
    val sink: (Dataset[String], Long) => Unit = (batch, _) => batch.collect().foreach(seen.add)
    val query = emitted.writeStream.outputMode("update").foreachBatch(sink)
      .option("checkpointLocation", checkpoint).trigger(Trigger.AvailableNow()).start()
    try query.awaitTermination() finally query.stop()
    seen.asScala.toSeq.sorted.asJava
  }

  /**
   * Runs version `version` (1: [[TotalV1]], 2: [[TotalFront]]) of the app with a processing-time timeout an hour out,
   * one micro-batch per input file, over the input not yet processed; returns what it emitted, in batch order.
   */
  def runWithTimeout(spark: SparkSession, source: String, checkpoint: String, version: Int): java.util.List[String] = {
    import spark.implicits._
    val events = spark.readStream.schema("id string, value bigint, op string").option("maxFilesPerTrigger", 1)
      .json(source).as[Event].groupByKey(_.id)
    val timeout = GroupStateTimeout.ProcessingTimeTimeout
    val emitted = version match {
      case 1 => events.flatMapGroupsWithState(OutputMode.Update, timeout)(
        withTimeout(updated[TotalV1](v => TotalV1(v.toInt), (_, v) => TotalV1(v.toInt))))
      case 2 => events.flatMapGroupsWithState(OutputMode.Update, timeout)(
        withTimeout(updated[TotalFront](v => TotalFront(1, v), (old, v) => TotalFront(old.sets + 1, v))))
    }
    val seen = new ConcurrentLinkedQueue[String]()
    val sink: (Dataset[String], Long) => Unit = (batch, _) => batch.collect().foreach(seen.add)
    val query = emitted.writeStream.outputMode("update").foreachBatch(sink)
      .option("checkpointLocation", checkpoint).trigger(Trigger.AvailableNow()).start()
    try query.awaitTermination() finally query.stop()
    seen.asScala.toSeq.asJava
  }

  private def withTimeout[S](f: (String, Iterator[Event], GroupState[S]) => Iterator[String])(id: String,
      rows: Iterator[Event], state: GroupState[S]): Iterator[String] = {
    val out = f(id, rows, state).toList
    if (state.exists) state.setTimeoutDuration(3600000L)
    out.iterator
  }

  /** As [[update]], where a set writes `set(value)` into an empty state and `next(old, value)` over an old one. */
  private def updated[S](set: Long => S, next: (S, Long) => S)(id: String, rows: Iterator[Event],
      state: GroupState[S]): Iterator[String] =
    rows.map { row =>
      val before = state.getOption.fold("null")(_.toString)
      if (row.op == "set") state.update(state.getOption.fold(set(row.value))(next(_, row.value)))
      s"$id:$before"
    }

  private def update[S](set: Long => S)(id: String, rows: Iterator[Event], state: GroupState[S]): Iterator[String] =
    rows.map { row =>
      val before = state.getOption.fold("null")(_.toString)
      if (row.op == "set") state.update(set(row.value))
      s"$id:$before"
    }
}
