package io.statesnap.provider

import io.statesnap.SparkClasses.CheckpointFileManager
import io.statesnap.meaning.{OperatorMeaning, RecordedMeanings}
import io.statesnap.registration.SparkOperator
import io.statesnap.snapshot.StateSnapshotRecord
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.execution.streaming.state.StateStoreId
import org.apache.spark.sql.types.StructType

/**
 * What describes the single state of a store without column families as of a store version, written together by
 * every path that changes it (the store as it commits, [[OperatorStateGuard]]; a key change offline, `tools.Move`)
 * and removed together with a version never committed: statesnap's record of each partition's store
 * ([[OperatorRecordFiles]]) and, once for the operator by partition 0, what its state means ([[RecordedMeanings]], by
 * its default store or a join's first) and Spark's schema file of the store ([[SparkSchemaFileHistory]], its earlier
 * content kept).
 */
private[statesnap] object SingleStateDescription {
  /** What a version describes anew, each part None where it stays as it was. */
  final case class Described(record: Option[StateSnapshotRecord], meaning: Option[OperatorMeaning],
      schemas: Option[(StructType, StructType)])

  /** The files [[write]] wrote, each None where its part was not written. */
  final case class Written(meaning: Option[Path], record: Option[Path], sparkSchemaFile: Option[Path])

  /**
   * Describes store `id` as of `version` as `described`: the meaning first (its default store, partition 0), then the
   * record (replacing any of a later version: a retried version's), then Spark's file (partition 0, where it changes).
   */
  def write(id: StateStoreId, version: Long, described: Described, hadoopConf: Configuration): Written = {
    val meaning = described.meaning.filter(_ => describesMeaning(id))
      .map(RecordedMeanings.write(id.checkpointRootLocation, id.operatorId, version, _, hadoopConf))
    val record = described.record.map { next =>
      val dir = recordDir(id)
      val file = OperatorRecordFiles.file(dir, version)
      RecordWriter.toFile(file, next, version, hadoopConf)
      val fm = CheckpointFileManager.create(dir, hadoopConf)
      OperatorRecordFiles.versions(dir.getFileSystem(hadoopConf), dir).filter(_ > version)
        .foreach(v => fm.delete(OperatorRecordFiles.file(dir, v)))
      file
    }
    val sparkFile = described.schemas.filter(_ => describesOperator(id)).flatMap { case (key, value) =>
      SparkSchemaFileHistory.update(id, key, value, version, hadoopConf)
    }
    Written(meaning, record, sparkFile)
  }

  /** Removes what [[write]] wrote of store `id` as of `version`, a version never committed; nothing where none was. */
  def remove(id: StateStoreId, version: Long, hadoopConf: Configuration): Unit = {
    val fs = new Path(id.checkpointRootLocation).getFileSystem(hadoopConf)
    fs.delete(OperatorRecordFiles.file(recordDir(id), version), false)
    if (describesMeaning(id)) fs.delete(RecordedMeanings.file(id.checkpointRootLocation, id.operatorId, version), false)
    if (describesOperator(id)) SparkSchemaFileHistory.restore(id, version, hadoopConf)
  }

  /** Partition 0's store describes what is one for the operator: its meaning, Spark's schema file. */
  private def describesOperator(id: StateStoreId): Boolean = id.partitionId == 0

  /** Partition 0's default store (a join of state format 1 or 2: its first) describes what the state means. */
  private def describesMeaning(id: StateStoreId): Boolean = describesOperator(id) &&
    (id.storeName == StateStoreId.DEFAULT_STORE_NAME || id.storeName == SparkOperator.StreamStreamJoin.stores.head)

  private def recordDir(id: StateStoreId): Path = OperatorRecordFiles.dir(
    OperatorRecordFiles.root(id.checkpointRootLocation, id.operatorId), id.partitionId, id.storeName)
}
