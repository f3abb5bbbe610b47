package io.statesnap.provider

import io.statesnap.StatesnapException
import io.statesnap.evolution.{AggregateStart, CompatibilityMode}
import io.statesnap.meaning.PlannedOperator
import io.statesnap.keys.RowMerge
import io.statesnap.registration.{MapMerge, QueryRegistrations, StateRegistration}
import io.statesnap.snapshot._
import org.apache.spark.sql.types.StructType

/**
 * The snapshots a state gets from what the application declares now: its schemas, its kind, and what was
 * registered for it in this query ([[QueryRegistrations]], handed to every store of the query run): a
 * declarative [[SnapshotDefinition]] or a [[RowSchemaSnapshot]] subclass. A value with TTL is wrapped in a
 * [[TtlValueSnapshot]] whose nested snapshot is the one above; the state of an arbitrary-state operator, in a
 * [[GroupStateSnapshot]].
 */
private[statesnap] final class DeclaredSnapshots(query: QueryRegistrations) {
  /**
   * The key snapshot of `state`: a map state's key (`struct<key, userKey>`) by the definition registered for it, if
   * any ([[StateRegistration.MapKey]]); every other key as it is (a change of it is refused, or changed offline).
   */
  def keySnapshot(state: String, kind: StateKind, keySchema: StructType): StateSerializerSnapshot =
    StateRegistration.mapKeyOf(query.registrations.states.get(state)) match {
      case Some(json) if kind == StateKind.Map => SnapshotDefinition.parse(state, json).snapshotFor(keySchema)
      case Some(_) => throw StoreErrors.mapKeyOfNoMap(state, kind)
      case None => new RowSchemaSnapshot().configure(keySchema)
    }

  /** What the application declares now for `state`, as the record it gets if store version `version` commits. */
  def record(state: String, kind: StateKind, operator: OperatorKind, keySchema: StructType,
      value: StateSerializerSnapshot, version: Long): StateSnapshotRecord =
    StateSnapshotRecord(state, kind, operator, keySnapshot(state, kind, keySchema), value, version,
      System.currentTimeMillis(), compatibility = value.declaredCompatibility.orElse(queryCompatibility))

  def valueSnapshot(state: String, valueSchema: StructType): StateSerializerSnapshot =
    TtlValueSnapshot.unwrap(valueSchema) match {
      case Some(userValue) => new TtlValueSnapshot(userSnapshot(state, userValue))
      case None => userSnapshot(state, valueSchema)
    }

  /**
   * The value snapshot of an arbitrary-state operator's state, if `valueSchema` is Spark's group-state layout:
   * its user state is registered as [[GroupStateSnapshot.StateField]].
   */
  def groupStateSnapshot(valueSchema: StructType): Option[GroupStateSnapshot] =
    GroupStateSnapshot.unwrap(valueSchema).map { case (state, withTimeout) =>
      new GroupStateSnapshot(userSnapshot(GroupStateSnapshot.StateField, state), withTimeout)
    }

  /**
   * The merge registered for the entries of map state `state` that meet under one new user key, over its values
   * `valueSchema` (as converted), if one is registered.
   * @throws StatesnapException a merge that does not resolve against the values, naming the state and field
   */
  def mapMerge(state: String, valueSchema: StructType): Option[RowMerge] =
    StateRegistration.mapMergeOf(query.registrations.states.get(state)).map(DeclaredSnapshots.mapMerge(state, _,
      valueSchema))

  /**
   * How the aggregates of streaming aggregation `operatorId` start, as the driver read them from the planned query;
   * None where it did not (a store opened outside such a query, a session without statesnap's extension).
   */
  def aggregateStarts(operatorId: Long): Option[Seq[AggregateStart]] = query.aggregateStarts.get(operatorId)

  /** What the planned query says of operator `operatorId`'s state, as the driver decided it. */
  def planned(operatorId: Long): Option[PlannedOperator] = query.planned.get(operatorId)

  /** Whether this query registers a snapshot for `state`. */
  def registers(state: String): Boolean = query.registrations.states.contains(state)

  /**
   * The snapshot of a streaming aggregation's buffers `schema`, as registered for `state` or by default. A rule of
   * the step to the registered version may name an aggregate of the planned query by its alias (`planned`): it means
   * the buffer field of an aggregate that keeps one (`n` for `count(1) AS n`: `count`); the alias of one that keeps
   * several is refused, naming them.
   */
  def aggregationSnapshot(state: String, schema: StructType, planned: Seq[AggregateStart]): StateSerializerSnapshot =
    StateRegistration.valueOf(query.registrations.states.get(state)) match {
      case Some(StateRegistration.Definition(json)) if planned.exists(_.aliases.nonEmpty) =>
        val definition = SnapshotDefinition.parse(state, json)
        def byBuffer(rules: Map[String, String]): Map[String, String] = {
          val meant = rules.toSeq.map { case (field, rule) => AggregateStart.bufferField(field, planned).fold(why =>
            throw StoreErrors.ruleForNoBuffer(state, why), identity) -> (field, rule) }
          meant.groupBy(_._1).collectFirst { case (buffer, named) if named.size > 1 =>
            throw StoreErrors.rulesForOneBuffer(state, named.map(_._2._1), buffer) }
          meant.map { case (buffer, (_, rule)) => buffer -> rule }.toMap
        }
        definition.copy(steps = definition.steps.map {
          case step if step.version == definition.version => step.copy(rules = step.rules.copy(
            defaults = byBuffer(step.rules.defaults), derived = byBuffer(step.rules.derived)))
          case step => step
        }).snapshotFor(schema)
      case _ => userSnapshot(state, schema)
    }

  /**
   * What is registered for `state`: None where nothing is, Some(None) for a snapshot class of the user's, Some(Some(d))
   * for a definition `d` (a `RowSnapshot`'s rules, which statesnap reads).
   */
  def definition(state: String): Option[Option[SnapshotDefinition]] =
    StateRegistration.valueOf(query.registrations.states.get(state)).collect {
      case StateRegistration.Definition(json) => Some(SnapshotDefinition.parse(state, json))
      case _: StateRegistration.SnapshotClass => None
    }

  /** The mode set for every state of this query, if any. */
  def queryCompatibility: Option[CompatibilityMode] = query.registrations.compatibility

  private def userSnapshot(state: String, schema: StructType): StateSerializerSnapshot =
    StateRegistration.valueOf(query.registrations.states.get(state)) match {
      case Some(StateRegistration.SnapshotClass(className)) =>
        DeclaredSnapshots.instantiate(state, className).configure(schema)
      case Some(StateRegistration.Definition(json)) => SnapshotDefinition.parse(state, json).snapshotFor(schema)
      case Some(_: StateRegistration.MapKey) | None => new RowSchemaSnapshot().configure(schema)
    }
}

private[statesnap] object DeclaredSnapshots {
  /** `merge` over the values `valueSchema` of map state `state`, or an error naming them and the fix. */
  def mapMerge(state: String, merge: MapMerge, valueSchema: StructType): RowMerge =
    RowMerge.of(valueSchema, merge.fields, merge.sql, s"map '$state'").fold(why =>
      throw StoreErrors.invalidMapMerge(state, why), identity)

  /** A user's snapshot class for `state`, or an error naming it and what is wrong with it. */
  def instantiate(state: String, className: String): RowSchemaSnapshot =
    SnapshotClasses.instantiate(className, classOf[RowSchemaSnapshot], Thread.currentThread().getContextClassLoader) {
      failure =>
        val why = failure match {
          case SnapshotClasses.NotOnClasspath => "is not on the classpath: add its jar to spark.jars"
          case SnapshotClasses.WrongBase => s"does not extend ${classOf[RowSchemaSnapshot].getName}"
          case SnapshotClasses.NoNullaryConstructor => "has no public no-argument constructor"
          case SnapshotClasses.CannotLoad(why) => s"cannot be loaded: $why"
        }
        StoreErrors.invalidSnapshotClass(className, state, why)
    }
}
