package io.statesnap.provider

import java.util.concurrent.ConcurrentHashMap

import io.statesnap.StatesnapException
import io.statesnap.snapshot.StateSnapshotRecord
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.types.StructType
import org.slf4j.LoggerFactory

/**
 * What the stores of one Spark 4.x provider work with beside [[StoreContext]], built once at `init`: whether its
 * column families are transformWithState's, their encoding, and the files and the RocksDB instance they read and
 * rewrite through. What changes is what the provider learned from its stores' commits ([[ResolvedStates]]).
 * @param keySpec the key encoder spec `init` gave: the single state's, for a store without column families
 * @param spark Spark's RocksDB provider, whose current store a migration rewrites
 * @param keepsSparkFiles whether this provider's first commit must keep Spark's own schema files true: partition 0
 *                        of a streaming transformWithState operator (Spark's driver writes them in a run's first batch
 *                        only)
 */
private[provider] final class ColumnFamilyContext(val store: StoreContext, val transformWithState: Boolean,
    val avroSchemas: Option[StatesnapAvroSchemas], val keySpec: KeyStateEncoderSpec, spark: StateStoreProvider,
    keepsSparkFiles: Boolean) {
  private val log = LoggerFactory.getLogger(getClass)
  val resolved = new ResolvedStates

  def encoding: StateEncoding = StateEncoding.of(avroSchemas.isDefined)

  /**
   * Overwrites one state's values (its column family, or the whole store: the single state of a store without
   * them) in the RocksDB instance of the provider's current store.
   */
  def valueRewriter(state: String, keySpec: KeyStateEncoderSpec, newValueSchema: StructType,
      columnFamily: Boolean = true): StatesnapValueRewriter =
    StatesnapValueRewriter(spark, Some(state).filter(_ => columnFamily), keySpec, newValueSchema,
      store.describeState(state))

  /**
   * The layout `adopt --written-as` found some entries of transformWithState variable `state` written in, beside
   * the one Spark's files record, if it is in force at `version` ([[WrittenAsRecordFiles]]).
   */
  def writtenAs(state: String, version: Long): Option[StateSnapshotRecord] = {
    val root = store.id.checkpointRootLocation
    val fs = new Path(root).getFileSystem(store.hadoopConf)
    try WrittenAsRecordFiles.recordInForce(fs, root, store.id.operatorId, state, version) catch {
      case e: StatesnapException => throw StoreErrors.unreadableWrittenAs(store.describeState(state), e)
    }
  }

  /** The key and value schemas Spark's own files record for column family `state` in batch `batchId`. */
  def sparkSchemas(state: String, batchId: Long): Option[(StructType, StructType)] =
    StatesnapSparkSchemaFiles.transformWithStateFamilies(store.id, batchId, store.hadoopConf).get(state)
      .map(s => (s.keySchema, s.valueSchema))

  /**
   * Before a transformWithState store's commit (one partition does it for the operator): Spark's own schema files
   * and operator metadata for this batch must say the schemas the bytes have now, since Spark, with its check off,
   * keeps the ones it recorded before (see [[StatesnapSparkSchemaFiles.updateTransformWithState]]).
   */
  def beforeCommit(loadedVersion: Long, families: Seq[StatesnapSparkSchemaFiles.Family]): Unit =
    if (keepsSparkFiles && !resolved.anyCommitted) {
      StatesnapSparkSchemaFiles.updateTransformWithState(store.id, loadedVersion, families, store.hadoopConf)
        .foreach(file => log.info(s"statesnap: Spark's schema file $file now says the schemas of " +
          store.describeStore))
    }
}

/**
 * The states a provider's stores resolved in versions that committed (this query run): such a state is not resolved
 * again while its schemas stay the same. Shared by the provider's stores, one after another.
 */
private[provider] final class ResolvedStates {
  private val known = new ConcurrentHashMap[String, (StructType, StructType, Long)]
  @volatile private var committedOnce = false

  def isKnown(state: String, keySchema: StructType, valueSchema: StructType, version: Long): Boolean =
    Option(known.get(state)).exists { case (k, v, since) => k == keySchema && v == valueSchema && version >= since }

  def remember(resolved: Map[String, (StructType, StructType)], committedVersion: Long): Unit = {
    resolved.foreach { case (state, (k, v)) => known.put(state, (k, v, committedVersion)) }
    committedOnce = true
  }

  def forget(state: String): Unit = known.remove(state)

  /** Whether a store of the provider has committed. */
  def anyCommitted: Boolean = committedOnce
}
