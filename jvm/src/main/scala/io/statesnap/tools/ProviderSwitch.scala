package io.statesnap.tools

import io.statesnap.checkpoint.{CheckpointRecords, CheckpointRefusals, RefusedPlans, StoppedCheckpoint}
import io.statesnap.ProviderClasses
import io.statesnap.provider.{RecordWriter, WrittenAsRecordFiles}
import io.statesnap.registration.QueryStates
import io.statesnap.snapshot.{OperatorKind, StateSnapshotRecord}
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.types.StructType
import org.slf4j.LoggerFactory

/**
 * How [[Adopt]] and [[Release]] move a stopped query's checkpoint between Spark's RocksDB provider and statesnap's:
 * the offset log pins the state store provider a query was created with, so that move means rewriting that pinned
 * conf in the latest offset entry, the entry every restart reads it from. The file is rewritten through
 * Hadoop's FileSystem (`CheckpointFileManager.createAtomic`, so checksum files stay valid and a crash leaves the
 * old file), after a backup under `_statesnap/provider-switch/`; Spark's own offset log then reads it back to
 * confirm. Nothing else changes: state files stay as they are, and statesnap seeds each state's snapshot from
 * Spark's own schema files on first access.
 */
private[tools] object ProviderSwitch {
  private val log = LoggerFactory.getLogger(getClass)
  private val ProviderConf = StoppedCheckpoint.ProviderConf
  private val Statesnap = ProviderClasses.Statesnap
  private val Spark = ProviderClasses.SparkRocksDB

  /**
   * Moves the stopped query at `location` from the provider `from` to `to` by rewriting the provider its latest
   * offsets pin (the state files stay as they are); into statesnap's, after a scan of the entries it is about to
   * trust (`writtenAs`: [[layoutScan]]).
   */
  private[tools] def switch(spark: SparkSession, location: String, from: String, to: String, dryRun: Boolean,
      verb: String, writtenAs: Map[String, StructType]): ToolReport = {
    val checkpoint = StoppedCheckpoint(spark, location, verb)
    checkpoint.refuseInterruptedByAnother()
    import checkpoint.refuse
    val refused = RefusedPlans.removed(checkpoint, dryRun).toSeq
    if (dryRun && refused.nonEmpty) return ToolReport(refused.map("would " + _) :+ "dry run: nothing was changed; " +
      s"run $verb without --dry-run to put the checkpoint right first", ToolReport.Change)
    val batch = checkpoint.latestCommittedBatch
    val confs = checkpoint.pinnedConfs(batch)
    val current = checkpoint.pinnedProvider(batch)
    if (current == to) return ToolReport(refused :+ s"$location already runs on $to (offsets/$batch): nothing to do",
      if (refused.isEmpty) ToolReport.Nothing else ToolReport.Change)
    if (current != from) refuse(ProviderSwitchRefusals.anotherProvider(batch, current, verb, from))
    val avro = checkpoint.requireRewritableState(batch, avroTransformWithState = true)
    if (to == Statesnap) TransformWithStateAdoption.refuseWhereSparkKeepsIt(checkpoint)
    if (avro && writtenAs.nonEmpty) refuse(ProviderSwitchRefusals.writtenAsOfAvro)

    if (to == Spark) CheckpointRecords.refuseDisagreements(checkpoint)
    val (scanned, layouts) =
      if (to != Statesnap) (Nil, Nil)
      else if (avro) (Seq(LayoutScan.AvroNotScanned), Nil)
      else layoutScan(spark, checkpoint, batch, writtenAs)
    val file = checkpoint.offsetsFile(batch)
    val before = checkpoint.read(file)
    val after = StoppedCheckpoint.withProvider(before, current, to)
      .getOrElse(refuse(CheckpointRefusals.unrewritableOffsets(batch, current)))
    val backup = new Path(new Path(checkpoint.root, "_statesnap/provider-switch"), s"offsets-$batch-before-$verb-" +
      System.currentTimeMillis())
    // What the scan found, then what is done (on a dry run: would be), each worded after "would " or "done: ".
    val actions = layouts.map(_.says) ++ Seq(s"set $ProviderConf in offsets/$batch (the latest batch, committed): " +
      s"$current -> $to", s"back up the file to $backup")
    if (dryRun) return ToolReport(scanned ++ actions.map("would " + _) :+ "dry run: nothing was changed",
      ToolReport.Change)
    if (to == Statesnap) {
      // What an earlier adopt recorded is replaced by what this scan found.
      val stateRoot = new Path(checkpoint.root, "state").toString
      checkpoint.operators._1.foreach(op => checkpoint.delete(WrittenAsRecordFiles.root(stateRoot, op)))
      layouts.foreach(l => RecordWriter.toFile(l.file, l.record, batch + 1, checkpoint.hadoopConf))
    }
    checkpoint.write(backup, before)
    checkpoint.write(file, after)
    if (!checkpoint.readsBack(batch, confs.updated(ProviderConf, to))) {
      checkpoint.write(file, before)
      throw ToolErrors.readBackDiffers(verb, location, batch, s"offsets/$batch", "the original was put back")
    }
    log.info(s"statesnap $verb: $location now runs on $to (offsets/$batch; backup $backup)")
    ToolReport(refused ++ scanned ++ actions.map("done: " + _) :+ s"done: restart the query on $to", ToolReport.Change)
  }

  /**
   * What statesnap is about to trust: every entry of the checkpoint's states (transformWithState variables, group
   * state, registered aggregations' buffers) checked against the layout Spark's schema files record, one line per
   * state. A checkpoint with entries in another layout is refused,
   * unless every one of them is in the layout the user names for its state (`writtenAs`) and none fits both: then
   * that layout is recorded beside the state ([[WrittenAsRecordFiles]]), and statesnap's first migration of the
   * state converts each entry from the layout it is in. @return the lines, and the layouts to record
   */
  private def layoutScan(spark: SparkSession, checkpoint: StoppedCheckpoint, batch: Long,
      writtenAs: Map[String, StructType]): (Seq[String], Seq[WrittenAs]) = {
    val trusted = CheckpointRecords.sparkRecords(checkpoint.location, checkpoint.hadoopConf)
    val named = trusted.collect { case (_, r) if r.operator == OperatorKind.TransformWithState => r.stateName }
    writtenAs.keySet.diff(named.toSet).toSeq.sorted.foreach { state =>
      checkpoint.refuse(ProviderSwitchRefusals.writtenAsOfNoState(state, named))
    }
    val scan = LayoutScan(spark, checkpoint.location, checkpoint.hadoopConf, trusted.map { case (store, record) =>
      LayoutScan.Scanned(store, CheckpointRecords.SparkFiles, record,
        writtenAs.get(record.stateName).filter(_ => record.operator == OperatorKind.TransformWithState))
    })
    val lines = scan.lines
    val mixed = scan.counted.filter(_.inNeither > 0)
    if (mixed.nonEmpty) checkpoint.refuse(ProviderSwitchRefusals.entriesInAnotherLayout(lines, mixed.map(_.state)))
    val ambiguous = scan.counted.filter(_.inBoth > 0)
    if (ambiguous.nonEmpty)
      checkpoint.refuse(ProviderSwitchRefusals.entriesInEitherLayout(lines, ambiguous.map(_.state)))
    val stateRoot = new Path(checkpoint.root, "state").toString
    val unscanned = unnamed(checkpoint, stateRoot, trusted.map(_._1.operator).toSet)
    (lines ++ unscanned, scan.counted.filter(_.inWrittenAs > 0).map { c =>
      val recorded = trusted.collectFirst { case (s, r) if s.operator == c.operator && r.stateName == c.state => r }.get
      val record = TransformWithStateAdoption.writtenAsRecord(recorded, c.writtenAs.get)
      val file = WrittenAsRecordFiles.file(stateRoot, c.operator, c.state, batch + 1)
      WrittenAs(s"record that ${c.inWrittenAs} entries of state '${c.state}' are in ${c.writtenAs.get.simpleString} " +
        s"($file): statesnap's first run migrates each entry from the layout it is in", file, record)
    })
  }

  /**
   * A line for each stateful operator whose name is recorded nowhere yet (Spark 3.5 writes no operator metadata;
   * statesnap's listener records the names after a run's first batch on its provider) and whose state is not a
   * group state: whether its state is a streaming aggregation's buffers cannot be known, so it is not scanned, and
   * statesnap's first run guards it as Spark's own check does; a registered aggregation migrates from the next run
   * ([[QueryStates]]), every entry checked against its layout as it is converted.
   */
  private def unnamed(checkpoint: StoppedCheckpoint, stateRoot: String, scanned: Set[Int]): Seq[String] =
    checkpoint.operators._2.filter(op => !scanned(op) &&
      QueryStates.operator(stateRoot, op, checkpoint.hadoopConf).isEmpty).map { op =>
      s"the state of operator $op is not scanned: no name of the operator is recorded yet (Spark " +
        s"${org.apache.spark.SPARK_VERSION} writes none; statesnap records it in its first run), so statesnap cannot " +
        "tell a streaming aggregation's buffers from other state. Its first run on statesnap refuses a changed " +
        "schema of it, as Spark's own check does; a streaming aggregation registered for 'aggregation' migrates from " +
        "the run after"
    }

  /** A layout `adopt` records beside a state (from the version after the latest batch's): what, where, the record. */
  private final case class WrittenAs(says: String, file: Path, record: StateSnapshotRecord)
}
