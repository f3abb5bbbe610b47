package io.statesnap.tools

import java.nio.{ByteBuffer, ByteOrder}

import io.statesnap.evolution.UnsafeRowLayout
import io.statesnap.provider.{SparkSchemaRecords, StateDecision}
import io.statesnap.snapshot.{StateKind, TtlValueSnapshot}
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.streaming.state.offline.StatesnapCheckpointReader
import org.apache.spark.sql.types.StructType
import org.apache.spark.unsafe.Platform
import org.apache.spark.util.SerializableConfiguration

/**
 * Counts, for every transformWithState state of a stopped checkpoint, the entries in the layout Spark's own schema
 * files record for it and the entries that are not: the trace of a deploy that ran with Spark's schema check off,
 * which wrote some entries in its own layout and left the files as they were. Where the user names the layout that
 * deploy wrote (`writtenAs`), the entries in it are counted apart, and so are entries whose bytes fit both layouts
 * (which no reader can place). One Spark task per partition reads the committed state (snapshot and changelogs)
 * and checks every value ([[UnsafeRowLayout]]; every element of a list, split as Spark 4.1 joins them: `adopt`
 * serves transformWithState on 4.1 only). Stores of other operators are not scanned yet.
 */
private[tools] object LayoutScan {
  /** One state's entries (list elements) over every partition of its operator, by the layouts they fit. */
  final case class Counted(operator: Int, state: String, layout: StructType, writtenAs: Option[StructType],
      inLayout: Long, inWrittenAs: Long, inBoth: Long, inNeither: Long, example: Option[String])

  /**
   * One state a task checks: its name, whether it is a list, its key (None: a map's composite key), its value as
   * Spark's files record it, and the layout the user names for the other entries.
   */
  private final case class State(name: String, list: Boolean, key: Option[StructType], value: StructType,
      writtenAs: Option[StructType])

  /** What one task checks: the states of one operator, in one partition. */
  private final case class Task(checkpoint: String, operator: Int, partition: Int, states: Seq[State])

  /**
   * @param writtenAs by state name, the value layout in which a deploy wrote the entries not in the recorded one
   * @return every state's count, and a line saying how fast the scan ran
   */
  def apply(spark: SparkSession, checkpoint: StoppedCheckpoint, batch: Long,
      writtenAs: Map[String, StructType]): (Seq[Counted], String) = {
    val stateRoot = new Path(checkpoint.root, "state").toString
    val tasks = checkpoint.operators._1.flatMap { op =>
      val states = SparkSchemaRecords.transformWithStateAt(stateRoot, op, batch, checkpoint.hadoopConf).toSeq
        .sortBy(_._1).map { case (state, record) =>
          val value = StateDecision.schemaOf(record.valueSnapshot)
          State(state, record.kind == StateKind.List, Some(StateDecision.schemaOf(record.keySnapshot))
            .filter(_ => record.kind != StateKind.Map), value, writtenAs.get(state).map(inWrapperOf(value, _)))
        }
      val partitions = checkpoint.fs.listStatus(new Path(stateRoot, op.toString)).toSeq
        .flatMap(_.getPath.getName.toIntOption).sorted
      val root = checkpoint.fs.makeQualified(checkpoint.root).toString // a task resolves it on its own
      if (states.isEmpty) Nil else partitions.map(Task(root, op, _, states))
    }
    if (tasks.isEmpty) return (Nil, "")
    val conf = new SerializableConfiguration(checkpoint.hadoopConf)
    val started = System.nanoTime()
    spark.sparkContext.setJobDescription("statesnap: scan the state's layout")
    val counts = spark.sparkContext.parallelize(tasks, tasks.size).flatMap(scan(_, conf)).collect()
    val seconds = math.max(1e-9, (System.nanoTime() - started) / 1e9)
    val counted = counts.groupBy(c => (c.operator, c.state)).values.map(_.reduce { (a, b) =>
      a.copy(inLayout = a.inLayout + b.inLayout, inWrittenAs = a.inWrittenAs + b.inWrittenAs,
        inBoth = a.inBoth + b.inBoth, inNeither = a.inNeither + b.inNeither, example = a.example.orElse(b.example))
    }).toSeq.sortBy(c => (c.operator, c.state))
    val entries = counted.map(c => c.inLayout + c.inWrittenAs + c.inBoth + c.inNeither).sum
    (counted, f"scanned $entries entries of ${counted.size} states in ${tasks.size} partition tasks in " +
      f"$seconds%.1f s (${entries / seconds}%.0f entries/s)")
  }

  private def scan(task: Task, conf: SerializableConfiguration): Seq[Counted] = task.states.map {
    case State(state, list, keySchema, layout, writtenAs) =>
      val checks = (layout +: writtenAs.toSeq).map(new UnsafeRowLayout(_))
      val counts = Array.fill(4)(0L) // in the layout only, in writtenAs only, in both, in neither
      var example = Option.empty[String]
      StatesnapCheckpointReader.family(task.checkpoint, task.operator, task.partition, state, conf.value)
        .getOrElse(Nil).foreach { case (key, value) =>
          def notInEither(why: String): Unit = {
            counts(3) += 1
            if (example.isEmpty) example = Some(s"partition ${task.partition}, key ${shown(key, keySchema)}: $why")
          }
          (if (list) elements(value) else Right(Seq((1, value.length - 1)))) match {
            case Left(why) => notInEither(why)
            case Right(rows) => rows.foreach { case (start, length) =>
              val problems = checks.map(_.problem(value, Platform.BYTE_ARRAY_OFFSET + start, length))
              problems match {
                case Seq(None, Some(_)) | Seq(None) => counts(0) += 1
                case Seq(Some(_), None) => counts(1) += 1
                case Seq(None, None) => counts(2) += 1
                case _ => notInEither(problems.flatten.distinct.mkString("; "))
              }
            }
          }
        }
      Counted(task.operator, state, layout, writtenAs, counts(0), counts(1), counts(2), counts(3), example)
  }

  /** A layout a user names for a state with TTL: Spark's wrapper around it, as Spark's files record it. */
  private def inWrapperOf(recorded: StructType, named: StructType): StructType =
    if (TtlValueSnapshot.unwrap(recorded).isEmpty) named
    else TtlValueSnapshot.inWrapperOf(recorded, TtlValueSnapshot.wrap(named))

  /** A stored key as the application sees it (its layout checked first), else its bytes. */
  private def shown(key: Array[Byte], schema: Option[StructType]): String = schema.filter { s =>
    key.length > 1 && new UnsafeRowLayout(s).problem(key, Platform.BYTE_ARRAY_OFFSET + 1, key.length - 1).isEmpty
  }.fold(key.map("%02x".format(_)).mkString("0x", "", "")) { s =>
    val row = new UnsafeRow(s.length)
    row.pointTo(key, Platform.BYTE_ARRAY_OFFSET + 1, key.length - 1)
    row.toSeq(s).mkString("[", ", ", "]")
  }

  /** The (start, length) of each element's row in a list value: `[int length][version byte][row]`, joined by ','. */
  private def elements(value: Array[Byte]): Either[String, Seq[(Int, Int)]] = {
    val buffer = ByteBuffer.wrap(value).order(ByteOrder.nativeOrder())
    val rows = Seq.newBuilder[(Int, Int)]
    var at = 0
    while (at < value.length) {
      if (at + 4 > value.length) return Left(s"the list value ends inside an element's length at byte $at")
      val length = buffer.getInt(at)
      if (length < 1 || at + 4 + length > value.length) {
        return Left(s"a list element's length $length at byte $at does not fit in the value")
      }
      rows += ((at + 5, length - 1))
      at += 4 + length
      if (at < value.length) {
        if (value(at) != ','.toByte) return Left(s"byte $at of the list value is not the ',' between elements")
        at += 1
      }
    }
    Right(rows.result())
  }
}
