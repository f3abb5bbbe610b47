package io.statesnap.tools

import io.statesnap.checkpoint.StoppedCheckpoint
import io.statesnap.{CommitStateIds, ProviderClasses}
import io.statesnap.ScalaCompat._
import io.statesnap.keys.{GroupingKeyRekey, KeyChange}
import io.statesnap.meaning.OperatorMeaning
import io.statesnap.placement.{PartitionKey, StoredKey, TransformWithStateKeys}
import io.statesnap.provider.OperatorRecordFiles
import io.statesnap.registration.{QueryStates, SparkOperator}
import io.statesnap.snapshot.RecordFamily
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.execution.streaming.state.{SparkSingleStateSchemaFile, StateStoreId}
import org.apache.spark.sql.execution.streaming.state.offline.{StatesnapOfflineStore, StatesnapStoreFiles}
import org.apache.spark.sql.types.{NullType, StructType, TimestampType}

/**
 * What `repartition` moves, read from a stopped checkpoint at its latest committed batch, or a refusal naming why it
 * cannot: every stateful operator with its stores, each store's key layout (Spark's schema file) and how Spark's
 * partitioning of that operator places its keys ([[PartitionKey]]).
 *
 * @param batch the latest committed batch N, whose state versions (N+1) the job reads
 * @param from the partitions the query pins now; @param to the partitions it will
 * @param provider the provider whose files hold the state; @param target the one whose files will: both Spark's
 *   RocksDB provider or statesnap's (the query keeps its provider), or one of them Spark's default provider (the
 *   state changes provider, [[rebuilt]])
 * @param notes what the verb says it leaves as it is of what it was asked (a key value for a field the key has)
 */
final case class RepartitionPlan(batch: Long, from: Int, to: Int, operators: Seq[RepartitionPlan.Operator],
    provider: String, target: String, loadIds: Option[CommitStateIds.Ids], notes: Seq[String] = Nil,
    dropped: Seq[RepartitionPlan.Operator] = Nil) {
  def readsDefault: Boolean = provider == ProviderClasses.SparkDefault
  def writesDefault: Boolean = target == ProviderClasses.SparkDefault
  /** The state leaves or enters Spark's default provider's files: moved even where its partitions stay as many. */
  def rebuilt: Boolean = readsDefault || writesDefault
  /** An operator's key changes ([[Operator.keyChange]]): its entries are moved even where the count stays. */
  def rekeyed: Boolean = operators.exists(_.keyChange.nonEmpty)
  /**
   * The new version adds, moves or drops an operator ([[Operator.added]], [[Operator.movedTo]], [[dropped]]: the
   * checkpoint's operators whose state it drops): every store is written, where the count stays too.
   */
  def reshaped: Boolean = operators.exists(o => o.added.nonEmpty || o.movedTo.nonEmpty) || dropped.nonEmpty
  /** How many operators the checkpoint keeps state for: those read (kept, maybe moved) and those dropped. */
  def recordedOperators: Int = operators.count(_.added.isEmpty) + dropped.size

  /** Under checkpoint format v2, the id by which `commits/N` names the version of a store the job loads. */
  def loadId(operator: Int, partition: Int, store: String): Option[String] =
    loadIds.map(_(operator)(partition)(RepartitionPlan.storeIndex(store)))

  /** Under checkpoint format v2, what `commits/N+1` names: by operator, the new partitions' ids in store order. */
  def committedIds(committed: Map[(Int, Int, String), String]): Option[CommitStateIds.Ids] =
    loadIds.map(_ => operators.map(o => o.writtenAt -> o.targets(to).map(p =>
      o.stores.sortBy(s => RepartitionPlan.storeIndex(s.name)).map(s => committed((o.writtenAt, p, s.name))))).toMap)

  /** What the job does, one line per operator, worded after "would " or "done: ". */
  def says: Seq[String] = operators.map { o =>
    val stores = o.stores.map(_.name).mkString(", ")
    if (o.movedTo.nonEmpty) s"move the state of operator ${o.id} (${o.describe}) to operator ${o.writtenAt}, which " +
      s"computes it in the new version: its stores written there anew as state version ${batch + 2}, every entry " +
      o.keyChange.fold("in its partition")(c => s"under its new key (${c.says.mkString("; ")}), in the partition " +
        "where Spark looks for it") + ", with its records, schema file and operator metadata"
    else if (o.added.nonEmpty) s"start operator ${o.id} (${o.describe}), which the new version adds, with empty " +
      "stores " +
      s"in ${if (o.keyless) "partition 0" else s"partitions 0-${to - 1}"} as state version ${batch + 2}, and write " +
      "its operator metadata and schema file"
    else if (o.keyChange.nonEmpty) s"give every entry of operator ${o.id} (${o.describe}) its new key " +
      s"(${o.keyChange.get.says.mkString("; ")}), in the partition of $to where Spark's partitioning of the operator " +
      s"looks for it, written anew as state version ${batch + 2}"
    else if (rebuilt) s"write every entry of operator ${o.id} (${o.describe}; ${if (o.stores.size == 1) "store" else
      "stores"} $stores), read ${if (readsDefault) "by Spark's default provider" else "from its RocksDB stores"}, " +
      s"into ${if (writesDefault) "a snapshot of Spark's default provider" else "a RocksDB store"} of the partition " +
      s"of $to where Spark's partitioning of the operator looks for it, committed as state version ${batch + 2}"
    else if (o.keyless) s"write the stores of operator ${o.id} (${o.describe}: no key, its state in partition 0, " +
      s"where it stays) anew as state version ${batch + 2}"
    else if (from == to) s"write the stores of operator ${o.id} (${o.describe}) anew as state version ${batch + 2}, " +
      "every entry in its partition"
    else s"move every entry of operator ${o.id} (${o.describe}; ${if (o.stores.size == 1) "store" else "stores"} " +
      s"$stores) from the partition of $from where it is to the one of $to where Spark's partitioning of the " +
      s"operator looks for it, writing partitions 0-${to - 1} anew as state version ${batch + 2}" +
      (if (to < from) s"; partitions $to-${from - 1} are retired" else "")
  } ++ dropped.map(o => s"drop the state of operator ${o.id} (${o.describe}), which no operator of the new version " +
    "computes: " + (if (operators.exists(_.writtenAt == o.id)) s"another operator's is written at ${o.id}, its " +
      "versions before kept as history" else s"state/${o.id} is retired into _statesnap/retired/batch-${batch + 1}"))
}

object RepartitionPlan {
  private val StrictDistributionConf = "spark.sql.streaming.statefulOperator.useStrictDistribution"
  private val InternalPartitionsConf = "spark.sql.streaming.internal.stateStore.partitions"
  private val JoinStores = SparkOperator.StreamStreamJoin.stores

  /** Where a store's id sits among its partition's in a commit of checkpoint format v2: a join's in Spark's order. */
  private def storeIndex(store: String): Int = math.max(0, JoinStores.indexOf(store))

  /**
   * One store every partition of an operator keeps: its name, and its families of entries, each with its layout as
   * Spark's schema file records it and how an entry of it is placed; a store without column families keeps one,
   * the default family (`columnFamilies` false).
   */
  final case class Store(name: String, families: Seq[Family], columnFamilies: Boolean) {
    def layouts: Seq[StatesnapOfflineStore.Family] = families.map(_.layout)
  }

  /** A family of entries of a store, and where its entries go. */
  final case class Family(layout: StatesnapOfflineStore.Family, placement: Placement)

  /**
   * `store` as a key change writes it: its entries' key in the new layout; of a transformWithState store, each
   * family's key with the grouping key in it replaced ([[groupingRekeys]]).
   */
  def rekeyed(store: Store, change: KeyChange): Store =
    if (store.columnFamilies) store.copy(families = store.families.zip(groupingRekeys(store, change)).map {
      case (f, rekey) => rekey.fold(f)(r => f.copy(layout = f.layout.copy(keySchema = r.newKeySchema)))
    })
    else store.copy(families = store.families.map(f => f.copy(layout = f.layout.copy(keySchema = change.newKey,
      valueSchema = change.newValue))))

  /**
   * Of a transformWithState store, by family in order, how a change of the grouping key (`change`) rekeys it: each
   * family placed by the grouping key holds it somewhere in its key ([[TransformWithStateKeys.groupingPath]]); None
   * for a family kept with the store (statesnap's records).
   */
  def groupingRekeys(store: Store, change: KeyChange): Seq[Option[GroupingKeyRekey]] = store.families.map { f =>
    f.placement match {
      case ByKey(stored) => Some(GroupingKeyRekey(f.layout.keySchema, TransformWithStateKeys.groupingPath(
        TransformWithStateKeys.Layout(f.layout.name, f.layout.keySchema, f.layout.prefixFields,
          f.layout.rangeOrdinals), stored), change))
      case WithTheStore => None
    }
  }

  /** How [[Operator.describe]] names a transformWithState operator. */
  val TransformWithStateOperator = "transformWithState"

  /** Where the entries of a family go among the new layout's partitions. */
  sealed trait Placement

  /** Each entry by its key, stored as `key` says, into the partition Spark's partitioning of the operator reads. */
  final case class ByKey(key: StoredKey) extends Placement

  /**
   * With the store: statesnap's records of its states (`$statesnap_snapshots`), kept per store version, not per key.
   * A partition that stays keeps its own; a partition added gets partition 0's, as statesnap's record files are
   * copied ([[Repartition]]).
   */
  case object WithTheStore extends Placement

  /**
   * An operator the new version adds at `id`, with the stores its plan gives (by name, the key and value schemas of
   * each: one, or a join's four), each placed by its whole key: it has no entries yet.
   */
  def added(id: Int, describe: String, stores: Map[String, (StructType, StructType)], meaning: Option[OperatorMeaning],
      sparkName: String): Operator = Operator(id, describe, stores.toSeq.sortBy { case (name, _) => storeIndex(name) }
    .map { case (name, (key, value)) => singleFamily(name, key, value, PartitionKey.WholeKey,
      prefixScan = SparkOperator.named(sparkName) == SparkOperator.SessionWindow) },
    keyless = stores.values.forall(_._1.isEmpty), meaning = meaning, added = Some(sparkName))

  /** A store without column families, placed by its key. */
  private def singleFamily(name: String, key: StructType, value: StructType, partitionKey: PartitionKey,
      prefixScan: Boolean): Store = Store(name, Seq(Family(StatesnapOfflineStore.Family(
    StateStoreId.DEFAULT_STORE_NAME, key, value, if (prefixScan) key.length - 1 else 0, internal = false),
    ByKey(if (!prefixScan) StoredKey.Whole(key, partitionKey) else StoredKey.Split(Some(StructType(key.dropRight(1))),
      StructType(key.takeRight(1)), inFirst = true, Nil)))), columnFamilies = false)

  /**
   * A stateful operator: its stores, and whether it has no key (a global aggregation, a streaming limit), which Spark
   * plans on one partition (AllTuples): its state stays in partition 0 whatever the count; and the change of its key
   * the new version of the query makes, if any (its one store gets every entry under its new key).
   * @param keyChange how its key changes, if it does ([[KeyChangePlan]])
   * @param meaning what the new version's plan says its state means, recorded with a key change's version (an
   *   operator added: with its first version)
   * @param added Spark's name of the operator, where the new version adds it ([[Reshape]]): it has no state yet
   * @param movedTo the id at which the new version computes the operator's state, where that is another
   *   ([[Reshape]]): its stores are read at `id` and written there
   */
  final case class Operator(id: Int, describe: String, stores: Seq[Store], keyless: Boolean,
      keyChange: Option[KeyChange] = None, meaning: Option[OperatorMeaning] = None, added: Option[String] = None,
      movedTo: Option[Int] = None) {
    /** The id whose stores the job writes. */
    def writtenAt: Int = movedTo.getOrElse(id)
    /** Written at an id whose directory is not its own state's: apart, until the batch finishes ([[Reshape]]). */
    def staged: Boolean = added.nonEmpty || movedTo.nonEmpty

    /** The partitions whose stores hold state now, and those that will. */
    def sources(from: Int): Seq[Int] = if (added.nonEmpty) Nil else if (keyless) Seq(0) else 0 until from
    def targets(to: Int): Seq[Int] = if (keyless) Seq(0) else 0 until to
  }

  /**
   * The plan for `checkpoint` (stopped, its latest batch committed) to `to` partitions (None: as many as it has), or
   * a refusal. @param providers the providers the tool moves state from, and what it does, for the refusal
   * @param target the provider the state is moved into (None: the one it is on)
   */
  def apply(checkpoint: StoppedCheckpoint, to: Option[Int], providers: Set[String], does: String,
      target: Option[String]): RepartitionPlan = {
    import checkpoint.refuse
    val batch = checkpoint.latestCommittedBatch
    val confs = checkpoint.pinnedConfs(batch)
    val provider = checkpoint.pinnedProvider(batch)
    val adopt = s"python -m statesnap adopt ${checkpoint.location}"
    val sinkFlag = "(with the sink flag it needs, --file-sink <path> or --no-file-sink)"
    if (!providers(provider)) refuse(LayoutRefusals.provider(batch, provider, does, to match {
      case _ if provider != ProviderClasses.SparkDefault || target.nonEmpty => ""
      case Some(n) => s". Fix: move it to statesnap's provider with its new partitions in one step, $adopt " +
        s"--partitions $n $sinkFlag"
      case None => s". Fix: move it to statesnap's provider first, $adopt $sinkFlag, then run this again"
    }))
    checkpoint.requireRewritableState(batch, avroTransformWithState = false)
    val loadIds = checkpoint.commitStateIds(batch)
    if (loadIds.isDefined && target.contains(ProviderClasses.SparkDefault))
      refuse(LayoutRefusals.uniqueIdsToDefaultProvider(batch, StoppedCheckpoint.CheckpointFormatConf))
    confs.get(StrictDistributionConf).filterNot(_ == "true").orElse(Option.when(!confs.contains(
      StrictDistributionConf))("false"))
      .foreach(strict => refuse(LayoutRefusals.notStrictlyDistributed(batch, StrictDistributionConf, strict)))
    val from = confs.get(StoppedCheckpoint.ShufflePartitionsConf).flatMap(_.toIntOption).getOrElse(
      refuse(LayoutRefusals.noPartitionCount(batch, StoppedCheckpoint.ShufflePartitionsConf)))
    confs.get(InternalPartitionsConf).filterNot(_ == from.toString).foreach(n => refuse(LayoutRefusals
      .twoPartitionCounts(batch, StoppedCheckpoint.ShufflePartitionsConf, from, InternalPartitionsConf, n)))
    val (columnFamilies, others) = checkpoint.operators
    val transforms = checkpoint.transformWithStateOperators
    val joins = columnFamilies.diff(transforms)
    if (provider == ProviderClasses.SparkDefault || target.contains(ProviderClasses.SparkDefault)) {
      if (joins.nonEmpty) refuse(LayoutRefusals.columnFamiliesToDefaultProvider(joins, "a stream-stream join of " +
        "state format 3 (spark.sql.streaming.join.stateFormatVersion=3, pinned)"))
      if (transforms.nonEmpty) refuse(LayoutRefusals.columnFamiliesToDefaultProvider(transforms, "transformWithState"))
    }
    val operators = (joins.map(joinOfColumnFamilies(checkpoint, batch, _, from)) ++
      transforms.map(transformWithState(checkpoint, batch, _, from)) ++
      others.map(operator(checkpoint, batch, _, from))).sortBy(_.id)
    val count = to.getOrElse(from)
    if (count > from) operators.filterNot(_.keyless).foreach(requireAbsent(checkpoint, _, from until count))
    loadIds.foreach(ids => operators.foreach { o =>
      val named = ids.getOrElse(o.id, Nil)
      if (named.size != o.sources(from).size || named.exists(_.size != o.stores.size)) refuse(LayoutRefusals
        .storeVersionsByPartition(batch, named.map(_.size), o.id, o.sources(from).size, o.stores.size))
    })
    RepartitionPlan(batch, from, count, operators, provider, target.getOrElse(provider), loadIds)
  }

  private def operator(checkpoint: StoppedCheckpoint, batch: Long, op: Int, from: Int): Operator = {
    import checkpoint.refuse
    val stateRoot = new Path(checkpoint.root, "state")
    val operatorDir = new Path(stateRoot, op.toString)
    val named = QueryStates.operator(stateRoot.toString, op, checkpoint.hadoopConf)
    val storeNames = checkpoint.namedStores(op, 0)
    val stores = (if (storeNames.isEmpty) Seq(StateStoreId.DEFAULT_STORE_NAME) else storeNames).map { name =>
      val (key, value) = SparkSingleStateSchemaFile.read(StateStoreId(stateRoot.toString, op, 0, name),
        checkpoint.hadoopConf).getOrElse(refuse(LayoutRefusals.noSchemaFile(op, name,
        SparkSingleStateSchemaFile.path(StateStoreId(stateRoot.toString, op, 0, name)))))
      (name, key, value)
    }
    val operator = named.orElse(unnamed(checkpoint, op, stores.map(s => s._1 -> s._2)))
    val describe = operator.fold("no name recorded: placed by its whole key")(_ match {
      case o: SparkOperator.Other => o.name
      case SparkOperator.Aggregation => "streaming aggregation"
      case SparkOperator.ArbitraryState => "(flat)MapGroupsWithState / applyInPandasWithState"
      case SparkOperator.Unknown(name) => name
    })
    val placed = stores.map { case (name, key, value) =>
      val partitionKey = operator.fold[Either[String, PartitionKey]](Right(PartitionKey.WholeKey))(
        PartitionKey.of(_, name)).fold(why => refuse(LayoutRefusals.unplaceable(s"operator $op ($describe)", why)),
        identity)
      singleFamily(name, key, value, partitionKey, prefixScan = operator.contains(SparkOperator.SessionWindow))
    }
    val keyless = operator.contains(SparkOperator.GlobalLimit) ||
      placed.forall(_.layouts.forall(_.keySchema.forall(_.dataType == NullType)))
    requireLayout(checkpoint, op, from, keyless)
    Operator(op, describe, placed, keyless)
  }

  /** Refuses a keyed operator's partitions other than the `from` the query pins (a partition missing, or left). */
  private def requireLayout(checkpoint: StoppedCheckpoint, op: Int, from: Int, keyless: Boolean): Unit = {
    val partitions = checkpoint.partitions(op)
    if (!keyless) {
      (0 until from).diff(partitions).headOption
        .foreach(p => checkpoint.refuse(LayoutRefusals.missingPartition(op, p, from)))
      partitions.filter(_ >= from).headOption.foreach(p => checkpoint.refuse(LayoutRefusals.leftOver(
        new Path(checkpoint.root, s"state/$op/$p"), p)))
    }
  }

  /**
   * A stream-stream join of state format 3: one store whose column families are the four stores of formats 1 and
   * 2, by the same names and key layouts (Spark's v3 schema file), each placed as that store is; the families that
   * count values by key are internal ones (Spark's `SymmetricHashJoinStateManager`, checked on every read:
   * `StatesnapStoreFiles.requireFamilies`); statesnap's records of each family beside, where a store has them
   * ([[records]]).
   */
  private def joinOfColumnFamilies(checkpoint: StoppedCheckpoint, batch: Long, op: Int, from: Int): Operator = {
    val where = s"state/$op (a stream-stream join of state format 3)"
    val families = schemaFileFamilies(checkpoint, batch, op, where).map { f =>
      val partitionKey = PartitionKey.of(SparkOperator.StreamStreamJoin, f.name)
        .fold(why => checkpoint.refuse(LayoutRefusals.unplaceable(s"$where: its column family '${f.name}'", why)),
          identity)
      if (f.prefixFields != 0) checkpoint.refuse(LayoutRefusals.joinFamilyScansByPrefix(where, f.name))
      Family(f.copy(internal = SparkOperator.StreamStreamJoin.keepsCounts(f.name)),
        ByKey(StoredKey.Whole(f.keySchema, partitionKey)))
    }
    if (families.map(_.layout.name).sorted != JoinStores.sorted)
      checkpoint.refuse(LayoutRefusals.notAJoinsFamilies(where, families.map(_.layout.name), JoinStores))
    ofColumnFamilies(checkpoint, op, from, "stream-stream join, state format 3", families)
  }

  /**
   * A transformWithState operator (Spark 4.0+): one store whose column families are its variables and Spark's own
   * for them (timers, TTL indexes, a list's counters, all internal: their names start with `$`), from Spark's v3
   * schema file; each placed by the grouping key it holds ([[TransformWithStateKeys]]); statesnap's records beside,
   * where a store has them ([[records]]).
   */
  private def transformWithState(checkpoint: StoppedCheckpoint, batch: Long, op: Int, from: Int): Operator = {
    val where = s"state/$op (transformWithState)"
    val families = schemaFileFamilies(checkpoint, batch, op, where).filter(_.name != RecordFamily.Name)
      .map(f => f.copy(internal = f.name.startsWith("$")))
    val keys = TransformWithStateKeys.storedKeys(families.map(f => TransformWithStateKeys.Layout(f.name, f.keySchema,
      f.prefixFields, f.rangeOrdinals))).fold(why => checkpoint.refuse(LayoutRefusals.unplaceable(where, why)),
      identity)
    ofColumnFamilies(checkpoint, op, from, TransformWithStateOperator,
      families.map(f => Family(f, ByKey(keys(f.name)))))
  }

  /** The column families Spark's schema file names for the one store of operator `op` in `batch`. */
  private def schemaFileFamilies(checkpoint: StoppedCheckpoint, batch: Long, op: Int,
      where: String): Seq[StatesnapOfflineStore.Family] = StatesnapStoreFiles.schemaFileFamilies(
    StateStoreId(new Path(checkpoint.root, "state").toString, op, 0, StateStoreId.DEFAULT_STORE_NAME), batch,
    checkpoint.hadoopConf, where)

  /** An operator keeping `families` (and statesnap's records) in one store of column families per partition. */
  private def ofColumnFamilies(checkpoint: StoppedCheckpoint, op: Int, from: Int, describe: String,
      families: Seq[Family]): Operator = {
    requireLayout(checkpoint, op, from, keyless = false)
    Operator(op, describe, Seq(Store(StateStoreId.DEFAULT_STORE_NAME, families :+ records, columnFamilies = true)),
      keyless = false)
  }

  /**
   * statesnap's records of a store's states, kept in a family of the store on statesnap's provider, and left there
   * when a query is released to Spark's: moved wherever a store has them, created only where one arrives.
   */
  private val records: Family = Family(StatesnapOfflineStore.Family(RecordFamily.Name, RecordFamily.KeySchema,
    RecordFamily.ValueSchema, 0, internal = true, keptEmpty = false), WithTheStore)

  /**
   * The operator of stores whose name Spark recorded nowhere (Spark 3.5 writes no operator metadata, and the query
   * never ran on statesnap, whose listener records it): a join, by its four stores; None for one store, which every
   * operator Spark has places by its whole key but a session window, whose key ends with its session start: such a
   * key is refused, since a grouping column of that name and type would look the same.
   */
  private def unnamed(checkpoint: StoppedCheckpoint, op: Int,
      stores: Seq[(String, StructType)]): Option[SparkOperator] =
    stores.map(_._1) match {
      case JoinStores => Some(SparkOperator.StreamStreamJoin)
      case Seq(_) if stores.head._2.lastOption.exists(f => f.name == "sessionStartTime" &&
        f.dataType == TimestampType) => checkpoint.refuse(LayoutRefusals.maybeSessionWindow(op))
      case Seq(_) => None
      case names => checkpoint.refuse(LayoutRefusals.unknownStores(op, names))
    }

  /**
   * Refuses where statesnap's records of a partition the job adds exist already (its state directory cannot: see
   * [[operator]]): the job would mix them in.
   */
  private def requireAbsent(checkpoint: StoppedCheckpoint, operator: Operator, added: Seq[Int]): Unit = {
    val records = OperatorRecordFiles.root(new Path(checkpoint.root, "state").toString, operator.id)
    for (p <- added; store <- operator.stores) {
      Seq(OperatorRecordFiles.dir(records, p, store.name), OperatorRecordFiles.legacy(records, p, store.name))
        .find(checkpoint.fs.exists).foreach(f => checkpoint.refuse(LayoutRefusals.leftOver(f, p)))
    }
  }
}
