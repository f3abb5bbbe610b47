package io.statesnap.tools

import java.util.UUID

import scala.util.control.NonFatal

import io.statesnap.{ProviderClasses, StatesnapErrors}
import io.statesnap.evolution.FixFormat
import io.statesnap.provider.{ColumnFamilyMigration, DeclaredSnapshots, MigrationGate, MigrationProbe, StateDecision,
  StateEncoding, StateWalk}
import io.statesnap.registration.MapMerge
import io.statesnap.snapshot.{StateKind, StateSnapshotRecord}
import org.apache.spark.TaskContext
import io.statesnap.SparkClasses.StreamExecution
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.types.{BinaryType, StructType}
import org.apache.spark.util.SerializableConfiguration

/**
 * One task of `python -m statesnap migrate`: one partition's store of a transformWithState operator, loaded with
 * Spark's own RocksDB provider at the query's latest committed version, the migrated state rewritten below the
 * store API by the code a statesnap store migrates with online ([[ColumnFamilyMigration]]), and the store committed
 * as the next version: the version of the batch the migration appends. Every other column family is committed as it
 * was, and so is the store of another stateful operator of the query.
 */
private[tools] object PartitionRewrite {
  /**
   * A store of the job: its operator and partition.
   * @param carried the store of another stateful operator (no column families: an aggregation, a dedup, group
   *   state), committed as loaded
   * @param loadId under checkpoint format v2, the id of the store version to load
   */
  final case class Task(operator: Long, partition: Int, carried: Boolean, loadId: Option[String])

  /**
   * A store the task committed: entries (list elements) rewritten, and under checkpoint format v2 the id of the
   * version it committed, which the appended batch's commit names.
   */
  final case class Committed(rewritten: Long, id: Option[String])

  /**
   * What every task shares: where the stores are, the version to load, the conf the query pins, and the column
   * families it rewrites.
   */
  final case class Job(stateRoot: String, loadVersion: Long, storeConf: StateStoreConf,
      hadoopConf: SerializableConfiguration, rewrites: Seq[Rewrite], probe: Option[MigrationProbe])

  /**
   * One migrated column family as recorded (`keySchema`, `keySpec`), the records its migration is decided from
   * (decided again in each task, as a store does), and its new key spec (a map's new user key) and value schema as
   * Spark's files will say them (a TTL's wrapper around the user's), and the merge of a map's entries that meet under
   * one new user key, if one is given.
   */
  final case class Rewrite(state: String, keySchema: StructType, keySpec: KeyStateEncoderSpec,
      newKeySpec: KeyStateEncoderSpec, recorded: Array[Byte], declared: Array[Byte], newValueSchema: StructType,
      merge: Option[MapMerge])

  // Spark's transformWithState gives its store's default column family a placeholder schema too: it never uses it.
  private val Placeholder = new StructType().add("key", BinaryType)

  /** Runs `task`. */
  def run(job: Job, task: Task): Committed = {
    val hadoopConf = job.hadoopConf.value
    hadoopConf.set(StreamExecution.RUN_ID_KEY, UUID.randomUUID().toString)
    val provider = StateStoreProvider.create(ProviderClasses.SparkRocksDB)
    val id = StateStoreId(job.stateRoot, task.operator, task.partition)
    // An Avro store's encoders ask for each column family's schema ids, as Spark's driver gives them to a query.
    val avro = if (task.carried || job.storeConf.stateStoreEncodingFormat != "avro") None
      else Some(new StatesnapAvroSchemas(StatesnapSparkSchemaFiles.avroSchemaProvider(id, job.loadVersion - 1,
        hadoopConf)))
    provider.init(id, Placeholder, Placeholder, NoPrefixKeyStateEncoderSpec(Placeholder),
      useColumnFamilies = !task.carried, job.storeConf, hadoopConf, useMultipleValuesPerKey = false, avro)
    try {
      val store = provider.getStore(job.loadVersion, task.loadId)
      try {
        val rewritten = if (task.carried) 0L else job.rewrites.map(migrate(job, _, task, provider, store, avro)).sum
        store.commit()
        Committed(rewritten, store.getStateStoreCheckpointInfo().stateStoreCkptId)
      } catch { case NonFatal(e) => store.abort(); throw e }
    } finally provider.close()
  }

  private def migrate(job: Job, rewrite: Rewrite, task: Task, provider: StateStoreProvider, store: StateStore,
      avro: Option[StatesnapAvroSchemas]): Long = {
    val recorded = StateSnapshotRecord.fromBytes(rewrite.recorded)
    val declared = StateSnapshotRecord.fromBytes(rewrite.declared)
    val describe = s"state '${rewrite.state}' (operator ${task.operator}, partition ${task.partition})"
    val step = StateWalk.decide(Some(recorded), Some(recorded), declared, StateEncoding.of(avro.isDefined), describe,
      FixFormat.CommandLine())
    val source = step.rewrite.getOrElse(throw
      StatesnapErrors.internal(s"$describe: the driver decided to migrate, this task ${step.decided}"))
    val list = declared.kind == StateKind.List
    store.createColFamilyIfAbsent(rewrite.state, rewrite.keySchema, source.layout, rewrite.keySpec,
      useMultipleValuesPerKey = list)
    val rewriter = StatesnapValueRewriter(provider, Some(rewrite.state), rewrite.newKeySpec, rewrite.newValueSchema,
      describe)
    val gate = new MigrationGate(MigrationGate.storeKey(job.stateRoot, task.operator, task.partition,
      StateStoreId.DEFAULT_STORE_NAME), Option(TaskContext.get()), job.probe)
    val merge = rewrite.merge.map(DeclaredSnapshots.mapMerge(rewrite.state, _, StateDecision.schemaOf(
      declared.valueSnapshot)))
    ColumnFamilyMigration.migrate(rewrite.state, describe, FixFormat.CommandLine(), rewriter, avro,
      rewrite.newValueSchema, Some(recorded), declared, step.decided, Seq(source), step.rekey, merge, gate)._1
  }
}
