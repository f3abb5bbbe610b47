package io.statesnap.tools

import scala.util.Try

import io.statesnap.provider.MigrationProbe
import org.apache.spark.{Partitioner, TaskContext}
import org.apache.spark.rdd.ShuffledRDD
import org.apache.spark.serializer.KryoSerializer
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.execution.streaming.state.{StateStoreConf, StateStoreId}
import org.apache.spark.sql.execution.streaming.state.offline.{StatesnapDefaultProviderStore, StatesnapOfflineStore}
import org.apache.spark.util.SerializableConfiguration

/**
 * The Spark job of `repartition`: every store of the query's committed version N+1 read by one task (Spark's own
 * load, streamed), each entry whose key Spark's partitioning now places elsewhere sent through a shuffle to the
 * store of its new partition (and its removal to the store it leaves), and every store of the new layout written
 * by one task, committed as version N+2 by Spark's RocksDB provider. An entry that stays is not touched; one that
 * moves keeps its bytes. Nothing is held in memory but what Spark's shuffle holds (it spills). Where the state leaves
 * or enters Spark's default provider's files, every store is written anew from every entry, read or written by that
 * provider ([[StatesnapDefaultProviderStore]]), which holds a store in memory as it does when the query runs.
 */
private[tools] object RepartitionJob {
  /**
   * A store the job writes: the new layout's partition `partition` of an operator's store `store`, and under
   * checkpoint format v2 the id of the version it loads (none where it starts empty).
   */
  final case class Target(operator: Int, partition: Int, store: RepartitionPlan.Store, startsEmpty: Boolean,
      loadId: Option[String])

  /**
   * What one target's task did: entries put (moved in) and removed (moved out), and under checkpoint format v2 the
   * id of the version it committed.
   */
  final case class Written(target: Target, in: Long, out: Long, id: Option[String])

  /**
   * The job's settings, shipped to every task; `probe`: the tests' view of the job ([[MigrationProbe]]);
   * `readsDefault`, `writesDefault`: the state leaves, or enters, Spark's default provider's files.
   */
  final case class Settings(stateRoot: String, version: Long, storeConf: StateStoreConf,
      hadoopConf: SerializableConfiguration, probe: Option[MigrationProbe], readsDefault: Boolean,
      writesDefault: Boolean) {
    /** Every store of the new layout is written anew, from every entry: the files' format changes. */
    def rebuilt: Boolean = readsDefault || writesDefault
  }

  /** A target store by its index, the shuffle's partition: an entry goes to the task that writes its store. */
  private final class ToTarget(targets: Int) extends Partitioner {
    override def numPartitions: Int = targets
    override def getPartition(key: Any): Int = key.asInstanceOf[Int]
  }

  /**
   * Runs the job for `plan`, reporting each target as its task ends. Every task has ended, committed or not, when
   * this returns or throws, so that a rollback after it cannot race a commit: a target's failure is returned by its
   * task, not thrown there.
   * @return what each target's task did
   */
  def run(spark: SparkSession, plan: RepartitionPlan, settings: Settings,
      reported: Either[Throwable, Written] => Unit): Unit = {
    val targets = plan.operators.flatMap { o =>
      o.stores.flatMap(s => o.targets(plan.to).map { p =>
        val empty = plan.rebuilt || p >= plan.from
        Target(o.id, p, s, empty, if (empty) None else plan.loadId(o.id, p, s.name))
      })
    }
    val index = targets.zipWithIndex.map { case (t, i) => (t.operator, t.store.name, t.partition) -> i }.toMap
    val sources = plan.operators.flatMap(o => o.stores.flatMap(s => o.sources(plan.from).map(p =>
      (o, s, p, plan.loadId(o.id, p, s.name)))))
    val to = plan.to
    val sc = spark.sparkContext
    val moved = sc.parallelize(sources, math.max(1, sources.size)).mapPartitions(_.flatMap {
      case (o, store, p, loadId) =>
        val placement = store.placement(to)
        val stays = o.targets(to).contains(p)
        read(settings, o.id, p, store, loadId).flatMap { case (key, value) =>
          val placed = if (o.keyless) 0 else try placement.partition(key) catch {
            case e: IllegalArgumentException => throw new IllegalStateException(s"operator ${o.id} partition $p " +
              s"store '${store.name}': ${e.getMessage}", e)
          }
          // A store written anew gets every entry; one that stays loses those that move.
          if (placed == p && !settings.rebuilt) Iterator.empty
          else Iterator(index((o.id, store.name, placed)) -> (key -> value)) ++
            (if (stays && !settings.rebuilt) Iterator(index((o.id, store.name, p)) -> (key -> (null: Array[Byte])))
             else Iterator.empty)
        }
    })
    // Kryo, whatever the session's serializer: a moved entry is two byte arrays, which Java serialization would wrap
    // in an object stream each.
    val moves = new ShuffledRDD[Int, (Array[Byte], Array[Byte]), (Array[Byte], Array[Byte])](moved,
      new ToTarget(targets.size)).setSerializer(new KryoSerializer(sc.getConf))
    sc.setJobDescription("statesnap repartition")
    sc.runJob(moves, (it: Iterator[(Int, (Array[Byte], Array[Byte]))]) => {
      val target = targets(TaskContext.getPartitionId())
      Try(write(settings, target, it.map(_._2))).toEither
    }, (_: Int, result: Either[Throwable, Written]) => reported(result))
  }

  /** The entries of one store at the version read, the store released when the task ends. */
  private def read(settings: Settings, operator: Int, partition: Int, store: RepartitionPlan.Store,
      loadId: Option[String]): Iterator[(Array[Byte], Array[Byte])] = {
    val opened = if (!settings.readsDefault) open(settings, operator, partition, store, empty = false, loadId)
      else StatesnapDefaultProviderStore.read(StateStoreId(settings.stateRoot, operator, partition, store.name),
        store.keySchema, store.valueSchema, store.prefixFields, settings.storeConf, settings.hadoopConf.value,
        settings.version)
    TaskContext.get().addTaskCompletionListener[Unit](_ => opened.close())
    opened.entries
  }

  /**
   * Writes one target: removals (a null value) and moved entries, then commits (into Spark's default provider's
   * files a snapshot written anew).
   */
  private def write(settings: Settings, target: Target, changes: Iterator[(Array[Byte], Array[Byte])]): Written = {
    val opened = if (!settings.writesDefault) open(settings, target.operator, target.partition, target.store,
      target.startsEmpty, target.loadId)
      else StatesnapDefaultProviderStore.write(StateStoreId(settings.stateRoot, target.operator, target.partition,
        target.store.name), target.store.keySchema, target.store.valueSchema, target.store.prefixFields,
        settings.storeConf, settings.hadoopConf.value, settings.version + 1)
    try {
      var in, out = 0L
      changes.foreach { case (key, value) =>
        if (value == null) { opened.remove(key); out += 1 } else { opened.put(key, value); in += 1 }
      }
      val committed = opened.commit()
      if (committed != settings.version + 1) throw new IllegalStateException(s"state/${target.operator}/" +
        s"${target.partition} committed version $committed, not ${settings.version + 1}")
      settings.probe.foreach(_.offlineStep("store"))
      Written(target, in, out, opened.checkpointId)
    } finally opened.close()
  }

  private def open(settings: Settings, operator: Int, partition: Int, store: RepartitionPlan.Store,
      empty: Boolean, loadId: Option[String]): StatesnapOfflineStore =
    StatesnapOfflineStore.open(StateStoreId(settings.stateRoot, operator, partition, store.name), store.keySchema,
      store.valueSchema, store.prefixFields, settings.storeConf, settings.hadoopConf.value, settings.version, empty,
      loadId)
}
