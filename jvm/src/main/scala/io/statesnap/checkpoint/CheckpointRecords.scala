package io.statesnap.checkpoint

import scala.jdk.CollectionConverters._

import io.statesnap.ScalaCompat._
import io.statesnap.CheckpointFile
import io.statesnap.meaning.{OperatorMeaning, RecordedMeanings}
import io.statesnap.provider.{OperatorRecordFiles, SparkSchemaRecords}
import io.statesnap.snapshot.StateSnapshotRecord
import io.statesnap.checkpoint.CheckpointReader.{DefaultStore, Store}
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.execution.streaming.state.{SparkSingleStateSchemaFile, StateStoreId}
import org.apache.spark.sql.execution.streaming.state.offline.ColumnFamilyRecords

/**
 * statesnap's records of a checkpoint's states at its latest committed batch, read offline: wherever statesnap keeps
 * them, or made from Spark's own schema files where it keeps none yet. The one offline view of the records:
 * `inspect`, `check`, `adopt` and `release` read it; the stores' entries come from [[CheckpointReader]].
 */
object CheckpointRecords {
  /**
   * Where a state's record is kept: in its store's catalog family, beside the store, or where `migrate` keeps it
   * (statesnap's); or nowhere yet, made from Spark's own schema files (a checkpoint of Spark's provider).
   */
  sealed trait Kept
  case object InStore extends Kept
  case object BesideStore extends Kept
  case object Migrated extends Kept
  case object SparkFiles extends Kept

  /**
   * Every statesnap record in force at the latest committed batch, wherever statesnap keeps it: the catalog family
   * of a store with column families ([[CheckpointReader.recordsInStores]]), the files beside the stores of other
   * operators ([[OperatorRecordFiles]]), and the files `python -m statesnap migrate` keeps for transformWithState
   * states on Spark's own provider (per operator: partition 0 stands for all). The one offline view of the records:
   * `inspect`, `check` and `release` read it.
   */
  def records(checkpoint: String, hadoopConf: Configuration): Seq[(Store, Kept, Array[Byte])] = {
    val inStores = CheckpointReader.recordsInStores(checkpoint, hadoopConf).map { case (store, bytes) =>
      (store, InStore: Kept, bytes)
    }
    val stores = CheckpointReader.storesAtLatestCommit(checkpoint, hadoopConf)
    val beside = stores.flatMap { s =>
      val root = OperatorRecordFiles.root(s.stateRoot.toString, s.operator)
      OperatorRecordFiles.inForce(s.fs, OperatorRecordFiles.dir(root, s.partition, s.storeName),
        OperatorRecordFiles.legacy(root, s.partition, s.storeName), s.store.version).toSeq.map { file =>
        (s.store, BesideStore: Kept, OperatorRecordFiles.bytes(s.fs, file))
      }
    }
    val migrated = stores.filter(s => s.partition == 0 && s.storeName == DefaultStore).flatMap { s =>
      TransformWithStateRecords.migrated(s.stateRoot.toString, s.operator, s.batch, hadoopConf)
        .map(r => (s.store, Migrated: Kept, r.toBytes))
    }
    inStores ++ beside ++ migrated
  }

  /**
   * For py4j: [[records]], one row each, `[operator, partition, store, version, record bytes]`; partition -1 for a
   * record of the whole operator (one `migrate` kept for every partition).
   */
  def recordRows(checkpoint: String, hadoopConf: Configuration): java.util.List[Array[Any]] =
    records(checkpoint, hadoopConf).map { case (store, kept, bytes) =>
      Array[Any](store.operator, if (kept == Migrated) -1 else store.partition, store.storeName, store.version, bytes)
    }.asJava

  /**
   * What each operator's state means at the latest committed batch, as recorded with it ([[RecordedMeanings]]), and
   * the version it is in force from; operators with none recorded (an older statesnap's, joins) are not listed.
   */
  def meanings(checkpoint: String, hadoopConf: Configuration): Seq[(Int, Long, OperatorMeaning)] =
    CheckpointReader.storesAtLatestCommit(checkpoint, hadoopConf)
      .filter(s => s.partition == 0 && s.storeName == DefaultStore).flatMap { s =>
        RecordedMeanings.inForce(s.stateRoot.toString, s.operator, s.store.version, hadoopConf)
          .map { case (from, meaning) => (s.operator, from, meaning) }
      }.sortBy(_._1)

  /** For py4j: [[meanings]], one row each, `[operator, in force from version, in words, as JSON]`. */
  def meaningRows(checkpoint: String, hadoopConf: Configuration): java.util.List[Array[Any]] =
    meanings(checkpoint, hadoopConf).map { case (operator, from, meaning) =>
      Array[Any](operator, from, meaning.describe, meaning.toJson)
    }.asJava

  /** [[records]], each parsed as input: a record that does not parse fails naming where it is kept. */
  def parsedRecords(checkpoint: String, hadoopConf: Configuration): Seq[(Store, Kept, StateSnapshotRecord)] =
    records(checkpoint, hadoopConf).map { case (store, kept, bytes) =>
      (store, kept, CheckpointFile.read(s"of state store $store ($kept)", "statesnap's record") {
        StateSnapshotRecord.fromBytes(bytes)
      })
    }

  /**
   * The records statesnap starts from for states it holds no record of yet (a checkpoint adopted from Spark's
   * provider), made from Spark's own schema files at the latest committed batch: every user column family of a
   * transformWithState operator (map state by its user key; value or list as its operator metadata says), and the
   * single state of other operators that statesnap migrates (group state, an aggregation's buffers; dedup and joins,
   * which it only guards, have none). One per state and store: partition 0 stands for all.
   */
  def sparkRecords(checkpoint: String, hadoopConf: Configuration): Seq[(Store, StateSnapshotRecord)] =
    // Spark's schema files are per operator and store: partition 0 stands for all.
    CheckpointReader.storesAtLatestCommit(checkpoint, hadoopConf).filter(_.partition == 0).flatMap { s =>
      val id = StateStoreId(s.stateRoot.toString, s.operator, 0, s.storeName)
      val states = TransformWithStateRecords.sparkRecords(s.stateRoot.toString, s.operator, s.batch, hadoopConf)
      val records = if (states.nonEmpty) states
      else SparkSchemaRecords.namedSingleState(id, s.store.version, hadoopConf).toSeq
      records.map(s.store -> _)
    }

  /**
   * The records state `state` is read with at the latest committed batch: statesnap's own, wherever it keeps them
   * ([[records]]), else those made from Spark's files ([[sparkRecords]]). What `check` judges and scans.
   */
  def recordsOf(checkpoint: String, state: String,
      hadoopConf: Configuration): Seq[(Store, Kept, StateSnapshotRecord)] = {
    val own = parsedRecords(checkpoint, hadoopConf).filter(_._3.stateName == state)
    if (own.nonEmpty) own else sparkRecords(checkpoint, hadoopConf).collect {
      case (store, record) if record.stateName == state => (store, SparkFiles: Kept, record)
    }
  }

  /**
   * Where statesnap's records at the latest committed batch and Spark's own schema files disagree on a state's value
   * schema ([[SparkSchemaRecords.readsAs]]): one line each. Spark's provider reads the bytes with its files, so
   * before a checkpoint goes back to it they must say what statesnap recorded the bytes as.
   */
  def disagreements(checkpoint: String, hadoopConf: Configuration): Seq[String] = {
    val stateRoot = new Path(new Path(checkpoint), "state").toString
    // Spark's files are per operator and store: read once for all partitions.
    val sparkFamilies = memo { (store: Store) => ColumnFamilyRecords.sparkValueSchemas(
      StateStoreId(stateRoot, store.operator, 0, store.storeName), store.version - 1, hadoopConf) }
    val sparkSingle = memo { (store: Store) =>
      SparkSingleStateSchemaFile.read(StateStoreId(stateRoot, store.operator, 0, store.storeName), hadoopConf)
        .map(_._2)
    }
    // `migrate`'s records belong to checkpoints on Spark's provider already, whose files it keeps true itself.
    parsedRecords(checkpoint, hadoopConf).filter(_._2 != Migrated).map { case (store, kept, record) =>
      (store, record, if (kept == BesideStore) sparkSingle(store.copy(partition = 0))
        else sparkFamilies(store.copy(partition = 0)).get(record.stateName))
    }.flatMap { case (store, record, spark) =>
      Option.when(!spark.exists(SparkSchemaRecords.readsAs(record, _)))(s"state '${record.stateName}' of operator " +
        s"${store.operator}: statesnap recorded ${record.valueSnapshot.restoreSerializer().schema.catalogString}, " +
        s"Spark's schema file says ${spark.fold("nothing")(_.catalogString)}")
    }.distinct
  }

  /**
   * Refuses a checkpoint whose states Spark's provider would read otherwise than statesnap recorded them
   * ([[disagreements]]): what `release` checks before the checkpoint goes back to any of Spark's providers.
   */
  def refuseDisagreements(checkpoint: StoppedCheckpoint): Unit = {
    val disagree = disagreements(checkpoint.location, checkpoint.hadoopConf)
    if (disagree.nonEmpty) checkpoint.refuse(CheckpointRefusals.schemaFilesDisagree(disagree))
  }

  private def memo[K, V](f: K => V): K => V = {
    val cache = scala.collection.mutable.Map.empty[K, V]
    key => cache.getOrElseUpdate(key, f(key))
  }
}
