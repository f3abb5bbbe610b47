package io.statesnap.tools

import scala.util.Try

import io.statesnap.evolution.UnsafeRowLayout
import io.statesnap.keys.KeyChange
import io.statesnap.placement.{KeyPlacement, MisplacedKey, PartitionKey, StoredKeyPlacement}
import io.statesnap.provider.MigrationProbe
import org.apache.spark.{Partitioner, TaskContext}
import org.apache.spark.rdd.ShuffledRDD
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.execution.streaming.state.{StateStoreConf, StateStoreId}
import org.apache.spark.sql.execution.streaming.state.offline.{StatesnapDefaultProviderStore, StatesnapOfflineStore,
  StatesnapStoreFiles}
import org.apache.spark.sql.execution.streaming.state.offline.StatesnapOfflineStore.Entry
import org.apache.spark.util.SerializableConfiguration

/**
 * The Spark job of `repartition`: every store of the query's committed version N+1 read by one task (Spark's own
 * load, streamed), each entry sent through a shuffle to the store of the partition where Spark's partitioning now
 * places its key, and every store of the new layout written anew by one task from the entries it receives, committed
 * as version N+2 by the provider the state is moved into. Every entry keeps its bytes. Nothing is held in memory but
 * what Spark's shuffle holds (it spills), and what Spark's default provider holds where the state leaves or enters
 * its files ([[StatesnapDefaultProviderStore]]), as it does when the query runs. Every key is read from the one
 * partition where Spark's partitioning of the old count wrote it, or refused
 * ([[io.statesnap.placement.StoredKeyPlacement]]), so that no
 * store receives a key twice.
 *
 * An operator whose key the deploy changes ([[KeyChange]]) has each entry given its new key as it is read, placed by
 * it, and the entries meeting under one new key are merged into one in the store being written, each read back there
 * and merged with the next ([[writeMerging]]): the store is where they meet, so nothing is gathered in memory (a
 * shuffle sorted by key would hold each target's entries in Spark's execution memory until it spills, measured to
 * grow with the state: `make bench`'s change-key).
 *
 * Every store is written anew, even one whose partition stays, because that is the cheaper way for any change of
 * count: a key keeps its partition with odds of about one in the larger count, so a store changed in place would
 * take most of its entries out one by one (each removal a read and a delete, and its key sent through the shuffle)
 * beside the puts of those coming in (`make bench`'s repartition).
 */
private[tools] object RepartitionJob {
  /**
   * A store the job writes: the new layout's partition `partition` of the store `store` of the operator written at
   * id `operator`, apart where it is `staged` ([[RepartitionPlan.Operator.staged]]), and the change of the operator's
   * key, if any, whose merge it applies to entries meeting under one key.
   */
  final case class Target(operator: Int, partition: Int, store: RepartitionPlan.Store, keyChange: Option[KeyChange],
      staged: Boolean)

  /** What one target's task did: the entries it wrote, and under checkpoint format v2 the id of the version. */
  final case class Written(entries: Long, id: Option[String])

  /**
   * The job's settings, shipped to every task; `probe`: the tests' view of the job ([[MigrationProbe]]);
   * `readsDefault`, `writesDefault`: the state leaves, or enters, Spark's default provider's files; `sources`: the
   * partitions each store is read from, each read in RocksDB's key order unless `readsDefault`; `stagedStateRoot`:
   * where a staged target is written.
   */
  final case class Settings(stateRoot: String, version: Long, storeConf: StateStoreConf,
      hadoopConf: SerializableConfiguration, probe: Option[MigrationProbe], readsDefault: Boolean,
      writesDefault: Boolean, sources: Int, stagedStateRoot: String)

  /** An entry in the shuffle: (its target's index, its family's index in its store, its key), its value. */
  private type Moved = (EntrySerializer.Key, Array[Byte])

  /** A target store by its index, the shuffle's partition: an entry goes to the task that writes its store. */
  private final class ToTarget(targets: Int) extends Partitioner {
    override def numPartitions: Int = targets
    override def getPartition(key: Any): Int = key.asInstanceOf[EntrySerializer.Key]._1
  }

  /**
   * Runs the job for `plan`, reporting each target as its task ends. Every task has ended, committed or not, when
   * this returns or throws, so that a rollback after it cannot race a commit: a target's failure is returned by its
   * task, not thrown there.
   */
  def run(spark: SparkSession, plan: RepartitionPlan, settings: Settings,
      reported: (Target, Either[Throwable, Written]) => Unit): Unit = {
    val targets = plan.operators.flatMap(o => o.stores.flatMap { s =>
      val written = o.keyChange.fold(s)(RepartitionPlan.rekeyed(s, _))
      o.targets(plan.to).map(Target(o.writtenAt, _, written, o.keyChange, o.staged))
    })
    val index = targets.zipWithIndex.map { case (t, i) => (t.operator, t.store.name, t.partition) -> i }.toMap
    val sources = plan.operators.flatMap(o => o.stores.flatMap(s => o.sources(plan.from).map(p =>
      (o, s, p, plan.loadId(o.id, p, s.name)))))
    val (from, to) = (plan.from, plan.to)
    val sc = spark.sparkContext
    val moved = sc.parallelize(sources, math.max(1, sources.size)).mapPartitions(_.flatMap {
      case (o, store, p, loadId) =>
        val placed: Entry => Iterator[(Int, Entry)] = o.keyChange match {
          case None =>
            val partitionsOf = targetsOf(o, store, p, from, to)
            entry => partitionsOf(entry).map(_ -> entry)
          case Some(change) => rekeyed(o, store, p, from, to, change, settings.version + 1)
        }
        // The index of the target of each partition of `to`, looked up once per store, not once per entry.
        val target = (0 until to).map(partition => index.getOrElse((o.writtenAt, store.name, partition), -1)).toArray
        read(settings, o.id, p, store, loadId).flatMap { entry =>
          placed(entry).map { case (partition, e) => (target(partition), e.family, e.key) -> e.value }
        }
    })
    val moves = new ShuffledRDD[EntrySerializer.Key, Array[Byte], Array[Byte]](moved, new ToTarget(targets.size))
      .setSerializer(new EntrySerializer)
    sc.setJobDescription("statesnap repartition")
    sc.runJob(moves, (it: Iterator[Moved]) => {
      val target = targets(TaskContext.getPartitionId())
      Try(write(settings, target, it.map { case ((_, family, key), value) => Entry(family, key, value) })).toEither
    }, (index: Int, result: Either[Throwable, Written]) => reported(targets(index), result))
  }

  /**
   * The partitions of `to` an entry of `store` read from partition `p` of `from` goes to: one, by its family's
   * placement (an operator without a key keeps partition 0); a family kept with the store, the partition itself if
   * it stays, and from partition 0 every partition added too.
   */
  private def targetsOf(o: RepartitionPlan.Operator, store: RepartitionPlan.Store, p: Int, from: Int,
      to: Int): Entry => Iterator[Int] = {
    val placements = store.families.map(f => f.placement match {
      case RepartitionPlan.ByKey(key) => Some(new StoredKeyPlacement(key, from, to))
      case RepartitionPlan.WithTheStore => None
    }).toArray
    val withTheStore = (if (p < to) Seq(p) else Nil) ++ (if (p == 0) from until to else Nil)
    entry => if (o.keyless) Iterator.single(0) else placements(entry.family).fold(withTheStore.iterator) { placement =>
      try Iterator.single(placement.partition(entry.key, p)) catch {
        case e: MisplacedKey => throw ToolErrors.misplacedEntry(s"operator ${o.id} partition $p store " +
          s"'${store.name}'${if (store.columnFamilies) s" column family " +
          s"'${store.families(entry.family).layout.name}'" else ""}", e.getMessage, e)
      }
    }
  }

  /**
   * An entry of `store` read from partition `p` given its new key: its old key checked as [[targetsOf]] checks it (its
   * layout, the partition it was written to), its value checked against its layout before a rule reads it, then
   * placed by Spark's partitioning of the new key (the operator's whole key, as for an aggregation) among `to`.
   */
  private def rekeyed(o: RepartitionPlan.Operator, store: RepartitionPlan.Store, p: Int, from: Int, to: Int,
      change: KeyChange, version: Long): Entry => Iterator[(Int, Entry)] = {
    val checked = targetsOf(o, store, p, from, from)
    if (store.columnFamilies) return regrouped(store, to, change, version, checked)
    val old = StatesnapStoreFiles.rocksDBCodec(change.oldKey, change.value, 0)
    val now = StatesnapStoreFiles.rocksDBCodec(change.newKey, change.newValue, 0)
    val values = new UnsafeRowLayout(change.value)
    val rekey = change.newRekey()
    val convert = change.newConverter()
    val placement = new KeyPlacement(change.newKey, PartitionKey.WholeKey, to)
    entry => {
      checked(entry)
      val value = old.decodeValue(entry.value)
      values.problem(value.getBaseObject, value.getBaseOffset, value.getSizeInBytes).foreach(why =>
        throw ToolErrors.valueNotOfLayout(s"operator ${o.id} partition $p store '${store.name}'",
          change.value.simpleString, why))
      val key = rekey(old.decodeKey(entry.key), value)
      val written = convert.fold(entry.value)(c => now.encodeValue(c(value)))
      Iterator.single(placement.partition(key) -> Entry(entry.family, now.encodeKey(key), written))
    }
  }

  /**
   * An entry of a transformWithState store read from partition `p` (checked by `checked`), under a change of the
   * operator's grouping key: a family placed by the grouping key has it replaced in its key (the rest of the key and
   * the value kept as they are: values never change with it) and goes to the partition Spark's partitioning of the
   * new grouping key reads; statesnap's record of a state says its family's new key; the entries stay in their store
   * otherwise.
   */
  private def regrouped(store: RepartitionPlan.Store, to: Int, change: KeyChange, version: Long,
      checked: Entry => Iterator[Int]): Entry => Iterator[(Int, Entry)] = {
    val rekeys = RepartitionPlan.groupingRekeys(store, change)
    val placement = new KeyPlacement(change.newKey, PartitionKey.WholeKey, to)
    val families = store.families.zip(rekeys).map {
      case (f, Some(rekey)) =>
        val l = f.layout
        val old = StatesnapStoreFiles.rocksDBCodec(l.keySchema, l.valueSchema, l.prefixFields, l.rangeOrdinals)
        val now = StatesnapStoreFiles.rocksDBCodec(rekey.newKeySchema, l.valueSchema, l.prefixFields, l.rangeOrdinals)
        val newKey = rekey.newRekey()
        Some((entry: Entry) => {
          val (key, grouping) = newKey(old.decodeKey(entry.key))
          placement.partition(grouping) -> entry.copy(key = now.encodeKey(key))
        })
      case (_, None) => None
    }.toArray
    val records = new TransformWithStateRecordKeys(store, rekeys, version)
    entry => {
      val partitions = checked(entry)
      families(entry.family).fold(partitions.map(_ -> records.rewritten(entry)))(f => Iterator.single(f(entry)))
    }
  }

  /** The entries of one store at the version read, the store released when the task ends. */
  private def read(settings: Settings, operator: Int, partition: Int, store: RepartitionPlan.Store,
      loadId: Option[String]): Iterator[Entry] = {
    val id = StateStoreId(settings.stateRoot, operator, partition, store.name)
    val opened = if (settings.readsDefault) StatesnapDefaultProviderStore.read(id, store.layouts.head,
        settings.storeConf, settings.hadoopConf.value, settings.version)
      else StatesnapOfflineStore.read(id, store.layouts, store.columnFamilies, settings.storeConf,
        settings.hadoopConf.value, settings.version, loadId)
    TaskContext.get().addTaskCompletionListener[Unit](_ => opened.close())
    opened.entries
  }

  /**
   * Writes one target anew from the entries it receives, and commits it; a key change's target with its entries that
   * meet under one key merged ([[writeMerging]]).
   */
  private def write(settings: Settings, target: Target, entries: Iterator[Entry]): Written = {
    val id = StateStoreId(if (target.staged) settings.stagedStateRoot else settings.stateRoot, target.operator,
      target.partition, target.store.name)
    val store = target.store
    val opened = if (settings.writesDefault) StatesnapDefaultProviderStore.write(id, store.layouts.head,
        settings.storeConf, settings.hadoopConf.value, settings.version + 1)
      else StatesnapOfflineStore.writeAnew(id, store.layouts, store.columnFamilies, settings.storeConf,
        settings.hadoopConf.value, settings.version + 1,
        if (settings.readsDefault || target.keyChange.nonEmpty) 0 else settings.sources)
    try {
      val written = target.keyChange.fold {
        var written = 0L
        entries.foreach { entry => opened.put(entry); written += 1 }
        written
      }(writeMerging(opened, target, entries, _))
      opened.commit()
      settings.probe.foreach(_.offlineStep("store"))
      Written(written, opened.checkpointId)
    } finally opened.close()
  }

  /**
   * Puts each entry of a key change's target, merged with the value put for its key before, if any, by the change's
   * merge (the operator's own aggregate functions, a dedup's): read back from the store, where the entries meeting
   * under one key meet. @return the keys written
   */
  private def writeMerging(opened: StatesnapOfflineStore.Writer, target: Target, entries: Iterator[Entry],
      change: KeyChange): Long = {
    lazy val codec = StatesnapStoreFiles.rocksDBCodec(change.newKey, change.newValue, 0)
    val merge = change.merge.newMerger()
    var written = 0L
    entries.foreach { entry =>
      opened.get(entry) match {
        case None =>
          opened.put(entry)
          written += 1
        case Some(_) if target.store.columnFamilies => throw ToolErrors.familyEntriesMeet(s"operator " +
          s"${target.operator} partition ${target.partition}", target.store.families(entry.family).layout.name)
        case Some(before) =>
          val kept = codec.decodeValue(before).copy()
          opened.put(entry.copy(value = codec.encodeValue(merge(kept, codec.decodeValue(entry.value)))))
      }
    }
    written
  }
}
