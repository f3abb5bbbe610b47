package io.statesnap.keys

import io.statesnap.{JoinStateSchemas, SparkClasses}
import io.statesnap.ScalaCompat._
import io.statesnap.snapshot.GroupStateSnapshot
import org.apache.spark.sql.execution.SparkStrategy
import org.apache.spark.sql.catalyst.expressions.Attribute
import org.apache.spark.sql.catalyst.plans.logical.ReturnAnswer
import org.apache.spark.sql.catalyst.types.DataTypeUtils
import org.apache.spark.sql.execution.{SparkPlan, SparkPlanner}
import org.apache.spark.sql.execution.aggregate.BaseAggregateExec
import org.apache.spark.sql.execution.streaming.state.StateStoreId
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types.{LongType, NullType, StructField, StructType}

/**
 * The stateful operators of the query a deploy starts, read from the plan Spark makes of its streaming DataFrame,
 * in the order Spark numbers them: `IncrementalExecution` gives each state store writer the next operator id as it
 * walks the plan top-down, the order in which `collect` visits them. The new version's query is the source of truth
 * for its keys and aggregate functions, so that a key change merges by the query's own functions.
 */
object NewQueryOperators {
  sealed trait NewOperator {
    /** The operator as a user knows it. */
    def describe: String
  }

  /** An operator whose key a deploy may change: its key as its state keeps it, and how values under one key merge. */
  sealed trait Keyed extends NewOperator {
    def key: StructType
    def merge: ValueMerge
    /** Why the values the state has (`value`, Spark's schema file) cannot be kept under the new key, if so. */
    def valueProblem(value: StructType): Option[String]
  }

  /**
   * A streaming aggregation: its grouping key, and the merge of its aggregate functions, whose buffers its state
   * keeps as the value (state format 2; format 1 repeats the key in the value); `filtered`: one of them has a FILTER
   * clause (applied before the state, which its buffer does not say).
   */
  final case class Aggregation(key: StructType, merge: AggregateMerge, stateFormatVersion: Int, filtered: Boolean)
      extends Keyed {
    override def describe: String = s"streaming aggregation by ${key.fieldNames.mkString(", ")} (${merge.describe})"
    override def valueProblem(value: StructType): Option[String] =
      if (stateFormatVersion != 2) Some(s"its state is of format $stateFormatVersion " +
        "(spark.sql.streaming.aggregation.stateFormatVersion), whose value repeats the key: only format 2 changes key")
      else Option.when(value.map(_.dataType) != merge.bufferSchema.map(_.dataType))(s"the new version's aggregates " +
        s"(${merge.describe}) keep buffers ${merge.bufferSchema.toDDL}, and the state has ${value.toDDL}. Fix: " +
        "give the previous version's query too (previous=, --previous-app), so that each aggregate keeps its buffer " +
        "or starts at the deploy")
  }

  /** dropDuplicates (`withinWatermark`: dropDuplicatesWithinWatermark): its columns, and what its value holds. */
  final case class Deduplication(key: StructType, value: StructType, withinWatermark: Boolean) extends Keyed {
    override def describe: String = s"${if (withinWatermark) "dropDuplicatesWithinWatermark" else "dropDuplicates"}" +
      s" by ${key.fieldNames.mkString(", ")}"
    override def merge: ValueMerge = if (withinWatermark) LatestExpiry else KeepOne
    override def valueProblem(old: StructType): Option[String] =
      Option.when(old.map(_.dataType) != value.map(_.dataType))(s"the state's values are ${old.toDDL}, and a " +
        s"${if (withinWatermark) "dropDuplicatesWithinWatermark" else "dropDuplicates"} keeps ${value.toDDL}")
  }

  /**
   * applyInPandasWithState / (flat)MapGroupsWithState: its grouping key, and the merge the user registers for the
   * groups that meet under one new key ([[GroupStateMerge]]; Spark has none: [[NoneMeet]] until one is given).
   */
  final case class GroupState(key: StructType, merge: ValueMerge = NoneMeet) extends Keyed {
    override def describe: String = s"group state by ${key.fieldNames.mkString(", ")}"
    override def valueProblem(value: StructType): Option[String] =
      Option.when(GroupStateSnapshot.unwrap(value).isEmpty)(s"its value ${value.toDDL} is not Spark's group state " +
        "layout")
  }

  /**
   * transformWithState (Scala, or PySpark's in Pandas / Row form): its grouping key, which every column family of its
   * store holds (alone, as a prefix, or after a time: [[io.statesnap.placement.TransformWithStateKeys]]). Its values
   * never change with the key; Spark has no merge of its states, so two old keys may not meet under one new one.
   */
  final case class TransformWithState(key: StructType) extends Keyed {
    override def describe: String = s"transformWithState by ${key.fieldNames.mkString(", ")}"
    override def merge: ValueMerge = NoneMeet
    override def valueProblem(value: StructType): Option[String] = None
  }

  /** Another stateful operator, whose key this tool does not read (a change of it is refused at restart). */
  final case class Other(describe: String) extends NewOperator

  /** A planned state store writer as the operator whose key a deploy may change. */
  def operator(writer: SparkClasses.StateStoreWriter): NewOperator = writer match {
    case save: SparkClasses.StateStoreSaveExec => save.child match {
      case aggregate: BaseAggregateExec => Aggregation(schema(save.keyExpressions),
        AggregateMerge(aggregate.aggregateExpressions.map(_.aggregateFunction)), save.stateFormatVersion,
        aggregate.collect { case a: BaseAggregateExec => a.aggregateExpressions }.flatten.exists(_.filter.isDefined))
      case other => Other(s"streaming aggregation over ${other.nodeName}")
    }
    case dedup: SparkClasses.StreamingDeduplicateExec => Deduplication(schema(dedup.keyExpressions),
      DedupValue, withinWatermark = false)
    case dedup: SparkClasses.StreamingDeduplicateWithinWatermarkExec => Deduplication(schema(dedup.keyExpressions),
      DedupWithinWatermarkValue, withinWatermark = true)
    case groups: SparkClasses.FlatMapGroupsWithStateExec => GroupState(schema(groups.groupingAttributes))
    case groups: SparkClasses.FlatMapGroupsInPandasWithStateExec => GroupState(schema(groups.groupingAttributes))
    // TransformWithStateExec, TransformWithStateInPandasExec (4.0), TransformWithStateInPySparkExec (4.1+): each
    // keeps its grouping attributes under that name, in a class of another package on each minor.
    case tws if tws.nodeName.startsWith("TransformWithState") => TransformWithState(schema(tws.getClass
      .getMethod("groupingAttributes").invoke(tws).asInstanceOf[Seq[Attribute]]))
    case other => Other(other.nodeName)
  }

  /** The state store writers of a planned micro-batch, by operator id. */
  def writers(plan: SparkPlan): Seq[SparkClasses.StateStoreWriter] =
    plan.collect { case writer: SparkClasses.StateStoreWriter => writer }

  /** Spark's name for `writer` (its `shortName`: protected in Scala, public in the bytecode), as its metadata says it. */
  def sparkName(writer: SparkClasses.StateStoreWriter): String =
    classOf[SparkClasses.StateStoreWriter].getMethod("shortName").invoke(writer).asInstanceOf[String]

  /**
   * How many sources the streaming DataFrame `query` reads, as Spark numbers them in its offset log: each streaming
   * relation of its plan once (a DataFrame read twice, as both sides of a union, is one source).
   */
  def sourceCount(query: SparkClasses.Dataset[_]): Int = query.queryExecution.analyzed.collect {
    case relation if relation.nodeName == "StreamingRelation" || relation.nodeName == "StreamingRelationV2" => relation
  }.distinct.size

  /**
   * The streaming DataFrame `query` as Spark plans a micro-batch of it (before its `state` rule gives its stateful
   * operators a checkpoint and versions), under the confs its checkpoint's offset log pins (`pinned`): a restart runs
   * with those (Spark's `OffsetSeqMetadata.setSessionConf`), whatever the session says, and they choose each stateful
   * operator's state format (a join's 3 in the session, its checkpoint's 2).
   */
  def plan(query: SparkClasses.Dataset[_], pinned: Map[String, String]): SparkPlan = {
    require(query.isStreaming, "the new version's query is a streaming DataFrame (spark.readStream...), not a " +
      "batch one")
    // Optimized and planned as Spark plans a micro-batch of it (`IncrementalExecution`'s planner: the streaming
    // strategies first); a streaming Dataset's own physical plan is a batch query's.
    val session = query.sparkSession
    val state = session.sessionState
    val pinnedConf = state.conf.clone()
    pinned.foreach { case (key, value) => pinnedConf.setConfString(key, value) }
    val planner = new SparkPlanner(session, state.experimentalMethods) {
      override def strategies: Seq[SparkStrategy] = Seq(StreamingJoinStrategy, StatefulAggregationStrategy,
        FlatMapGroupsWithStateStrategy, FlatMapGroupsInPandasWithStateStrategy, StreamingRelationStrategy,
        StreamingDeduplicationStrategy) ++ state.planner.strategies
      // The strategies read the planner's conf (a join's state format); the optimizer and the operators, the active.
      override def conf: SQLConf = pinnedConf
    }
    SQLConf.withExistingConf(pinnedConf) {
      planner.plan(ReturnAnswer(state.optimizer.execute(query.queryExecution.analyzed))).next()
    }
  }

  /**
   * The key and value schemas with which a planned operator of a micro-batch opens each of its state stores, by store
   * name, as the operator gives them to its stores: a streaming aggregation's, a dedup's, group state's and a session
   * window's one store, a stream-stream join's four ([[io.statesnap.JoinStateSchemas]], Spark 4.x). None for an
   * operator whose state is column families of one store (transformWithState, a join of state format 3) or that this
   * does not read (a global limit, a join on Spark 3.5): its stores decide alone.
   */
  def storeSchemas(writer: SparkClasses.StateStoreWriter): Option[Map[String, (StructType, StructType)]] = {
    // Spark 4.3 widens the nullability of what an aggregation, a session window or group state keeps, and keeps the
    // schemas it gives its stores on the operator (`stateKeySchema`, `stateValueSchema`): those, where it has them.
    def one(key: => StructType, value: => StructType) = Some(Map(StateStoreId.DEFAULT_STORE_NAME ->
      (kept(writer, "stateKeySchema").getOrElse(key) -> kept(writer, "stateValueSchema").getOrElse(value))))
    def keyOf(attributes: Seq[Attribute]) = DataTypeUtils.fromAttributes(attributes)
    writer match {
      case save: SparkClasses.StateStoreSaveExec =>
        one(keyOf(save.keyExpressions), managerSchema(save, "getStateValueSchema"))
      case dedup: SparkClasses.StreamingDeduplicateExec => one(keyOf(dedup.keyExpressions), DedupValue)
      case dedup: SparkClasses.StreamingDeduplicateWithinWatermarkExec =>
        one(keyOf(dedup.keyExpressions), DedupWithinWatermarkValue)
      case groups: SparkClasses.FlatMapGroupsWithStateExec =>
        one(keyOf(groups.groupingAttributes), managerSchema(groups, "stateSchema"))
      case groups: SparkClasses.FlatMapGroupsInPandasWithStateExec =>
        one(keyOf(groups.groupingAttributes), managerSchema(groups, "stateSchema"))
      // A session window's stores key each session by the grouping key and its start, and keep its aggregated row.
      case session if session.getClass.getSimpleName == "SessionWindowStateStoreSaveExec" =>
        one(managerSchema(session, "getStateKeySchema"), managerSchema(session, "getStateValueSchema"))
      case other => JoinStateSchemas.of(other)
    }
  }

  /** An operator's `stateManager`: public in bytecode, under its own name or Scala's mangled one (a session window's). */
  private def managerOf(operator: AnyRef): AnyRef =
    Iterator.iterate[Class[_]](operator.getClass)(_.getSuperclass).takeWhile(_ != null).flatMap(_.getMethods)
      .find(m => m.getParameterCount == 0 && (m.getName == "stateManager" || m.getName.endsWith("$$stateManager")))
      .getOrElse(throw new NoSuchMethodException(s"${operator.getClass.getName}.stateManager"))
      .invoke(operator)

  /**
   * The schema an operator keeps as `name` for its stores, read by name (private to Spark's operator, or its trait's
   * with Scala's mangled name): Spark 4.3+; None where the operator keeps none.
   */
  private def kept(operator: AnyRef, name: String): Option[StructType] =
    Iterator.iterate[Class[_]](operator.getClass)(_.getSuperclass).takeWhile(_ != null)
      .flatMap(_.getDeclaredMethods).find(m => m.getParameterCount == 0 && m.getReturnType == classOf[StructType] &&
        (m.getName == name || m.getName.endsWith("$$" + name)))
      .map { method =>
        method.setAccessible(true)
        method.invoke(operator).asInstanceOf[StructType]
      }

  /**
   * A schema an operator's `stateManager` gives its stores, read by name: Scala keeps the manager private to Spark's
   * operators (public in bytecode on every minor), and it is the one source of the layout the stores get.
   */
  private def managerSchema(operator: AnyRef, method: String): StructType = {
    val manager = managerOf(operator)
    manager.getClass.getMethod(method).invoke(manager).asInstanceOf[StructType]
  }

  // The values of dedup states as Spark's operators keep them (`schemaForValueRow`, which Scala keeps protected).
  private val DedupValue = StructType(Seq(StructField("__dummy__", NullType)))
  private val DedupWithinWatermarkValue = StructType(Seq(StructField("expiresAtMicros", LongType, nullable = false)))

  private def schema(attributes: Seq[Attribute]): StructType =
    StructType(attributes.map(a => StructField(a.name, a.dataType, a.nullable)))
}
