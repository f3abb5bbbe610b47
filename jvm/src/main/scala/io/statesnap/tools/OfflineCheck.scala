package io.statesnap.tools

import scala.jdk.CollectionConverters._

import io.statesnap.checkpoint.{CheckpointReader, CheckpointRecords}
import io.statesnap.bridge.{ApplicationSqlSettings, CompatibilityCheck}
import io.statesnap.bridge.CompatibilityCheck.Verdict
import io.statesnap.provider.{StateDecision, StateEncoding, WrittenAsRecordFiles}
import io.statesnap.snapshot.{OperatorKind, StateKind, StateSnapshotRecord}
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.SparkSession
import io.statesnap.checkpoint.CheckpointRecords.SparkFiles
import org.apache.spark.sql.types.{DataType, StructType}

/**
 * `python -m statesnap check`: what a new application version would do to one state of a checkpoint, decided by
 * the code a store runs ([[CompatibilityCheck]]) over the records the state is read with at the latest committed
 * batch (statesnap's, else Spark's files'), and every entry of the state scanned against those records
 * ([[LayoutScan]]; not Avro-encoded state, whose entries name their schema), since a decision about bytes that are
 * not in the recorded layout says nothing. Read-only:
 * it may run beside the live query.
 */
object OfflineCheck {
  /**
   * @param fromSparkFiles the state has no statesnap record yet: it was judged by what Spark's schema files record
   * @param verdicts each distinct verdict, with the partitions it holds for (-1: every partition, one record)
   * @param scan one line per state scanned, then the scan's speed (empty when not scanned)
   * @param notInLayout entries (list elements) in none of the layouts the records say
   * @param sqlSettings the settings the definition's SQL rules run under and where each comes from, worded, or null
   *   without SQL rules
   */
  final case class Result(fromSparkFiles: Boolean, verdicts: java.util.List[Judged], scan: java.util.List[String],
      notInLayout: Long, sqlSettings: String)

  /** A verdict and the partitions (sorted) it holds for. */
  final case class Judged(verdict: Verdict, partitions: java.util.List[Int])

  /**
   * @param kind `value`, `list` or `map`, or null for the recorded kind
   * @param keyJson, userKeyJson, valueJson the declared schemas (Spark JSON; null for the recorded key)
   * @param definitionJson a definition as `RowSnapshot.to_json` gives it, or null
   * @param mapKeyJson for a map, the definition registered as its key (`map_key=`), or null
   * @param mode the query's compatibility mode, or null
   * @param sqlConf the application's SQL settings, as Spark confs ([[ApplicationSqlSettings]]; may be empty)
   * @param scan whether to scan every entry of the state
   * @throws StatesnapException when the checkpoint holds no record of the state
   */
  def run(spark: SparkSession, checkpoint: String, state: String, kind: String, keyJson: String,
      userKeyJson: String, valueJson: String, definitionJson: String, mapKeyJson: String, mode: String,
      sqlConf: java.util.Map[String, String], scan: Boolean): Result = {
    val hadoopConf = spark.sessionState.newHadoopConf()
    val records = CheckpointRecords.recordsOf(checkpoint, state, hadoopConf)
    if (records.isEmpty) throw ToolErrors.noSnapshotOfState(state, checkpoint, known(checkpoint, hadoopConf))
    val settings = records.map(r => ApplicationSqlSettings(r._3, sqlConf.asScala.toMap))
    val avro = CheckpointReader.avroEncoded(checkpoint, hadoopConf)
    val judged = records.zip(settings).map { case ((store, kept, recorded), sql) =>
      val declared = CompatibilityCheck.declare(recorded, Option(kind).map(StateKind.named), Option(keyJson)
        .map(structOf), Option(userKeyJson).map(structOf), structOf(valueJson), Option(definitionJson), Option(mode),
        sql.settings, Option(mapKeyJson))
      (CompatibilityCheck.verdict(recorded, declared, StateEncoding.of(avro), checkpoint),
        if (kept == SparkFiles) -1 else store.partition)
    }.groupBy(v => (v._1.reported, v._1.mode, v._1.operator, v._1.details)).values.toSeq
      .map(vs => Judged(vs.head._1, vs.map(_._2).distinct.sorted.asJava)).sortBy(_.partitions.asScala.headOption)
    val scanned = if (!scan) LayoutScan.Scan(Nil, "") else if (avro) LayoutScan.Scan(Nil, LayoutScan.AvroNotScanned)
      else LayoutScan(spark, checkpoint, hadoopConf, records.map {
      case (store, kept, record) => LayoutScan.Scanned(store, kept, record,
        writtenAs(checkpoint, store.operator, record, store.version, kept == SparkFiles, hadoopConf))
    })
    Result(records.head._2 == SparkFiles, judged.asJava, scanned.lines.asJava,
      scanned.counted.map(_.inNeither).sum,
      settings.distinct.flatMap(_.note(state, Option(definitionJson))).mkString("; ") match {
        case "" => null
        case said => said
      })
  }

  /**
   * The layout `adopt --written-as` recorded for some entries of a transformWithState state, while it is in force:
   * from the version adopt scanned, while statesnap holds no record of the state (as the store reads it).
   */
  private def writtenAs(checkpoint: String, operator: Int, record: StateSnapshotRecord, version: Long,
      noRecordYet: Boolean, hadoopConf: org.apache.hadoop.conf.Configuration): Option[StructType] =
    if (!noRecordYet || record.operator != OperatorKind.TransformWithState) None else {
      val stateRoot = new Path(checkpoint, "state").toString
      val fs = new Path(stateRoot).getFileSystem(hadoopConf)
      WrittenAsRecordFiles.recordInForce(fs, stateRoot, operator, record.stateName, version)
        .map(r => StateDecision.schemaOf(r.valueSnapshot))
    }

  /** The states the checkpoint does hold, for a refusal that names a state it does not. */
  private def known(checkpoint: String, hadoopConf: org.apache.hadoop.conf.Configuration): String = {
    val own = CheckpointRecords.parsedRecords(checkpoint, hadoopConf).map(_._3.stateName)
    val names = (own ++ CheckpointRecords.sparkRecords(checkpoint, hadoopConf).map(_._2.stateName)).distinct
      .sorted
    if (names.isEmpty) "" else s"; its states: ${names.map(n => s"'$n'").mkString(", ")}"
  }

  private def structOf(json: String): StructType = DataType.fromJson(json).asInstanceOf[StructType]
}
