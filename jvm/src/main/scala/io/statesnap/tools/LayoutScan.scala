package io.statesnap.tools

import java.nio.{ByteBuffer, ByteOrder}
import java.util.Arrays

import io.statesnap.checkpoint.{CheckpointReader, CheckpointRecords}
import io.statesnap.ScalaCompat._
import io.statesnap.evolution.UnsafeRowLayout
import io.statesnap.provider.StateDecision
import io.statesnap.snapshot.{OperatorKind, StateKind, StateSnapshotRecord, TtlValueSnapshot}
import io.statesnap.checkpoint.CheckpointReader.Store
import io.statesnap.checkpoint.CheckpointRecords.{BesideStore, InStore, Kept, Migrated, SparkFiles}
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.types.StructType
import org.apache.spark.unsafe.Platform
import org.apache.spark.util.SerializableConfiguration

/**
 * Counts, for states of a stopped checkpoint, the entries in the layout the record in force says and the entries
 * that are not: the trace of a deploy that ran with Spark's schema check off, which wrote some entries in its own
 * layout and left the record (Spark's schema files, or statesnap's) as it was. Where the user names the layout that
 * deploy wrote (`writtenAs`), the entries in it are counted apart, and so are entries whose bytes fit both layouts
 * (which no reader can place). One Spark task per partition reads the committed state (snapshot and changelogs)
 * and checks every value ([[UnsafeRowLayout]]; every element of a list, split as the checkpoint's pinned merge
 * operator joins them). `adopt` scans what it is about to trust, `check` what the state it judges holds.
 */
object LayoutScan {
  /** One state to scan: where its record is kept, the record, and the layout a deploy wrote other entries in. */
  final case class Scanned(store: Store, kept: Kept, record: StateSnapshotRecord, writtenAs: Option[StructType])

  /** One state's entries (list elements) over the partitions scanned, by the layouts they fit. */
  final case class Counted(operator: Int, storeName: String, state: String, recordedBy: String, layout: StructType,
      writtenAs: Option[StructType], inLayout: Long, inWrittenAs: Long, inBoth: Long, inNeither: Long,
      example: Option[String]) {
    def entries: Long = inLayout + inWrittenAs + inBoth + inNeither

    /** One line, as `adopt` and `check` print it. */
    def says: String = s"state '$state' of operator $operator" +
      (if (storeName == CheckpointReader.DefaultStore) "" else s" (store $storeName)") +
      s": $inLayout entries in the layout $recordedBy (${layout.simpleString}), " +
      writtenAs.fold("")(w => s"$inWrittenAs in the layout named (${w.simpleString}), $inBoth that fit both, ") +
      s"$inNeither in " +
      (if (writtenAs.isEmpty) "another" else "neither") + example.fold("")(e => s" (first: $e)")
  }

  /** Every state's count, and a line saying how fast the scan ran (empty when nothing was scanned). */
  /**
   * What `adopt` and `check` say of Avro-encoded state (`encodingFormat=avro`) instead of a layout scan: an Avro entry
   * is not read under a layout it might not be in, it names the schema id that wrote it.
   */
  val AvroNotScanned: String = "the state is Avro-encoded: every entry names the schema id that wrote it, and " +
    "Spark's schema files map each id to its schema. statesnap decodes each entry under its own id when it rewrites " +
    "the state to the declared schema (a state Spark evolved lazily, with entries under older ids, is rewritten in " +
    "statesnap's first run even if its schema does not change); an entry under an id the files do not list fails " +
    "that batch, and nothing is committed"

  final case class Scan(counted: Seq[Counted], speed: String) {
    def lines: Seq[String] = counted.map(_.says) ++ Option(speed).filter(_.nonEmpty)
  }

  /**
   * One state a task checks: its name, where its entries are (a column family, or the whole store), whether it is a
   * list, its key (None: a map's composite key), the layouts its entries may be in (the recorded one first).
   */
  private final case class State(name: String, family: Option[String], list: Boolean, key: Option[StructType],
      layouts: Seq[StructType], recordedBy: String)

  /** What one task checks: the states of one store of one operator, in one partition. */
  private final case class Task(checkpoint: String, operator: Int, partition: Int, storeName: String,
      delimiter: Array[Byte], states: Seq[State])

  /** Scans `scanned` in the checkpoint at `location`, at its latest committed batch. */
  def apply(spark: SparkSession, location: String, hadoopConf: Configuration, scanned: Seq[Scanned]): Scan = {
    val fs = new Path(location).getFileSystem(hadoopConf)
    val root = fs.makeQualified(new Path(location)).toString // a task resolves it on its own
    val delimiter = CheckpointReader.mergeDelimiter(location, hadoopConf)
    val partitions = scanned.map(_.store.operator).distinct.map { op =>
      op -> fs.listStatus(new Path(root, s"state/$op")).toSeq.flatMap(_.getPath.getName.toIntOption).sorted
    }.toMap
    // A record kept in a store (or beside it) is that partition's; one made from operator-wide files is everyone's.
    val tasks = scanned.flatMap { s =>
      val in = s.kept match {
        case InStore | BesideStore => Seq(s.store.partition)
        case Migrated | SparkFiles => partitions(s.store.operator)
      }
      in.map(p => (s.store.operator, p, s.store.storeName) -> state(s))
    }.groupBy(_._1).toSeq.sortBy(_._1).map { case ((op, p, store), states) =>
      Task(root, op, p, store, delimiter, states.map(_._2).sortBy(_.name))
    }
    if (tasks.isEmpty) return Scan(Nil, "")
    val conf = new SerializableConfiguration(hadoopConf)
    val started = System.nanoTime()
    spark.sparkContext.setJobDescription("statesnap: scan the state's layout")
    val counts = spark.sparkContext.parallelize(tasks, tasks.size).flatMap(scan(_, conf)).collect()
    val seconds = math.max(1e-9, (System.nanoTime() - started) / 1e9)
    val counted = counts.groupBy(c => (c.operator, c.storeName, c.state)).values.map(_.reduce { (a, b) =>
      a.copy(inLayout = a.inLayout + b.inLayout, inWrittenAs = a.inWrittenAs + b.inWrittenAs,
        inBoth = a.inBoth + b.inBoth, inNeither = a.inNeither + b.inNeither, example = a.example.orElse(b.example))
    }).toSeq.sortBy(c => (c.operator, c.storeName, c.state))
    val entries = counted.map(_.entries).sum
    Scan(counted, f"scanned $entries entries of ${counted.size} states in ${tasks.size} partition tasks in " +
      f"$seconds%.1f s (${entries / seconds}%.0f entries/s)")
  }

  /** What a task checks of one scanned state. */
  private def state(s: Scanned): State = {
    val record = s.record
    val layout = StateDecision.schemaOf(record.valueSnapshot)
    // A state of another operator, kept beside its store or in Spark's file of it, is the whole store.
    val family = s.kept match {
      case InStore | Migrated => Some(record.stateName)
      case SparkFiles if record.operator == OperatorKind.TransformWithState => Some(record.stateName)
      case _ => None
    }
    State(record.stateName, family, record.kind == StateKind.List,
      Option.when(record.kind != StateKind.Map)(StateDecision.schemaOf(record.keySnapshot)),
      layout +: s.writtenAs.map(inWrapperOf(layout, _)).toSeq, s.kept match {
        case SparkFiles => "Spark's schema files record"
        case Migrated => "statesnap's migrate recorded"
        case InStore | BesideStore => "statesnap recorded"
      })
  }

  private def scan(task: Task, conf: SerializableConfiguration): Seq[Counted] = task.states.map { state =>
    val checks = state.layouts.map(new UnsafeRowLayout(_)).toArray
    val counts = Array.fill(4)(0L) // in the layout only, in writtenAs only, in both, in neither
    var example = Option.empty[String]
    CheckpointReader.foreachEntry(task.checkpoint, task.operator, task.partition, task.storeName,
        state.family, conf.value) { (key, value) =>
      def notInEither(why: String): Unit = {
        counts(3) += 1
        if (example.isEmpty) example = Some(s"partition ${task.partition}, key " +
          s"${UnsafeRowLayout.describe(key, 1, key.length - 1, state.key)}: $why")
      }
      // The hot path allocates nothing for an entry in a layout: the problems are worded only for the others.
      def place(start: Int, length: Int): Unit = {
        val inLayout = checks(0).problem(value, Platform.BYTE_ARRAY_OFFSET + start, length).isEmpty
        val inNamed = checks.length > 1 && checks(1).problem(value, Platform.BYTE_ARRAY_OFFSET + start, length).isEmpty
        if (inLayout && inNamed) counts(2) += 1
        else if (inLayout) counts(0) += 1
        else if (inNamed) counts(1) += 1
        else notInEither(checks.flatMap(_.problem(value, Platform.BYTE_ARRAY_OFFSET + start, length)).distinct
          .mkString("; "))
      }
      if (!state.list) place(1, value.length - 1)
      else elements(value, task.delimiter) match {
        case Left(why) => notInEither(why)
        case Right(rows) => rows.foreach { case (start, length) => place(start, length) }
      }
    }
    Counted(task.operator, task.storeName, state.name, state.recordedBy, state.layouts.head, state.layouts.lift(1),
      counts(0), counts(1), counts(2), counts(3), example)
  }

  /** A layout a user names for a state with TTL: Spark's wrapper around it, as Spark's files record it. */
  private def inWrapperOf(recorded: StructType, named: StructType): StructType =
    if (TtlValueSnapshot.unwrap(recorded).isEmpty) named
    else TtlValueSnapshot.inWrapperOf(recorded, TtlValueSnapshot.wrap(named))

  /**
   * The (start, length) of each element's row in a list value: `[int length][version byte][row]`, joined by the
   * merge operator's delimiter (',' before Spark 4.2's merge operator version 2, nothing since).
   */
  private def elements(value: Array[Byte], delimiter: Array[Byte]): Either[String, Seq[(Int, Int)]] = {
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
      if (at < value.length && delimiter.nonEmpty) {
        if (at + delimiter.length > value.length ||
            !Arrays.equals(value, at, at + delimiter.length, delimiter, 0, delimiter.length)) {
          return Left(s"byte $at of the list value is not the delimiter between elements")
        }
        at += delimiter.length
      }
    }
    Right(rows.result())
  }
}
